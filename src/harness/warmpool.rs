//! The warm pool, the driver's side (docs/PROTOCOL.md §10): for a child
//! that lists `warm-pool` and runs on a runtime that cannot fork (Node.js,
//! Go, the JVM, .NET start threads before user code), processes are exec'd
//! ahead of need as `CMD ARGS warm-pool`; each does its imports, writes one
//! `warm` line, and waits for exactly one request, which the driver sends
//! when an operation needs a process. A process is used once, never again.
//!
//! A keeper thread of its own spawns the processes (the parent-death signal
//! is tied to the thread that spawned a child, so it must outlive them) and
//! reads their `warm` lines; it keeps as many waiting as the pool's size
//! (`--jobs`). An operation takes one ([`WarmPool::take`]), and the
//! launcher writes its request, confirms it fresh and continues or seizes it
//! (`super::launcher`).
//!
//! Crash model: a warm process is a child like any other, exec'd by the
//! driver in a process group of its own with the parent-death signal set:
//! it is killed, reaped and traced as an exec'd child is. One that is not
//! taken by the end of the run is killed and reaped with the pool. A
//! process that breaks the protocol (no line within the deadline, another
//! line, another pid) breaks the pool: every later operation is refused
//! with the one line that says why, never run in a process not vouched for.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;

use super::forkwire::Request;
use super::fresh::NotFresh;
use super::setup::{prepare, stderr_tail};
use super::{ChildCommand, Exit, Interrupt, KILL_GRACE};

pub use crashcells_protocol::WARM_POOL;

/// The protocol version of a warm process's line.
const PROTOCOL: u32 = 2;

/// How long the keeper sleeps between looks at its processes, the clock and
/// the pool's state. Pacing only: a taken process or a line wakes it sooner.
const SLICE: Duration = Duration::from_millis(20);

/// Why the pool could not hand out a process, or a process could not be
/// started as its operation. One line each.
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    /// The pool is broken; the line says by what (a process that could not
    /// start, wrote no line, or wrote another).
    #[error("{0}")]
    Broken(String),
    #[error("warm pool: no warm process within {0:?}")]
    NoProcess(Duration),
    #[error("warm pool: writing the request to process {pid}: {source}")]
    Write { pid: i32, source: std::io::Error },
    #[error("warm pool: {0}")]
    Request(String),
    #[error("warm pool: the run was interrupted")]
    Interrupted,
    #[error(transparent)]
    NotFresh(#[from] NotFresh),
}

impl WarmError {
    /// Whether the pool only ran out of time: no warm process (or no
    /// `warm` line) within the deadline, or a process that did not stop
    /// for its operation in time. A slow pool, not a broken one: the run
    /// execs rather than ends ([`super::Launcher::exec_late`]).
    pub fn timed_out(&self) -> bool {
        match self {
            WarmError::NoProcess(_) => true,
            // The keeper's words for a process whose line did not come in time.
            WarmError::Broken(why) => why.contains(NO_LINE_WITHIN),
            WarmError::NotFresh(e) => e.timed_out(),
            _ => false,
        }
    }
}

/// What the keeper says of a process whose `warm` line did not come within
/// its deadline ([`WarmError::timed_out`] reads it).
const NO_LINE_WITHIN: &str = "wrote no `warm` line within";

/// A warm process's one line.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Line {
    Warm { protocol: u32, pid: i32 },
}

/// A process that wrote its `warm` line and waits for its request. Dropped
/// unused, it is killed and reaped.
#[derive(Debug)]
pub(super) struct Warm {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pid: Pid,
    /// Where its stderr went until its request moved it (the pool's file).
    stderr: PathBuf,
}

impl Warm {
    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    /// Writes its one request, then closes its stdin: a process gets one
    /// request and the end of its input, never a second.
    pub(super) fn send(&mut self, request: &Request, id: u64) -> Result<(), WarmError> {
        let pid = self.pid.as_raw();
        let mut stdin = self.stdin.take().ok_or_else(|| WarmError::Request(format!("process {pid} was used")))?;
        // One short line into an empty pipe: it never blocks.
        stdin.write_all(request.line(id).as_bytes()).map_err(|source| WarmError::Write { pid, source })
    }

    /// Its end, for a process that ended before it stopped, with its stderr.
    pub(super) fn ended(&mut self, stderr: Option<&Path>) -> String {
        let until = Instant::now() + Duration::from_secs(1);
        let exit = loop {
            match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => break Some(Exit::from_status(status)),
                Some(Ok(None)) if Instant::now() < until => std::thread::sleep(super::POLL),
                _ => break None,
            }
        };
        let why = exit.map_or("its end was not seen".into(), |e| format!("it ended by {e}"));
        let tail = [stderr_tail(&self.stderr), stderr.map(stderr_tail).unwrap_or_default()];
        format!("{why}; its stderr: {}", tail.iter().filter(|t| !t.is_empty()).cloned().collect::<Vec<_>>().join(" | "))
    }

    /// Why it is no longer warm, if it ended while it waited in the pool.
    fn ended_waiting(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        let pid = self.pid;
        Some(format!(
            "warm pool: process {pid} ended by {} while it waited for its request; a warm process must wait \
             for one: {}",
            Exit::from_status(status),
            stderr_tail(&self.stderr)
        ))
    }

    /// The driver's handle of the process, once it runs its operation: the
    /// caller waits for it (or traces it) as for any exec'd child.
    pub(super) fn into_child(mut self) -> Child {
        self.child.take().expect("a warm process is handed over once")
    }
}

impl Drop for Warm {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }
}

/// What the keeper and the takers share.
#[derive(Debug, Default)]
struct State {
    /// Processes that wrote their line, oldest first.
    ready: VecDeque<Warm>,
    /// Why the pool is broken, once it is.
    broken: Option<String>,
    closing: bool,
    /// The id of the next request (unique per pool, as §9's are per server).
    next_id: u64,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State>, left: Duration) -> MutexGuard<'a, State> {
        self.changed.wait_timeout(st, left.min(SLICE)).map_or_else(|p| p.into_inner().0, |(g, _)| g)
    }
}

/// A child's warm pool: its keeper thread and the processes it keeps.
pub struct WarmPool {
    shared: Arc<Shared>,
    size: usize,
    command: String,
    /// The folder the operations run in (`run --cwd`); `None`: the driver's.
    cwd: Option<PathBuf>,
    keeper: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WarmPool({}, {} warm)", self.command, self.size)
    }
}

impl WarmPool {
    /// Starts a pool that keeps `size` processes of `child` warm, their
    /// start's stderr appended to `stderr`, each given `deadline` to write
    /// its line; then waits (as long, unless `interrupt` is raised) for the
    /// first, so that a child whose processes never get warm is refused
    /// here, with the line that says why.
    pub fn start(
        child: &ChildCommand,
        stderr: &Path,
        size: usize,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Arc<WarmPool>, WarmError> {
        let command = child.display();
        let shared = Arc::new(Shared::default());
        let keeper = Keeper {
            child: child.clone(),
            stderr: stderr.to_path_buf(),
            size: size.max(1),
            deadline,
            shared: shared.clone(),
            pending: Vec::new(),
        };
        let handle = std::thread::Builder::new()
            .name("warm-pool".into())
            .spawn(move || keeper.run())
            .map_err(|e| WarmError::Broken(format!("warm pool: its keeper thread: {e}")))?;
        let pool = Arc::new(WarmPool {
            shared,
            size: size.max(1),
            command,
            cwd: child.cwd.clone(),
            keeper: Mutex::new(Some(handle)),
        });
        pool.await_first(deadline, interrupt)?;
        Ok(pool)
    }

    fn await_first(&self, deadline: Duration, interrupt: &Interrupt) -> Result<(), WarmError> {
        // The keeper breaks the pool at the first process's deadline; this
        // wait only backs it, a moment longer, so that its words are heard.
        let until = Instant::now() + deadline + Duration::from_secs(1);
        let mut st = self.shared.lock();
        loop {
            if let Some(why) = &st.broken {
                return Err(WarmError::Broken(why.clone()));
            }
            if !st.ready.is_empty() {
                return Ok(());
            }
            if interrupt.is_set() {
                return Err(WarmError::Interrupted);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(WarmError::NoProcess(deadline));
            }
            st = self.shared.wait(st, left);
        }
    }

    /// Why the pool is broken, once it is (its later operations are refused).
    pub fn broken(&self) -> Option<String> {
        self.shared.lock().broken.clone()
    }

    /// How many processes it keeps warm.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The folder its operations run in, if the run names one.
    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// Takes a warm process (the oldest) and a request id for it, waiting
    /// until `until` (or until `interrupt` is raised) for one; the keeper
    /// starts another in its place.
    pub(super) fn take(&self, until: Instant, interrupt: &Interrupt) -> Result<(Warm, u64), WarmError> {
        let began = Instant::now();
        let mut st = self.shared.lock();
        loop {
            if let Some(why) = &st.broken {
                return Err(WarmError::Broken(why.clone()));
            }
            if let Some(mut warm) = st.ready.pop_front() {
                if let Some(why) = warm.ended_waiting() {
                    // A warm process must wait for its request: one that
                    // did not breaks the pool, as a wrong line does.
                    st.broken.get_or_insert(why);
                    continue;
                }
                st.next_id += 1;
                let id = st.next_id;
                drop(st);
                self.shared.changed.notify_all();
                return Ok((warm, id));
            }
            if interrupt.is_set() {
                return Err(WarmError::Interrupted);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(WarmError::NoProcess(began.elapsed()));
            }
            st = self.shared.wait(st, left);
        }
    }
}

impl Drop for WarmPool {
    /// Stops the keeper, which kills and reaps every process not taken.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(keeper) = self.keeper.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = keeper.join();
        }
    }
}

/// A process started but not yet warm: its stdout read until its line.
struct Pending {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    read: Vec<u8>,
    until: Instant,
}

/// The keeper thread's own state: the processes it started that have not
/// written their line yet.
struct Keeper {
    child: ChildCommand,
    stderr: PathBuf,
    size: usize,
    deadline: Duration,
    shared: Arc<Shared>,
    pending: Vec<Pending>,
}

impl Keeper {
    /// Keeps the pool full until it closes or breaks; then kills and reaps
    /// every process nobody took.
    fn run(mut self) {
        if let Err(Some(why)) = self.keep() {
            self.shared.lock().broken.get_or_insert(why);
            self.shared.changed.notify_all();
        }
        for mut p in self.pending.drain(..) {
            kill_and_reap(&mut p.child);
        }
        let unused: Vec<Warm> = self.shared.lock().ready.drain(..).collect();
        drop(unused);
    }

    /// Rounds of topping up, then reading what the pending processes
    /// wrote, until the pool closes (`Err(None)`) or breaks (`Err(why)`).
    fn keep(&mut self) -> Result<std::convert::Infallible, Option<String>> {
        loop {
            let missing = {
                let st = self.shared.lock();
                // Closed, or broken by a taker: no more processes.
                if st.closing || st.broken.is_some() {
                    return Err(None);
                }
                self.size.saturating_sub(st.ready.len() + self.pending.len())
            };
            for _ in 0..missing {
                let started = self
                    .spawn()
                    .map_err(|e| format!("warm pool: `{} warm-pool` could not start: {e}", self.child.display()))?;
                self.pending.push(started);
            }
            if self.pending.is_empty() {
                let st = self.shared.lock();
                if !st.closing && st.ready.len() >= self.size {
                    drop(self.shared.wait(st, SLICE));
                }
                continue;
            }
            self.read_lines().map_err(Some)?;
        }
    }

    fn spawn(&self) -> std::io::Result<Pending> {
        let mut cmd = Command::new(&self.child.program);
        cmd.args(&self.child.prefix).arg(WARM_POOL).stdin(Stdio::piped()).stdout(Stdio::piped());
        cmd.envs(self.child.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.child.cwd {
            cmd.current_dir(dir);
        }
        // Every process appends its start's stderr to the pool's one file.
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.stderr)?;
        cmd.stderr(log);
        prepare(&mut cmd, None, || Ok(()))?;
        let mut child = super::contain::spawn(&mut cmd)?;
        match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => {
                Ok(Pending { child, stdin, stdout, read: Vec::new(), until: Instant::now() + self.deadline })
            }
            _ => {
                kill_and_reap(&mut child);
                Err(std::io::Error::other("its pipes were not made"))
            }
        }
    }

    /// Waits a slice for the pending processes' output; moves each that
    /// wrote its line to the pool.
    fn read_lines(&mut self) -> Result<(), String> {
        let readable = {
            let mut fds: Vec<_> = self
                .pending
                .iter()
                .map(|p| nix::poll::PollFd::new(p.stdout.as_fd(), nix::poll::PollFlags::POLLIN))
                .collect();
            let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(SLICE.as_millis() as u16));
            fds.iter().map(|f| f.revents().is_some_and(|r| !r.is_empty())).collect::<Vec<_>>()
        };
        let mut i = 0;
        for ready in readable {
            match self.advance(i, ready)? {
                Some(warm) => {
                    self.shared.lock().ready.push_back(warm);
                    self.shared.changed.notify_all();
                }
                None => i += 1,
            }
        }
        Ok(())
    }

    /// Reads process `i` if it is readable: `Some` once its line is whole
    /// (it leaves `pending`), `Err` if it broke the protocol or its deadline.
    fn advance(&mut self, i: usize, readable: bool) -> Result<Option<Warm>, String> {
        let command = self.child.display();
        let p = &mut self.pending[i];
        let pid = p.child.id() as i32;
        if readable {
            let mut buf = [0u8; 4096];
            let n = p.stdout.read(&mut buf).unwrap_or(0);
            if n == 0 {
                let exit = p
                    .child
                    .try_wait()
                    .ok()
                    .flatten()
                    .map_or("its stdout closed".into(), |s| format!("it ended by {}", Exit::from_status(s)));
                return Err(format!(
                    "warm pool: process {pid} of `{command} warm-pool` wrote no `warm` line: {exit}: {}",
                    stderr_tail(&self.stderr)
                ));
            }
            p.read.extend_from_slice(&buf[..n]);
        }
        if let Some(end) = p.read.iter().position(|&b| b == b'\n') {
            let text = String::from_utf8_lossy(&p.read[..end]).into_owned();
            check_line(&text, super::contain::own_pid(pid as u32) as i32)
                .map_err(|why| format!("warm pool: process {pid} of `{command} warm-pool` {why}"))?;
            let p = self.pending.remove(i);
            let warm = Warm {
                child: Some(p.child),
                stdin: Some(p.stdin),
                pid: Pid::from_raw(pid),
                stderr: self.stderr.clone(),
            };
            // Its stdout is closed here: nothing more may come on it.
            drop(p.stdout);
            return Ok(Some(warm));
        }
        if Instant::now() >= p.until {
            return Err(format!(
                "warm pool: `{command} warm-pool` {NO_LINE_WITHIN} {:?}: {}",
                self.deadline,
                stderr_tail(&self.stderr)
            ));
        }
        Ok(None)
    }
}

/// A warm line must be the process's own: protocol 2, the pid the driver
/// exec'd (a wrapper must exec its program, not fork it, or the driver
/// would confirm and continue the wrong process).
fn check_line(text: &str, pid: i32) -> Result<(), String> {
    let shown = || crate::journal::snippet(text.as_bytes());
    match serde_json::from_str::<Line>(text) {
        Ok(Line::Warm { protocol: PROTOCOL, pid: said }) if said == pid => Ok(()),
        Ok(Line::Warm { protocol: PROTOCOL, pid: said }) => Err(format!(
            "says it is process {said}: the process the driver started must be the one that waits \
             (a wrapper must exec its program, not fork it)"
        )),
        Ok(Line::Warm { protocol, .. }) => Err(format!("says protocol {protocol}; this driver speaks {PROTOCOL}")),
        Err(_) => Err(format!("wrote {}, which is no `warm` line", shown())),
    }
}

/// Kills a process of the pool that runs no operation, and reaps it.
fn kill_and_reap(child: &mut Child) {
    let pid = Pid::from_raw(child.id() as i32);
    let _ = killpg(pid, Signal::SIGKILL);
    let _ = child.kill();
    let until = Instant::now() + KILL_GRACE;
    while !matches!(child.try_wait(), Ok(Some(_)) | Err(_)) && Instant::now() < until {
        std::thread::sleep(super::POLL);
    }
    super::reap::reap_group(pid);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> ChildCommand {
        // `sh -c SCRIPT sh warm-pool`: the script sees the word as $1.
        ChildCommand {
            program: "sh".into(),
            prefix: vec!["-c".into(), script.into(), "sh".into()],
            cwd: None,
            env: Vec::new(),
        }
    }

    const HONEST: &str =
        r#"[ "$1" = warm-pool ] || exit 9; echo "{\"kind\":\"warm\",\"protocol\":2,\"pid\":$$}"; read line; sleep 30"#;

    #[test]
    fn a_line_is_read_strictly() {
        assert!(check_line(r#"{"kind":"warm","protocol":2,"pid":5}"#, 5).is_ok());
        assert!(check_line(r#"{"kind":"warm","protocol":2,"pid":6}"#, 5).unwrap_err().contains("must exec"));
        assert!(check_line(r#"{"kind":"warm","protocol":3,"pid":5}"#, 5).unwrap_err().contains("protocol 3"));
        assert!(check_line("hello", 5).unwrap_err().contains(r#"wrote "hello", which is no `warm` line"#));
    }

    #[test]
    fn the_pool_keeps_its_size_warm_and_kills_what_nobody_took() {
        let dir = tempfile::tempdir().unwrap();
        let pool = WarmPool::start(
            &sh(HONEST),
            &dir.path().join("warm.stderr"),
            2,
            Duration::from_secs(20),
            &Interrupt::new(),
        )
        .unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        let (first, id) = pool.take(until, &Interrupt::new()).unwrap();
        let (second, next) = pool.take(until, &Interrupt::new()).unwrap();
        assert_ne!(first.pid(), second.pid());
        assert_eq!((id, next), (1, 2));
        // The keeper starts others in their place.
        while pool.shared.lock().ready.len() < 2 {
            assert!(Instant::now() < until, "the pool was not topped up");
            std::thread::sleep(Duration::from_millis(5));
        }
        let waiting: Vec<Pid> = pool.shared.lock().ready.iter().map(Warm::pid).collect();
        let taken = [first.pid(), second.pid()];
        drop((first, second));
        drop(pool);
        for pid in waiting.into_iter().chain(taken) {
            assert!(!super::super::group_alive(pid), "{pid} was left running");
        }
    }

    #[test]
    fn a_process_that_ends_before_its_request_breaks_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        let leaves = r#"echo "{\"kind\":\"warm\",\"protocol\":2,\"pid\":$$}"; echo bye >&2; exit 0"#;
        let pool = WarmPool::start(
            &sh(leaves),
            &dir.path().join("warm.stderr"),
            1,
            Duration::from_secs(20),
            &Interrupt::new(),
        )
        .unwrap();
        // It has ended (a zombie, unreaped) by the time it is taken.
        let pid = pool.shared.lock().ready[0].pid();
        let ended = || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
        while !ended() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = pool.take(Instant::now() + Duration::from_secs(20), &Interrupt::new()).unwrap_err().to_string();
        assert!(e.contains("ended by exit code 0 while it waited for its request"), "{e}");
        assert!(e.ends_with("a warm process must wait for one: bye"), "{e}");
    }

    #[test]
    fn a_process_that_writes_no_line_breaks_the_pool_within_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let began = Instant::now();
        let script = "echo importing >&2; sleep 30";
        let e = WarmPool::start(
            &sh(script),
            &dir.path().join("warm.stderr"),
            1,
            Duration::from_millis(300),
            &Interrupt::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("wrote no `warm` line within 300ms: importing"), "{e}");
        assert!(began.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_process_that_writes_another_line_or_forks_is_refused_by_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("warm.stderr");
        let e = WarmPool::start(&sh("echo hello; sleep 30"), &stderr, 1, Duration::from_secs(20), &Interrupt::new())
            .unwrap_err();
        assert!(e.to_string().contains(r#"wrote "hello", which is no `warm` line"#), "{e}");
        // `sh -c '(...)'`: the line comes from a forked subshell, not the process exec'd.
        let forks = r#"(echo "{\"kind\":\"warm\",\"protocol\":2,\"pid\":$(sh -c 'echo $PPID')}"); sleep 30"#;
        let e = WarmPool::start(&sh(forks), &stderr, 1, Duration::from_secs(20), &Interrupt::new()).unwrap_err();
        assert!(e.to_string().contains("a wrapper must exec its program"), "{e}");
    }
}
