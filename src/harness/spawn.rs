//! Spawning: the one set-up every child gets before exec, plain or traced,
//! the plain child's handle, and short runs to their end.
//!
//! Crash model: each child leads a process group of its own, so that one
//! `SIGKILL` reaches everything it started; it carries the parent-death
//! signal, so that a driver killed itself leaves nothing running; and the
//! driver is the subreaper of what a killed child leaves orphaned.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::capture::Capture;
use super::contain::{Place, bind_over, own_pid};
use super::forkserver::Forked;
use super::reap::{group_alive, reap_group};
use super::setup::prepare;
use super::{Exit, Interrupt, KILL_GRACE, POLL, Reaped};

/// How long a wait on a forked process's end lasts before it looks at the
/// run's interrupt token again.
const INTERRUPT_SLICE: Duration = Duration::from_millis(20);

/// Why a bounded wait ended before the child did: its deadline, or an
/// interrupt of the run. A caller's message must say which, so that a run
/// cut short by Ctrl-C never reports a deadline that did not pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Cut {
    #[error("the deadline passed")]
    Deadline,
    #[error("the run was interrupted")]
    Interrupted,
}

/// The process behind a [`Running`]: a child the driver exec'd (and
/// waits for itself), or one a fork server forked (whose end the server
/// reports).
#[derive(Debug)]
enum Proc {
    Exec(Child),
    Forked(Forked),
}

/// A running child in a process group of its own, exec'd by the driver or
/// forked by a fork server; either way it is confirmed, killed, waited and
/// reaped the same way.
#[derive(Debug)]
pub struct Running {
    proc: Proc,
    pgid: Pid,
    /// Its pid as it sees itself (in the run's pid namespace), read while
    /// it lives: what its ready record names.
    own: u32,
    stderr: Capture,
    exit: Option<Exit>,
    /// True once `kill_and_reap` has dealt with the group, whatever it found.
    reaped: bool,
}

impl Running {
    /// Spawns `cmd` as the leader of a new process group, with stderr to
    /// `stderr` (if given) and the parent-death signal set before exec.
    pub fn spawn(mut cmd: Command, stderr: Option<&Path>) -> std::io::Result<Running> {
        let capture = prepare(&mut cmd, stderr, || Ok(()))?;
        let child = super::contain::spawn(&mut cmd)?;
        let mut running = Running::started(child, None);
        running.stderr = capture;
        Ok(running)
    }

    /// [`Running::spawn`] with the state's folder of `place` laid over the
    /// folder its files were written in, for this child alone
    /// ([`super::contain::bind_over`]); a refusal is the spawn's error.
    pub fn spawn_placed(mut cmd: Command, stderr: Option<&Path>, place: &Place) -> std::io::Result<Running> {
        let name = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
        let (state, at) = (name(&place.state)?, name(&place.at)?);
        let capture = prepare(&mut cmd, stderr, move || bind_over(&state, &at))?;
        let child = super::contain::spawn(&mut cmd)?;
        let mut running = Running::started(child, None);
        running.stderr = capture;
        Ok(running)
    }

    /// A child the driver exec'd ahead of need (a warm process), confirmed
    /// stopped and fresh and just continued; it leads its own group.
    pub(super) fn started(child: Child, stderr: Option<&Path>) -> Running {
        let pgid = Pid::from_raw(child.id() as i32);
        Running {
            proc: Proc::Exec(child),
            pgid,
            own: own_pid(pgid.as_raw() as u32),
            stderr: Capture::of(stderr),
            exit: None,
            reaped: false,
        }
    }

    /// A forked process that the driver confirmed stopped and fresh, and has
    /// just continued; it leads its own group.
    pub(super) fn forked(forked: Forked, stderr: Option<&Path>) -> Running {
        let pgid = forked.pid();
        Running {
            proc: Proc::Forked(forked),
            pgid,
            own: own_pid(pgid.as_raw() as u32),
            stderr: Capture::of(stderr),
            exit: None,
            reaped: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.pgid.as_raw() as u32
    }

    /// The pid the child has in its own namespace: the one it says of
    /// itself (a ready record's), which differs from [`Running::pid`] in
    /// the run's pid namespace.
    pub fn own_pid(&self) -> u32 {
        self.own
    }

    /// The exit, if the child has ended (reaping it, or reading the end its
    /// fork server reported).
    pub fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            self.exit = match &mut self.proc {
                Proc::Exec(child) => child.try_wait().ok().flatten().map(Exit::from_status),
                Proc::Forked(f) => f.try_exit(),
            };
        }
        self.exit
    }

    /// Waits for the end until `until` (a forked process's on the server's
    /// word, without polling), then looks once more.
    fn await_exit(&mut self, until: Instant) -> Option<Exit> {
        if let Proc::Forked(f) = &self.proc
            && self.exit.is_none()
        {
            self.exit = f.wait_exit(until);
        } else {
            std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
        self.try_exit()
    }

    /// True while the child has not ended.
    pub fn is_alive(&mut self) -> bool {
        self.try_exit().is_none()
    }

    /// Sends `SIGKILL` to the child's whole group, and to the child itself in
    /// case it left the group (`setsid`). A group already gone is fine.
    pub fn kill_group(&self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
        // Not yet reaped, so the pid is still the child's.
        if self.exit.is_none() {
            let _ = nix::sys::signal::kill(self.pgid, Signal::SIGKILL);
        }
    }

    /// Stops (`SIGSTOP`) or resumes (`SIGCONT`) the child's whole group, so
    /// that another process can look at the store while the child cannot
    /// move. Used by `child-check`, never by a killed trial.
    pub fn pause_group(&self, paused: bool) {
        let _ = killpg(self.pgid, if paused { Signal::SIGSTOP } else { Signal::SIGCONT });
    }

    /// Waits until the child ends or `deadline` passes, or `interrupt` (the
    /// run's token) is raised; the error says which of the two cut the
    /// wait short.
    pub fn wait_until(&mut self, deadline: Instant, interrupt: &Interrupt) -> Result<Exit, Cut> {
        let mut exit = self.try_exit();
        loop {
            if let Some(exit) = exit {
                return Ok(exit);
            }
            if interrupt.is_set() {
                return Err(Cut::Interrupted);
            }
            if Instant::now() >= deadline {
                return Err(Cut::Deadline);
            }
            exit = self.await_exit(deadline.min(Instant::now() + INTERRUPT_SLICE));
        }
    }

    /// Kills the group and reaps the child: always returns how it ended, and
    /// whether any process of its group was left behind afterwards.
    pub fn kill_and_reap(mut self) -> Reaped {
        self.name_outlived();
        let exit = self.kill_and_wait();
        let leftover = reap_group(self.pgid) || exit == Exit::Unreaped;
        self.reaped = true;
        let reaped = Reaped { exit, leftover, stderr_tail: self.stderr_tail() };
        self.stderr.release();
        reaped
    }

    /// Names every process of the group still alive once the child ended
    /// on its own ([`super::contain::outlived`]): it outlived its operation.
    /// A child killed before its end takes its group with it by design.
    fn name_outlived(&mut self) {
        if let Some(exit) = self.try_exit().filter(|e| ended_itself(*e))
            && group_alive(self.pgid)
        {
            super::contain::outlived(self.pgid, &exit.to_string());
        }
    }

    /// Kills the group and waits for the child, within [`KILL_GRACE`]: a
    /// `SIGKILL` ends a process unless the kernel holds it, and a driver must
    /// not hang on one the kernel holds.
    fn kill_and_wait(&mut self) -> Exit {
        self.kill_group();
        let end = Instant::now() + KILL_GRACE;
        let mut exit = self.try_exit();
        loop {
            if let Some(exit) = exit {
                return exit;
            }
            if Instant::now() >= end {
                return Exit::Unreaped;
            }
            exit = self.await_exit(end);
        }
    }

    /// The last lines of the child's stderr, for a reason line; for a
    /// process whose fork server was lost, why the server ended too.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.quote();
        match (&self.proc, self.exit) {
            (Proc::Forked(f), Some(Exit::ServerLost)) => {
                let why = f.server().ended().unwrap_or_default();
                [tail, format!("fork server: {why}: {}", f.server().stderr_tail())].join(" | ")
            }
            _ => tail,
        }
    }
}

impl Drop for Running {
    /// A child is never left running, whatever path the caller took; and a
    /// child that ended on its own leaves nothing of its group behind either
    /// (a wrapper script's background job, say): what it left is named, as
    /// a process that outlived its operation, then killed.
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        if self.exit.is_none() {
            self.kill_and_wait();
        } else if group_alive(self.pgid) {
            if let Some(exit) = self.exit.filter(|e| ended_itself(*e)) {
                super::contain::outlived(self.pgid, &exit.to_string());
            }
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
        reap_group(self.pgid);
        self.stderr.release();
    }
}

/// Whether a process that ended so ended on its own (an exit or a
/// signal), not with its fork server, whose loss takes the group too.
fn ended_itself(exit: Exit) -> bool {
    matches!(exit, Exit::Code(_) | Exit::Signal(_))
}

/// Runs a short child to completion within `timeout`, capturing stdout.
/// A child that overstays (or is cut short by `interrupt`, the run's
/// token) is killed; the result says which.
pub fn run_to_end(
    cmd: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
    interrupt: &Interrupt,
) -> std::io::Result<(Result<Exit, Cut>, String)> {
    let mut cmd = cmd;
    cmd.stdout(super::disk::checked(stdout, std::fs::File::create(stdout))?);
    let mut running = Running::spawn(cmd, Some(stderr))?;
    let exit = running.wait_until(Instant::now() + timeout, interrupt);
    let tail = running.stderr_tail();
    drop(running);
    Ok((exit, tail))
}

/// Whether this run can lay a state over its folder ([`Place`]), asked once
/// by binding a folder over another for a `sh` that must see its file: the kernel
/// refuses a mount namespace without `CAP_SYS_ADMIN`, and a security module
/// may refuse the mount. `Err` says why, in the harness's words.
pub fn can_place() -> Result<(), String> {
    static ASKED: OnceLock<Result<(), String>> = OnceLock::new();
    ASKED
        .get_or_init(|| probe_place().map_err(|e| format!("a mount namespace with a bind mount was refused: {e}")))
        .clone()
}

fn probe_place() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let (state, at) = (dir.path().join("state"), dir.path().join("at"));
    std::fs::create_dir(&state)?;
    std::fs::create_dir(&at)?;
    std::fs::write(state.join("placed"), "")?;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "test -e \"$0/placed\""]).arg(&at);
    let place = Place { state, at };
    let mut running = Running::spawn_placed(cmd, None, &place)?;
    // Asked once for the whole process, by no run: a `sh` that ends at
    // once, bounded by its own deadline, never by one run's interrupt.
    match running.wait_until(Instant::now() + Duration::from_secs(10), &Interrupt::new()) {
        Ok(Exit::Code(0)) => Ok(()),
        Ok(exit) => Err(std::io::Error::other(format!("the placed folder was not seen ({exit})"))),
        Err(cut) => Err(std::io::Error::other(cut.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_killed_child_is_reaped_as_sigkill_and_leaves_no_group() {
        let mut r = Running::spawn(sh("sleep 30"), None).unwrap();
        assert!(r.is_alive());
        let reaped = r.kill_and_reap();
        assert!(reaped.exit.is_sigkill(), "{}", reaped.exit);
        assert!(!reaped.leftover);
    }

    #[test]
    fn grandchildren_die_with_the_group() {
        let r = Running::spawn(sh("sleep 30 & sleep 30 & wait"), None).unwrap();
        let pgid = r.pgid;
        let reaped = r.kill_and_reap();
        assert!(reaped.exit.is_sigkill());
        // The orphaned sleeps were killed with the group and reaped by us.
        assert!(!reaped.leftover);
        assert!(!group_alive(pgid));
    }

    #[test]
    fn wait_until_honours_its_deadline_and_drop_kills() {
        let mut r = Running::spawn(sh("sleep 30"), None).unwrap();
        let start = Instant::now();
        assert_eq!(r.wait_until(start + Duration::from_millis(50), &Interrupt::new()), Err(Cut::Deadline));
        let pgid = r.pgid;
        drop(r);
        assert!(!group_alive(pgid));
    }

    #[test]
    fn a_child_that_ends_on_its_own_leaves_nothing_of_its_group() {
        let mut r = Running::spawn(sh("sleep 30 & exit 0"), None).unwrap();
        assert_eq!(r.wait_until(Instant::now() + Duration::from_secs(10), &Interrupt::new()), Ok(Exit::Code(0)));
        let pgid = r.pgid;
        assert!(group_alive(pgid), "the background sleep is still in the group");
        drop(r);
        assert!(!group_alive(pgid));
    }

    /// A stderr capture that cannot be written (its folder is gone, as a
    /// full or failing disk refuses it) keeps the child's stderr in memory:
    /// the error still quotes the store's last error line.
    #[test]
    fn a_stderr_that_cannot_be_written_is_still_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let script =
            "echo 'Traceback (most recent call last):' >&2; echo 'OSError: [Errno 28] No space left' >&2; exit 3";
        let (out, err) = (dir.path().join("out"), dir.path().join("gone/err"));
        let (exit, tail) = run_to_end(sh(script), &out, &err, Duration::from_secs(10), &Interrupt::new()).unwrap();
        assert_eq!(exit, Ok(Exit::Code(3)));
        assert!(tail.starts_with("OSError: [Errno 28] No space left"), "{tail}");
    }

    /// A wait given a token raised by hand (no signal) from another thread
    /// ends as interrupted, long before its deadline; a fresh token never
    /// cuts a wait short.
    #[test]
    fn a_wait_whose_token_is_raised_is_cut_short_by_the_interrupt() {
        let mut r = Running::spawn(sh("sleep 30"), None).unwrap();
        let (interrupt, started) = (Interrupt::new(), Instant::now());
        let raiser = interrupt.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            raiser.raise(libc::SIGINT);
        });
        assert_eq!(r.wait_until(started + Duration::from_secs(60), &interrupt), Err(Cut::Interrupted));
        assert!(started.elapsed() < Duration::from_secs(10), "cut short: {:?}", started.elapsed());
        assert!(r.is_alive(), "the wait gives up; the caller kills");
        assert_eq!(r.wait_until(Instant::now() + Duration::from_millis(50), &Interrupt::new()), Err(Cut::Deadline));
    }

    #[test]
    fn an_exit_code_is_read_back() {
        let mut r = Running::spawn(sh("exit 10"), None).unwrap();
        assert_eq!(r.wait_until(Instant::now() + Duration::from_secs(10), &Interrupt::new()), Ok(Exit::Code(10)));
    }
}
