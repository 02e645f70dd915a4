//! The fork server's control channel (docs/PROTOCOL.md, "Fork server"): the
//! requests the driver writes on the server's stdin, the lines the server
//! writes on its stdout (one JSON object each), and what the driver keeps of
//! them, shared by every thread that waits on the server: the replies to its
//! requests, the ends of the processes it forked, and its own end.

use std::ffi::OsString;
use std::path::Path;

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;

use super::Exit;

/// The protocol version of the server's first line.
const PROTOCOL: u32 = 2;

/// How long a wait on the server sleeps before it looks at the clock and the
/// interrupt again. Pacing only: the condition variable wakes it sooner.
const SLICE: Duration = Duration::from_millis(20);

/// One line the server writes.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub(super) enum Line {
    ForkServer { protocol: u32, pid: u32 },
    Forked { id: u64, pid: i32 },
    Refused { id: Option<u64>, error: String },
    Exit { pid: i32, code: Option<i32>, signal: Option<i32> },
}

/// One operation to fork, as `CMD ARGS <args>` would run it exec'd.
#[derive(Debug)]
pub(super) struct Request {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: String,
    stdout: Option<String>,
    stderr: Option<String>,
}

impl Request {
    /// `args` run with `env` set, in the driver's folder, with stdout and
    /// stderr to these files (made absolute: the process opens them itself).
    pub(super) fn new(
        args: &[OsString],
        env: &[(&str, &Path)],
        cwd: Option<&Path>,
        stdout: Option<&Path>,
        stderr: Option<&Path>,
    ) -> Result<Request, ForkError> {
        let text = |s: &std::ffi::OsStr, what: &str| {
            s.to_str().map(str::to_string).ok_or_else(|| ForkError::NotUtf8 { what: format!("{what} {s:?}") })
        };
        let path = |p: &Path, what: &str| -> Result<String, ForkError> {
            text(std::path::absolute(p).map_err(ForkError::Cwd)?.as_os_str(), what)
        };
        let argv = args.iter().map(|a| text(a, "argument")).collect::<Result<_, _>>()?;
        let env = env.iter().map(|(k, v)| Ok(((*k).to_string(), path(v, k)?))).collect::<Result<_, ForkError>>()?;
        // The child's folder (`run --cwd`), else the driver's, as an exec'd child has it.
        let cwd = match cwd {
            Some(dir) => path(dir, "the working folder")?,
            None => text(std::env::current_dir().map_err(ForkError::Cwd)?.as_os_str(), "the working folder")?,
        };
        let stdout = stdout.map(|p| path(p, "stdout")).transpose()?;
        let stderr = stderr.map(|p| path(p, "stderr")).transpose()?;
        Ok(Request { argv, env, cwd, stdout, stderr })
    }

    pub(super) fn line(&self, id: u64) -> String {
        let env: serde_json::Map<String, serde_json::Value> =
            self.env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
        let request = serde_json::json!({
            "kind": "run", "id": id, "argv": self.argv, "env": env, "cwd": self.cwd,
            "stdout": self.stdout, "stderr": self.stderr,
        });
        format!("{request}\n")
    }
}

/// What the keeper thread has read, shared with every waiter.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The pid of the server's `fork-server` line, once read.
    pub(super) hello: Option<u32>,
    pub(super) next_id: u64,
    /// Replies to requests not yet collected: a pid, or the refusal.
    pub(super) replies: HashMap<u64, Result<i32, String>>,
    /// Requests whose waiter gave up: a late `forked` is killed at once.
    pub(super) abandoned: HashSet<u64>,
    /// Forked processes whose handle is alive: their `exit` lines are kept.
    pub(super) watched: HashSet<i32>,
    pub(super) exits: HashMap<i32, Exit>,
    /// The server's pid (the driver's), where its forks are looked for.
    pub(super) server: Option<u32>,
    /// The driver's pid of each watched process, by the pid its server
    /// names it with (they differ in the run's pid namespace).
    pub(super) outer: HashMap<i32, i32>,
    /// Why the channel ended, once it did.
    pub(super) ended: Option<String>,
}

impl State {
    /// The exit reported for `pid`, or [`Exit::ServerLost`] once the server
    /// is gone without reporting it.
    pub(super) fn exit_of(&self, pid: Pid) -> Option<Exit> {
        self.exits.get(&pid.as_raw()).copied().or_else(|| self.ended.as_ref().map(|_| Exit::ServerLost))
    }
}

#[derive(Debug, Default)]
pub(super) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A waiter that panicked left the bookkeeping whole: keep going.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits until `ready` gives a value, or `until` passes (`None`).
    pub(super) fn wait_for<T>(&self, until: Instant, mut ready: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let mut st = self.lock();
        loop {
            if let Some(v) = ready(&mut st) {
                return Some(v);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = self.changed.wait_timeout(st, left.min(SLICE)).map_or_else(|p| p.into_inner().0, |(g, _)| g);
        }
    }

    pub(super) fn end(&self, why: String) {
        self.lock().ended.get_or_insert(why);
        self.changed.notify_all();
    }

    /// Takes one line of the server's stdout; `Err` is a protocol violation.
    pub(super) fn take(&self, text: &str) -> Result<(), String> {
        let line: Line = serde_json::from_str(text)
            .map_err(|_| format!("it wrote {}, which is no control line", crate::journal::snippet(text.as_bytes())))?;
        let mut st = self.lock();
        match (st.hello.is_some(), line) {
            (false, Line::ForkServer { protocol: PROTOCOL, pid }) => st.hello = Some(pid),
            (false, Line::ForkServer { protocol, .. }) => {
                return Err(format!("its first line says protocol {protocol}; this driver speaks {PROTOCOL}"));
            }
            (false, _) | (true, Line::ForkServer { .. }) => {
                return Err(format!("it wrote {} out of turn", crate::journal::snippet(text.as_bytes())));
            }
            (true, Line::Forked { id, pid: named }) => {
                let Some(pid) = super::contain::outer_pid(named, st.server) else {
                    return Err(format!(
                        "its `forked` line names process {named}, which is not in the run's namespace"
                    ));
                };
                if st.abandoned.remove(&id) {
                    // Nobody waits for it: it must not stay stopped until the server ends.
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                } else {
                    st.watched.insert(pid);
                    st.outer.insert(named, pid);
                    st.replies.insert(id, Ok(pid));
                }
            }
            (true, Line::Refused { id: Some(id), error }) => {
                if !st.abandoned.remove(&id) {
                    st.replies.insert(id, Err(error));
                }
            }
            (true, Line::Refused { id: None, error }) => {
                return Err(format!("it refused a request it could not read: {error}"));
            }
            (true, Line::Exit { pid: named, code, signal }) => {
                let pid = st.outer.get(&named).copied().unwrap_or(named);
                let exit = match (code, signal) {
                    (Some(c), None) => Exit::Code(c),
                    (None, Some(s)) => Exit::Signal(s),
                    _ => return Err(format!("its exit line for process {pid} needs one of `code` and `signal`")),
                };
                if st.watched.contains(&pid) {
                    st.exits.insert(pid, exit);
                }
            }
        }
        drop(st);
        self.changed.notify_all();
        Ok(())
    }
}

/// Why the fork server could not start, fork or vouch for a process.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error("fork server: `{command} fork-server` could not start: {source}")]
    Start { command: String, source: std::io::Error },
    #[error("fork server: `{command} fork-server` wrote no `fork-server` line within {deadline:?}: {tail}")]
    NoHello { command: String, deadline: Duration, tail: String },
    #[error(
        "fork server: process {pid} runs {threads} threads when it says it is ready; a fork copies only the \
         thread that forks (a lock another one holds stays held in every forked process), so a server must \
         run one thread (docs/PROTOCOL.md §9)"
    )]
    Threads { pid: u32, threads: usize },
    #[error("fork server: it ended: {0}")]
    Ended(String),
    #[error("fork server: no reply to request {id} within {deadline:?}")]
    NoReply { id: u64, deadline: Duration },
    #[error("fork server: it refused request {id}: {why}")]
    Refused { id: u64, why: String },
    #[error("fork server: writing request {id}: {source}")]
    Write { id: u64, source: std::io::Error },
    #[error("fork server: {what} is not UTF-8 and cannot be sent as JSON")]
    NotUtf8 { what: String },
    #[error("fork server: the working folder: {0}")]
    Cwd(std::io::Error),
    #[error("fork server: the run was interrupted")]
    Interrupted,
    #[error(transparent)]
    NotFresh(#[from] super::fresh::NotFresh),
}

impl ForkError {
    /// Whether the server only ran out of time (no line, no reply, a
    /// process that did not stop): on a loaded machine a slow server, not
    /// a broken one, so the run execs rather than ends
    /// ([`super::Launcher::exec_late`]).
    pub fn timed_out(&self) -> bool {
        match self {
            ForkError::NoHello { .. } | ForkError::NoReply { .. } => true,
            ForkError::NotFresh(e) => e.timed_out(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_one_line_with_absolute_paths() {
        let r = Request::new(
            &["append".into(), "--db".into(), "/t/store.db".into()],
            &[("CRASHCELLS_HOME", Path::new("/t/home"))],
            None,
            None,
            Some(Path::new("rel.stderr")),
        )
        .unwrap();
        let line = r.line(4);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["kind"], "run");
        assert_eq!(v["id"], 4);
        assert_eq!(v["argv"][2], "/t/store.db");
        assert_eq!(v["env"]["CRASHCELLS_HOME"], "/t/home");
        assert!(v["stdout"].is_null());
        assert!(v["stderr"].as_str().unwrap().starts_with('/'));
    }

    #[test]
    fn control_lines_are_read_strictly() {
        let shared = Shared::default();
        assert!(shared.take(r#"{"kind":"forked","id":1,"pid":5}"#).unwrap_err().contains("out of turn"));
        assert!(shared.take(r#"{"kind":"fork-server","protocol":3,"pid":5}"#).unwrap_err().contains("protocol 3"));
        shared.take(r#"{"kind":"fork-server","protocol":2,"pid":5}"#).unwrap();
        shared.take(r#"{"kind":"refused","id":2,"error":"no"}"#).unwrap();
        assert_eq!(shared.lock().replies.get(&2), Some(&Err("no".to_string())));
        assert!(shared.take("hello").unwrap_err().contains("no control line"));
        assert!(shared.take(r#"{"kind":"exit","pid":9}"#).unwrap_err().contains("needs one of"));
    }

    #[test]
    fn exit_lines_are_kept_only_for_watched_processes() {
        let shared = Shared::default();
        shared.take(r#"{"kind":"fork-server","protocol":2,"pid":5}"#).unwrap();
        shared.lock().watched.insert(7);
        shared.take(r#"{"kind":"exit","pid":7,"signal":9}"#).unwrap();
        shared.take(r#"{"kind":"exit","pid":8,"code":0}"#).unwrap();
        let st = shared.lock();
        assert_eq!(st.exits.get(&7), Some(&Exit::Signal(9)));
        assert!(!st.exits.contains_key(&8));
    }
}
