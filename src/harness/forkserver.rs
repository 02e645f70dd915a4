//! The fork server, the driver's side (docs/PROTOCOL.md, "Fork server"): a
//! child that lists `fork-server` is started once as `CMD ARGS fork-server`,
//! does its imports, and forks one process per operation on request, so that
//! a store in an interpreted language pays its start once, not per operation.
//!
//! The control channel is the server's stdin (requests, one JSON line each)
//! and stdout (its `fork-server` line, then `forked`, `refused` and `exit`
//! lines; [`super::forkwire`] reads and keeps them). A keeper thread spawns the server and reads
//! its stdout for as long as it lives; requests are written by whichever
//! thread asks.
//!
//! Crash model: the server is a child like any other (its own process group,
//! the parent-death signal, the driver's subreaper); each forked process
//! leads a group of its own and carries the parent-death signal too, so the
//! chain driver → server → process dies together. The driver is not a
//! forked process's parent: its end comes from the server's `exit` line, or
//! from the tracer's own `waitpid` when it is traced. A server that dies
//! makes every wait on it end with [`Exit::ServerLost`], never hang.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::capture::Capture;
use super::forkwire::{ForkError, Request, Shared};
use super::setup::prepare;
use super::{ChildCommand, Exit, Interrupt, KILL_GRACE, POLL};

/// The word a child lists in its ready record's `operations`, and the
/// argument the server is started with.
pub use crashcells_protocol::FORK_SERVER;

/// A running fork server. Shared (`Arc`) by every handle it forked; the
/// last one to go closes its stdin, and the server exits.
///
/// The server is spawned by a keeper thread of its own, which lives exactly
/// as long as the server: the parent-death signal fires when the *thread*
/// that spawned a child ends, so a server spawned by a short-lived thread
/// would be killed with it.
pub struct ForkServer {
    shared: Arc<Shared>,
    requests: Mutex<Option<ChildStdin>>,
    /// The server's process group (it leads one, as every child does).
    pgid: Pid,
    stderr: Capture,
    command: String,
    /// The folder its forks run in (`run --cwd`); `None`: the driver's.
    cwd: Option<PathBuf>,
    keeper: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for ForkServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ForkServer({} pid {})", self.command, self.pgid)
    }
}

impl ForkServer {
    /// The folder its forks run in, if the run names one.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Starts `child` as a fork server (`CMD ARGS fork-server`), its stderr
    /// to `stderr`, and waits up to `deadline` for its `fork-server` line
    /// (less, if `interrupt` is raised meanwhile).
    pub fn start(
        child: &ChildCommand,
        stderr: &Path,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Arc<ForkServer>, ForkError> {
        let command = child.display();
        let start_error = |source| ForkError::Start { command: command.clone(), source };
        let mut cmd = Command::new(&child.program);
        cmd.args(&child.prefix).arg(FORK_SERVER).stdin(Stdio::piped()).stdout(Stdio::piped());
        // Its forks inherit the libraries it loaded: a leg's SQLite too.
        cmd.envs(child.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &child.cwd {
            cmd.current_dir(dir);
        }
        let capture = prepare(&mut cmd, Some(stderr), || Ok(())).map_err(start_error)?;
        let shared = Arc::new(Shared::default());
        let (tx, rx) = std::sync::mpsc::channel();
        let keeper_shared = shared.clone();
        let keeper = std::thread::Builder::new()
            .name("fork-server".into())
            .spawn(move || keep(cmd, &keeper_shared, &tx))
            .map_err(start_error)?;
        let (pgid, stdin) = match rx.recv() {
            Ok(Ok(spawned)) => spawned,
            Ok(Err(e)) => return Err(start_error(e)),
            Err(_) => return Err(start_error(std::io::Error::other("the keeper thread ended"))),
        };
        let server = ForkServer {
            cwd: child.cwd.clone(),
            shared,
            requests: Mutex::new(Some(stdin)),
            pgid,
            stderr: capture,
            command,
            keeper: Mutex::new(Some(keeper)),
        };
        // The server's own pid, not its line's: in the run's pid namespace
        // the line names the pid the server sees of itself.
        if let Err(e) = server.await_hello(deadline, interrupt).and_then(|_| one_thread(server.pid())) {
            // Not worth the grace a healthy server gets to exit on its own.
            let _ = killpg(server.pgid, Signal::SIGKILL);
            return Err(e);
        }
        Ok(Arc::new(server))
    }

    /// Waits for the `fork-server` line: the pid it names.
    fn await_hello(&self, deadline: Duration, interrupt: &Interrupt) -> Result<u32, ForkError> {
        let until = Instant::now() + deadline;
        let seen = self.shared.wait_for(until, |st| match (&st.hello, &st.ended) {
            (Some(pid), _) => Some(Ok(*pid)),
            (None, Some(why)) => Some(Err(ForkError::Ended(format!("{why}: {}", self.stderr_tail())))),
            (None, None) => interrupt.is_set().then_some(Err(ForkError::Interrupted)),
        });
        seen.unwrap_or_else(|| {
            let tail = self.stderr_tail();
            Err(ForkError::NoHello { command: self.command.clone(), deadline, tail })
        })
    }

    /// The server's process id (its group's).
    pub fn pid(&self) -> u32 {
        self.pgid.as_raw() as u32
    }

    /// The last lines of the server's stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr.quote()
    }

    /// Why the server is gone, if it is.
    pub(super) fn ended(&self) -> Option<String> {
        self.shared.lock().ended.clone()
    }

    /// Asks for one forked process and waits until `until` (or until
    /// `interrupt` is raised) for its pid. The process is watched (its exit
    /// line kept) until the [`Forked`] goes.
    pub(super) fn fork(
        self: &Arc<Self>,
        request: &Request,
        until: Instant,
        interrupt: &Interrupt,
    ) -> Result<Forked, ForkError> {
        let id = {
            let mut st = self.shared.lock();
            if let Some(why) = &st.ended {
                return Err(ForkError::Ended(why.clone()));
            }
            st.next_id += 1;
            st.next_id
        };
        let deadline = until.saturating_duration_since(Instant::now());
        self.send(id, &request.line(id), until)?;
        let reply = self.shared.wait_for(until, |st| match (st.replies.remove(&id), &st.ended) {
            (Some(Ok(pid)), _) => Some(Ok(pid)),
            (Some(Err(why)), _) => Some(Err(ForkError::Refused { id, why })),
            (None, Some(why)) => Some(Err(ForkError::Ended(why.clone()))),
            (None, None) => interrupt.is_set().then_some(Err(ForkError::Interrupted)),
        });
        match reply {
            Some(Ok(pid)) => Ok(Forked::new(self.clone(), Pid::from_raw(pid))),
            Some(Err(ForkError::Interrupted)) | None => Err(self.abandon(id, deadline, interrupt)),
            Some(Err(e)) => Err(e),
        }
    }

    /// Gives up on request `id`: a reply that came meanwhile is killed, a
    /// later one will be. The error says whether `interrupt` or the
    /// deadline gave up.
    fn abandon(&self, id: u64, deadline: Duration, interrupt: &Interrupt) -> ForkError {
        let mut st = self.shared.lock();
        match st.replies.remove(&id) {
            Some(Ok(pid)) => {
                st.watched.remove(&pid);
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            Some(Err(_)) => {}
            None => {
                st.abandoned.insert(id);
            }
        }
        if interrupt.is_set() { ForkError::Interrupted } else { ForkError::NoReply { id, deadline } }
    }

    /// Writes one request line by `until`. The pipe does not block (a server
    /// that stops reading must not hold the driver past its deadline); a
    /// line left half written ends the channel, so the server is killed.
    fn send(&self, id: u64, line: &str, until: Instant) -> Result<(), ForkError> {
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let Some(stdin) = requests.as_mut() else {
            return Err(ForkError::Ended("its stdin is closed".into()));
        };
        write_until(stdin, line.as_bytes(), until).map_err(|source| {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            // A server that exited breaks the pipe before its keeper has
            // reaped it: wait for the keeper to say it ended, so that the
            // launcher sees a server that ended (and starts another).
            match self.shared.wait_for(Instant::now() + KILL_GRACE, |st| st.ended.clone()) {
                Some(why) => ForkError::Ended(why),
                None => ForkError::Write { id, source },
            }
        })
    }

    /// The exit reported for `pid` (or [`Exit::ServerLost`]), if any yet.
    pub(super) fn exit_of(&self, pid: Pid) -> Option<Exit> {
        self.shared.lock().exit_of(pid)
    }

    /// Waits until `until` for the exit of `pid` (or the server's end). A
    /// process `/proc` shows ended (a zombie, or reaped) whose `exit` line
    /// has not come within [`EXIT_LINE`] breaks the server: it is killed,
    /// and its end names the missing line, so that every wait on it ends
    /// now, saying why, rather than at its deadline.
    pub(super) fn wait_exit(&self, pid: Pid, until: Instant) -> Option<Exit> {
        let mut gone_since: Option<Instant> = None;
        self.shared.wait_for(until, |st| {
            if let Some(exit) = st.exit_of(pid) {
                return Some(exit);
            }
            if !ended_in_proc(pid) {
                return None;
            }
            if gone_since.get_or_insert_with(Instant::now).elapsed() < EXIT_LINE {
                return None;
            }
            st.ended.get_or_insert(format!(
                "it wrote no `exit` line for process {pid} within {EXIT_LINE:?} of its end (a server reports \
                 the end of every process it forks: docs/PROTOCOL.md §9, \"Reaping\")"
            ));
            let _ = killpg(self.pgid, Signal::SIGKILL);
            Some(Exit::ServerLost)
        })
    }

    /// Forgets `pid`: its exit line, if one comes, is nobody's.
    pub(super) fn unwatch(&self, pid: Pid) {
        let mut st = self.shared.lock();
        st.watched.remove(&pid.as_raw());
        st.exits.remove(&pid.as_raw());
        st.outer.retain(|_, outer| *outer != pid.as_raw());
    }
}

impl Drop for ForkServer {
    /// Closes the server's stdin (it exits, and anything it forked dies by
    /// its parent-death signal); kills its group if it lingers.
    fn drop(&mut self) {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).take();
        if self.shared.wait_for(Instant::now() + KILL_GRACE, |st| st.ended.as_ref().map(|_| ())).is_none() {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
        if let Some(keeper) = self.keeper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = keeper.join();
        }
    }
}

/// How long after a forked process ended its `exit` line may take to come.
/// A server writes it as soon as `SIGCHLD` wakes it: milliseconds, seconds
/// on a loaded machine; less than [`KILL_GRACE`], so that a kill's wait
/// names a server that never writes it.
const EXIT_LINE: Duration = Duration::from_secs(2);

/// Whether `/proc` shows process `pid` ended: gone (reaped), or a zombie
/// its parent has not reaped. Where `/proc` cannot say, it does not.
fn ended_in_proc(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound && std::path::Path::new("/proc/self/stat").exists(),
    }
}

/// Refuses a server that has more than one thread when it says it is
/// ready: a fork copies only the calling thread, and a lock another thread
/// held stays held for ever in every forked process (docs/PROTOCOL.md §9,
/// "Who should not"). Where `/proc` cannot say (not Linux), nothing is checked.
fn one_thread(pid: u32) -> Result<(), ForkError> {
    match threads(pid) {
        Some(threads) if threads > 1 => Err(ForkError::Threads { pid, threads }),
        _ => Ok(()),
    }
}

/// How many threads process `pid` runs, as `/proc/PID/task` lists them.
fn threads(pid: u32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/task")).ok().map(Iterator::count)
}

/// Writes all of `bytes` to a non-blocking pipe, waiting for room until
/// `until`.
fn write_until(pipe: &mut ChildStdin, mut bytes: &[u8], until: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match pipe.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < until => {
                std::thread::sleep(POLL);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the server read nothing in time"));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The keeper thread: spawns the server (so that the parent-death signal is
/// tied to this thread, which outlives it), reads its control lines until
/// they end, then reaps it.
fn keep(cmd: Command, shared: &Shared, tx: &std::sync::mpsc::Sender<std::io::Result<(Pid, ChildStdin)>>) {
    let (mut child, stdout) = match spawn_server(cmd) {
        Ok((child, stdin, stdout)) => {
            let _ = tx.send(Ok((Pid::from_raw(child.id() as i32), stdin)));
            (child, stdout)
        }
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let pgid = Pid::from_raw(child.id() as i32);
    shared.lock().server = Some(child.id());
    let why = read_lines(stdout, shared);
    if why.is_some() {
        // A server that breaks the protocol is not trusted with another fork.
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    let exit = reap(&mut child, pgid);
    shared.end(match why {
        Some(why) => format!("{why} (then it ended by {exit})"),
        None => format!("it ended by {exit}"),
    });
}

/// The server, its stdin made non-blocking, and its stdout.
fn spawn_server(mut cmd: Command) -> std::io::Result<(Child, ChildStdin, ChildStdout)> {
    let mut child = super::contain::spawn(&mut cmd)?;
    let pipes = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => nonblocking(&stdin).map(|()| (stdin, stdout)),
        _ => Err(std::io::Error::other("the server's pipes were not made")),
    };
    match pipes {
        Ok((stdin, stdout)) => Ok((child, stdin, stdout)),
        Err(e) => {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
            Err(e)
        }
    }
}

fn nonblocking(pipe: &ChildStdin) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = fcntl(pipe, FcntlArg::F_GETFL)?;
    fcntl(pipe, FcntlArg::F_SETFL(OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Reads control lines until the server's stdout ends (`None`) or it
/// breaks the protocol (`Some(why)`).
fn read_lines(stdout: ChildStdout, shared: &Shared) -> Option<String> {
    for line in std::io::BufReader::new(stdout).lines() {
        match line {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => {
                if let Err(why) = shared.take(&text) {
                    return Some(why);
                }
            }
            Err(e) => return Some(format!("its stdout: {e}")),
        }
    }
    None
}

/// Waits for the server's end within [`KILL_GRACE`]; then kills its group
/// and waits as long again.
fn reap(child: &mut Child, pgid: Pid) -> Exit {
    ended_within(child, KILL_GRACE).unwrap_or_else(|| {
        let _ = killpg(pgid, Signal::SIGKILL);
        ended_within(child, KILL_GRACE).unwrap_or(Exit::Unreaped)
    })
}

fn ended_within(child: &mut Child, grace: Duration) -> Option<Exit> {
    let end = Instant::now() + grace;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(Exit::from_status(status));
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

// A process a fork server forked, as the driver holds it: its pid, and
// its end as the server reports it. The server keeps a forked process's
// exit line only while such a handle lives (a `Running` or a `Traced`
// holds it), so that nothing piles up for processes nobody waits for.

/// A process the server forked, watched (its exit line kept) for as long
/// as this handle lives.
#[derive(Debug)]
pub(super) struct Forked {
    server: Arc<ForkServer>,
    pid: Pid,
}

impl Forked {
    pub(super) fn new(server: Arc<ForkServer>, pid: Pid) -> Forked {
        Forked { server, pid }
    }

    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    pub(super) fn server(&self) -> &ForkServer {
        &self.server
    }

    /// Its end, if the server reported it (or is gone: [`Exit::ServerLost`]).
    pub(super) fn try_exit(&self) -> Option<Exit> {
        self.server.exit_of(self.pid)
    }

    /// Waits for its end until `until`.
    pub(super) fn wait_exit(&self, until: Instant) -> Option<Exit> {
        self.server.wait_exit(self.pid, until)
    }

    /// How it ended, for one that ended before it stopped for its operation:
    /// its exit as the server reported it, and the server's stderr.
    pub(super) fn ended(&self) -> String {
        let exit = self.wait_exit(Instant::now() + Duration::from_secs(1));
        let why = exit.map_or("its end was not reported".into(), |e| format!("it ended by {e}"));
        format!("{why}; the server's stderr: {}", self.server().stderr_tail())
    }

    /// Kills a process that will never run its operation; the server reaps it.
    pub(super) fn discard(self) {
        let _ = killpg(self.pid, Signal::SIGKILL);
        let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        self.server.unwatch(self.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> ChildCommand {
        // `sh -c SCRIPT sh fork-server`: the script sees the word as $1.
        ChildCommand {
            program: "sh".into(),
            prefix: vec!["-c".into(), script.into(), "sh".into()],
            cwd: None,
            env: Vec::new(),
        }
    }

    fn start(script: &str, deadline: Duration) -> (Result<Arc<ForkServer>, ForkError>, Duration) {
        let dir = tempfile::tempdir().unwrap();
        let began = Instant::now();
        let started = ForkServer::start(&sh(script), &dir.path().join("server.stderr"), deadline, &Interrupt::new());
        (started, began.elapsed())
    }

    #[test]
    fn a_server_without_its_line_is_an_error_within_the_deadline() {
        let (started, took) = start("echo starting >&2; sleep 30", Duration::from_millis(300));
        let e = started.unwrap_err().to_string();
        assert!(e.contains("wrote no `fork-server` line within 300ms: starting"), "{e}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_server_that_writes_anything_else_is_refused_by_what_it_wrote() {
        let (started, _) = start("echo hello; sleep 30", Duration::from_secs(10));
        let e = started.unwrap_err().to_string();
        assert!(e.contains(r#"it wrote "hello", which is no control line"#), "{e}");
    }

    /// A server with a thread running when it says it is ready is refused:
    /// every fork would copy only the thread that forks.
    #[test]
    fn a_server_with_two_threads_at_ready_is_refused() {
        let py = "import os, sys, threading, time\n\
                  threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n\
                  os.write(1, b'{\"kind\":\"fork-server\",\"protocol\":2,\"pid\":%d}\\n' % os.getpid())\n\
                  sys.stdin.read()\n";
        let dir = tempfile::tempdir().unwrap();
        let child = ChildCommand {
            program: "python3".into(),
            prefix: vec!["-c".into(), py.into()],
            cwd: None,
            env: Vec::new(),
        };
        let e =
            ForkServer::start(&child, &dir.path().join("server.stderr"), Duration::from_secs(30), &Interrupt::new())
                .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("runs 2 threads when it says it is ready"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_server_is_started_with_the_word_and_ends_when_its_stdin_does() {
        let script = r#"[ "$1" = fork-server ] || exit 9; echo "{\"kind\":\"fork-server\",\"protocol\":2,\"pid\":$$}"; cat >/dev/null"#;
        let (started, _) = start(script, Duration::from_secs(10));
        let server = started.unwrap();
        let pgid = server.pgid;
        let shared = server.shared.clone();
        drop(server);
        assert_eq!(shared.lock().ended.as_deref(), Some("it ended by exit code 0"));
        assert!(!super::super::group_alive(pgid));
    }
}
