//! Starting one operation of the child, exec'd, forked or from the warm
//! pool: the seam the pipeline calls. A [`Launcher`] holds the child's
//! command and, for a child that lists `fork-server` (docs/PROTOCOL.md §9),
//! the running server, or for one that lists `warm-pool` (§10), the pool;
//! each method forks through the server or takes a warm process when there
//! is one and execs otherwise, and hands back the same handles
//! ([`Running`], [`Traced`]). Every method that waits is given the run's
//! [`Interrupt`] and gives up once it is raised.
//!
//! Crash model: a forked or warm process is trusted as an exec'd one only
//! once the driver has seen it stopped before its operation, leading its
//! own group and holding no descriptor it could not hold after an exec
//! ([`super::fresh`]); a process that fails this is killed and named.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crashcells_protocol::{HOME_ENV, Ready};
use nix::sys::signal::Signal;

use super::contain::Place;
use super::forkserver::Forked;
use super::forkserver::{FORK_SERVER, ForkServer};
use super::forkwire::ForkError;
use super::forkwire::Request;
use super::fresh::{Expected, Origin, confirm};
use super::served::{RESTARTS, Served};
use super::traced::Held;
use super::traps::Traps;
use super::warmpool::{WARM_POOL, Warm, WarmError, WarmPool};
use super::{ChildCommand, Cut, Exit, Interrupt, Running, TraceError, Traced};

/// One operation to start: what [`ChildCommand::command`] takes, the
/// trial's folder (what a forked process may not hold open), and where its
/// stdout and stderr go (`None`: nowhere).
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    pub args: &'a [OsString],
    pub home: &'a Path,
    pub trial: &'a Path,
    pub stdout: Option<&'a Path>,
    pub stderr: Option<&'a Path>,
}

/// Why an operation could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Exec(#[from] std::io::Error),
    #[error(transparent)]
    Fork(#[from] ForkError),
    #[error(transparent)]
    Warm(#[from] WarmError),
}

impl From<LaunchError> for std::io::Error {
    /// For a caller that reports a start failure as an I/O error; the
    /// message stays the one line.
    fn from(e: LaunchError) -> std::io::Error {
        match e {
            LaunchError::Exec(e) => e,
            LaunchError::Fork(e) => std::io::Error::other(e),
            LaunchError::Warm(e) => std::io::Error::other(e),
        }
    }
}

/// Whether `ready` offers a fork server.
pub fn serves_forks(ready: &Ready) -> bool {
    ready.operations.as_ref().is_some_and(|ops| ops.iter().any(|o| o == FORK_SERVER))
}

/// Whether `ready` offers a warm pool.
pub fn serves_warm(ready: &Ready) -> bool {
    ready.operations.as_ref().is_some_and(|ops| ops.iter().any(|o| o == WARM_POOL))
}

/// How a launcher starts an operation other than by exec.
#[derive(Clone, Debug)]
enum Ahead {
    Server(Arc<Served>),
    Pool(Arc<WarmPool>),
}

/// The child's command, and its fork server or warm pool if it runs one.
/// Cheap to clone and shared across threads: the server or pool is shared
/// (`Arc`), and goes when the last clone (and, for a server, the last
/// handle it forked) goes.
///
/// It dereferences to its [`ChildCommand`], so that a holder of a
/// `ChildCommand` becomes a holder of a `Launcher` without its other uses
/// changing.
#[derive(Clone, Debug)]
pub struct Launcher {
    child: ChildCommand,
    ahead: Option<Ahead>,
    /// Why the fast path the child offers was not taken: it was not ready
    /// in time, and the run execs instead ([`Launcher::exec_late`]).
    late: Option<String>,
}

impl std::ops::Deref for Launcher {
    type Target = ChildCommand;

    fn deref(&self) -> &ChildCommand {
        &self.child
    }
}

impl Launcher {
    /// Every operation exec'd, as without a fork server.
    pub fn exec(child: ChildCommand) -> Launcher {
        Launcher { child, ahead: None, late: None }
    }

    /// Every operation exec'd, because the fast path the child offers (its
    /// fork server, its warm pool) was not ready in time: `why` says so in
    /// the report's `launcher`. Load costs the run its speed, never a
    /// verdict (docs/design/processes.md, "Not ready in time").
    pub fn exec_late(child: ChildCommand, why: String) -> Launcher {
        Launcher { child, ahead: None, late: Some(why) }
    }

    /// Why the run execs although the child offers a fast path; `None` when
    /// it took the fast path, or offers none.
    pub fn late(&self) -> Option<&str> {
        self.late.as_deref()
    }

    /// Starts `child`'s fork server (stderr to `stderr`, its line within
    /// `deadline`); every operation is then forked by it. The server runs
    /// for as long as this launcher, a clone of it or a handle it forked; a
    /// server that ends is started again once, then operations are exec'd
    /// ([`Launcher::notes`] says so). The wait for its line gives up once
    /// `interrupt` is raised.
    pub fn with_fork_server(
        child: ChildCommand,
        stderr: &Path,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Launcher, ForkError> {
        let served = Served::start(&child, stderr, deadline, interrupt)?;
        Ok(Launcher { child, ahead: Some(Ahead::Server(Arc::new(served))), late: None })
    }

    /// What happened to the fork server during the run (an end, a
    /// restart, the fall-back to exec), in order; empty for a launcher
    /// whose server served every operation, or that has none.
    pub fn notes(&self) -> Vec<String> {
        match &self.ahead {
            Some(Ahead::Server(s)) => s.notes(),
            _ => vec![],
        }
    }

    /// How many times the fast path has fallen over so far: the fork
    /// servers that ended, or 1 once the warm pool broke; 0 for a launcher
    /// that execs. Work that ran while this grew may have been cut short by
    /// the fall, not by the store: the pipeline retries it exec'd.
    pub fn falls(&self) -> usize {
        match &self.ahead {
            Some(Ahead::Server(s)) => s.ends(),
            Some(Ahead::Pool(p)) => usize::from(p.broken().is_some()),
            None => 0,
        }
    }

    /// Why its fork server was retired for not answering a request in
    /// time, if it was: every operation since is exec'd.
    pub fn retired(&self) -> Option<String> {
        match &self.ahead {
            Some(Ahead::Server(s)) => s.retired(),
            _ => None,
        }
    }

    /// What its last fall was, in the words of the report's `launcher`: a
    /// server's end (its pid, when, why) or why the pool broke; `None`
    /// while it never fell.
    pub fn last_fall(&self) -> Option<String> {
        match &self.ahead {
            Some(Ahead::Server(s)) => s.last_end(),
            Some(Ahead::Pool(p)) => p.broken(),
            None => None,
        }
    }

    /// Starts `child`'s warm pool of `size` processes (their start's stderr
    /// to `stderr`, each's line within `deadline`, the first awaited unless
    /// `interrupt` is raised); every operation then runs in a warm process
    /// of its own.
    pub fn with_warm_pool(
        child: ChildCommand,
        stderr: &Path,
        size: usize,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Launcher, WarmError> {
        let pool = WarmPool::start(&child, stderr, size, deadline, interrupt)?;
        Ok(Launcher { child, ahead: Some(Ahead::Pool(pool)), late: None })
    }

    /// How operations start, in a report's words: `exec`, `fork server`,
    /// or `warm pool of N`.
    pub fn launcher(&self) -> String {
        match &self.ahead {
            None => "exec".into(),
            Some(Ahead::Server(_)) => "fork server".into(),
            Some(Ahead::Pool(p)) => format!("warm pool of {}", p.size()),
        }
    }

    /// The fork server's pid, if operations are forked (none once a run
    /// whose server ended twice execs them).
    pub fn server_pid(&self) -> Option<u32> {
        match &self.ahead {
            Some(Ahead::Server(s)) => s.pid(),
            _ => None,
        }
    }

    /// The warm pool's size, if operations run in warm processes.
    pub fn warm_pool(&self) -> Option<usize> {
        match &self.ahead {
            Some(Ahead::Pool(p)) => Some(p.size()),
            _ => None,
        }
    }

    /// Starts the operation, in a process group of its own; a forked one is
    /// confirmed fresh first, within `deadline` (less, once `interrupt` is
    /// raised).
    pub fn spawn(&self, op: &Launch, deadline: Duration, interrupt: &Interrupt) -> Result<Running, LaunchError> {
        match &self.ahead {
            None => self.spawn_execd(op),
            Some(Ahead::Server(served)) => match fork_served(served, op, (deadline, interrupt))? {
                Some(forked) => {
                    // Built while still stopped: its pid in the run's namespace
                    // is read from /proc, which a fast op's end would empty.
                    let pid = forked.pid();
                    let running = Running::forked(forked, op.stderr);
                    let _ = nix::sys::signal::kill(pid, Signal::SIGCONT);
                    Ok(running)
                }
                None => self.spawn_execd(op),
            },
            Some(Ahead::Pool(pool)) => {
                let warm = take_warm(pool, op, (deadline, interrupt))?;
                let pid = warm.pid();
                let running = Running::started(warm.into_child(), op.stderr);
                let _ = nix::sys::signal::kill(pid, Signal::SIGCONT);
                Ok(running)
            }
        }
    }

    /// Runs a short operation to its end within `timeout`, as
    /// [`super::run_to_end`] does: a child that overstays (or is cut short
    /// by `interrupt`) is killed, and the result says which.
    pub fn run_to_end(
        &self,
        op: &Launch,
        timeout: Duration,
        interrupt: &Interrupt,
    ) -> Result<(Result<Exit, Cut>, String), LaunchError> {
        let (start, falls) = (Instant::now(), self.falls());
        let mut running = self.spawn(op, timeout, interrupt)?;
        // A server that did not answer cost this wait already, and the
        // operation was exec'd after it: it gets its own timeout.
        let start = if self.falls() > falls { Instant::now() } else { start };
        let exit = running.wait_until(start + timeout, interrupt);
        let tail = running.stderr_tail();
        drop(running);
        Ok((exit, tail))
    }

    /// [`Launcher::run_to_end`] with a crash state laid over the folder its
    /// files were written in ([`Place`]): always exec'd, since a forked or
    /// warm process lives in its server's mount namespace, where the state
    /// cannot be laid for it alone.
    pub fn run_placed(
        &self,
        op: &Launch,
        place: &Place,
        timeout: Duration,
        interrupt: &Interrupt,
    ) -> Result<(Result<Exit, Cut>, String), LaunchError> {
        let start = Instant::now();
        let mut cmd = self.child.command(op.args, op.home);
        if let Some(path) = op.stdout {
            cmd.stdout(std::fs::File::create(path)?);
        }
        let mut running = Running::spawn_placed(cmd, op.stderr, place)?;
        let exit = running.wait_until(start + timeout, interrupt);
        let tail = running.stderr_tail();
        drop(running);
        Ok((exit, tail))
    }

    /// Starts the operation traced, stopped at the entry of each call the
    /// seccomp filter of `traps` traps (a forked process at the same calls, by
    /// `PTRACE_SYSCALL`). As for [`Traced::spawn`], every later call on the
    /// handle must come from this thread. Its watchdog kills it at
    /// `deadline`, or once `interrupt` is raised.
    pub fn spawn_traced(
        &self,
        op: &Launch,
        traps: Traps,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Traced, TraceError> {
        let bound = (deadline, interrupt);
        match &self.ahead {
            None => self.exec_traced(op, traps, bound),
            Some(Ahead::Server(served)) => match fork_served(served, op, bound) {
                Ok(Some(forked)) => Traced::seize(forked.pid(), Held::Forked(forked), op.stderr, traps.test, bound),
                Ok(None) => self.exec_traced(op, traps, bound),
                Err(e) => Err(TraceError::Io(e.to_string())),
            },
            Some(Ahead::Pool(pool)) => {
                let warm = take_warm(pool, op, bound).map_err(|e| TraceError::Io(e.to_string()))?;
                // Seized while stopped, before its operation's first call.
                Traced::seize(warm.pid(), Held::Warm(warm.into_child()), op.stderr, traps.test, bound)
            }
        }
    }
}

impl Launcher {
    /// The operation exec'd: what every operation is without a server.
    fn spawn_execd(&self, op: &Launch) -> Result<Running, LaunchError> {
        let mut cmd = self.child.command(op.args, op.home);
        if let Some(path) = op.stdout {
            cmd.stdout(super::disk::checked(path, std::fs::File::create(path))?);
        }
        Ok(Running::spawn(cmd, op.stderr)?)
    }

    /// The operation exec'd under the seccomp filter of `traps`.
    fn exec_traced(
        &self,
        op: &Launch,
        traps: Traps,
        (deadline, interrupt): (Duration, &Interrupt),
    ) -> Result<Traced, TraceError> {
        let mut cmd = self.child.command(op.args, op.home);
        if let Some(path) = op.stdout {
            let file = super::disk::checked(path, std::fs::File::create(path))
                .map_err(|e| TraceError::Io(format!("child stdout: {e}")))?;
            cmd.stdout(file);
        }
        Traced::spawn(cmd, op.stderr, traps.filter, deadline, interrupt)
    }
}

/// Forks the operation through the run's server; a server that has ended
/// (or ends while it is asked) is replaced once, after which `None`: exec.
/// Every wait is bounded by `(deadline, interrupt)`.
fn fork_served(
    served: &Served,
    op: &Launch,
    (deadline, interrupt): (Duration, &Interrupt),
) -> Result<Option<Forked>, ForkError> {
    // One try per server the run may have, and one to find there is none left.
    for _ in 0..RESTARTS + 2 {
        let Some(server) = served.server(interrupt) else { return Ok(None) };
        match fork(&server, op, (deadline, interrupt)) {
            Err(ForkError::Ended(_)) => {}
            // A server that did not answer in time (stuck, or starved on a
            // loaded runner) costs the run its speed, never a result: this
            // operation and every later one are exec'd, and the run says so.
            Err(e) if e.timed_out() && !interrupt.is_set() => {
                served.retire(&server, &e);
                return Ok(None);
            }
            other => return other.map(Some),
        }
    }
    Ok(None)
}

/// What the driver asks a forked or warm process's streams to be.
fn expected(op: &Launch) -> Expected {
    Expected {
        trial: op.trial.to_path_buf(),
        stdout: op.stdout.map(Path::to_path_buf),
        stderr: op.stderr.map(Path::to_path_buf),
    }
}

/// Takes a warm process, sends it the operation and confirms it stopped
/// and fresh; a process that is not is killed (dropped).
fn take_warm(
    pool: &Arc<WarmPool>,
    op: &Launch,
    (deadline, interrupt): (Duration, &Interrupt),
) -> Result<Warm, WarmError> {
    let until = Instant::now() + deadline;
    let request = Request::new(op.args, &[(HOME_ENV, op.home)], pool.cwd(), op.stdout, op.stderr)
        .map_err(|e| WarmError::Request(e.to_string().trim_start_matches("fork server: ").to_string()))?;
    let (mut warm, id) = pool.take(until, interrupt)?;
    warm.send(&request, id)?;
    let mut ended = String::new();
    let fresh = confirm(warm.pid(), Origin::Warm, &expected(op), (until, deadline), interrupt, || {
        ended = warm.ended(op.stderr);
        ended.clone()
    });
    fresh.map(|()| warm).map_err(WarmError::from)
}

/// Forks the operation and confirms the process stopped and fresh; a
/// process that is not is killed.
fn fork(
    server: &Arc<ForkServer>,
    op: &Launch,
    (deadline, interrupt): (Duration, &Interrupt),
) -> Result<Forked, ForkError> {
    let until = Instant::now() + deadline;
    let request = Request::new(op.args, &[(HOME_ENV, op.home)], server.cwd(), op.stdout, op.stderr)?;
    let forked = server.fork(&request, until, interrupt)?;
    match confirm(forked.pid(), Origin::Fork, &expected(op), (until, deadline), interrupt, || forked.ended()) {
        Ok(()) => Ok(forked),
        Err(e) => {
            forked.discard();
            Err(e.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(operations: Option<&[&str]>) -> Ready {
        let ops =
            operations.map_or(String::new(), |o| format!(r#","operations":{}"#, serde_json::to_string(o).unwrap()));
        let line = format!(
            r#"{{"protocol":2,"pid":1,"op":"append","sqlite_version":"3.45.0","journal_mode":"wal","resolver":null{ops}}}"#
        );
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn only_a_child_that_lists_it_serves_forks() {
        assert!(serves_forks(&ready(Some(&["append", "dump", "fork-server"]))));
        assert!(!serves_forks(&ready(Some(&["append", "dump", "dump-batch"]))));
        assert!(!serves_forks(&ready(None)));
    }

    /// Without a server, the launcher is the exec'd child as before: its
    /// stdout to the file asked, its exit read back.
    #[test]
    fn without_a_server_an_operation_is_execd() {
        let dir = tempfile::tempdir().unwrap();
        let child = ChildCommand {
            program: "sh".into(),
            prefix: vec!["-c".into(), "echo \"$0 $1\"; exit 4".into()],
            cwd: None,
            env: Vec::new(),
        };
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let args = ["op".into(), "--flag".into()];
        let launch =
            Launch { args: &args, home: dir.path(), trial: dir.path(), stdout: Some(&out), stderr: Some(&err) };
        let launcher = Launcher::exec(child);
        assert_eq!(launcher.server_pid(), None);
        let (exit, _) = launcher.run_to_end(&launch, Duration::from_secs(10), &Interrupt::new()).unwrap();
        assert_eq!(exit, Ok(Exit::Code(4)));
        assert_eq!(std::fs::read_to_string(out).unwrap(), "op --flag\n");
    }
}
