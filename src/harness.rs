//! Process control, all of it: spawning children in their own process
//! groups, bounded waits, killing the group, reaping, classifying the exit,
//! and checking that nothing of the group is left.
//!
//! Crash model: the driver delivers a real `SIGKILL` to the child's whole
//! process group. A killed trial is valid only if the child is reaped and its
//! status says it died of `SIGKILL`; an early exit cannot pass for a crash.
//! Every child also carries `PR_SET_PDEATHSIG = SIGKILL`, so a driver that is
//! itself killed leaves nothing running.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How often a bounded wait looks again. Pacing only: every wait ends on its
/// condition or its deadline, never on the passing of this interval.
pub const POLL: Duration = Duration::from_micros(200);

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// The child did not end within [`KILL_GRACE`] of its `SIGKILL` (stuck in
    /// the kernel, say); it may still exist.
    Unreaped,
}

impl Exit {
    fn from_status(s: ExitStatus) -> Exit {
        match (s.code(), s.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        }
    }

    /// True for the only valid end of a killed trial.
    pub fn is_sigkill(self) -> bool {
        self == Exit::Signal(libc::SIGKILL)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => match Signal::try_from(*s) {
                Ok(sig) => write!(f, "signal {}", sig.as_str()),
                Err(_) => write!(f, "signal {s}"),
            },
            Exit::Unreaped => write!(f, "no end within {KILL_GRACE:?} of SIGKILL"),
        }
    }
}

/// The command a child is started with: a program and the arguments that
/// come before the operation (for the reference child, our own binary and
/// `child`).
#[derive(Clone, Debug)]
pub struct ChildCommand {
    pub program: OsString,
    pub prefix: Vec<OsString>,
}

impl ChildCommand {
    /// The reference child: this very binary, re-executed as `crashcells child`.
    pub fn reference() -> std::io::Result<ChildCommand> {
        Ok(ChildCommand { program: std::env::current_exe()?.into(), prefix: vec!["child".into()] })
    }

    /// A child given as one shell-like string, split on whitespace.
    pub fn parse(line: &str) -> Option<ChildCommand> {
        let mut words = line.split_whitespace().map(OsString::from);
        let program = words.next()?;
        Some(ChildCommand { program, prefix: words.collect() })
    }

    /// A `Command` for operation `args`, with `home` as its config home.
    pub fn command(&self, args: &[OsString], home: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix).args(args).env(crashcells_child::config::HOME_ENV, home);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        std::iter::once(&self.program).chain(&self.prefix).map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }
}

/// A running child in a process group of its own.
#[derive(Debug)]
pub struct Running {
    child: Child,
    pgid: Pid,
    stderr: Option<PathBuf>,
    exit: Option<Exit>,
}

impl Running {
    /// Spawns `cmd` as the leader of a new process group, with stderr to
    /// `stderr` (if given) and the parent-death signal set before exec.
    pub fn spawn(mut cmd: Command, stderr: Option<&Path>) -> std::io::Result<Running> {
        static SUBREAPER: std::sync::Once = std::sync::Once::new();
        SUBREAPER.call_once(become_subreaper);
        if let Some(path) = stderr {
            cmd.stderr(std::fs::File::create(path)?);
        }
        cmd.process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: prctl, getppid and _exit are async-signal-safe and touch no
        // memory of the parent.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // A driver that died between the fork and the prctl sent no
                // death signal: the child has been reparented, so it goes.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pgid = Pid::from_raw(child.id() as i32);
        Ok(Running { child, pgid, stderr: stderr.map(Path::to_path_buf), exit: None })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit, if the child has ended (reaping it).
    pub fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten().map(Exit::from_status);
        }
        self.exit
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

    /// Waits until the child ends or `deadline` passes; `None` on the
    /// deadline, or at once when the run is interrupted.
    pub fn wait_until(&mut self, deadline: Instant) -> Option<Exit> {
        loop {
            if let Some(exit) = self.try_exit() {
                return Some(exit);
            }
            if Instant::now() >= deadline || interrupted().is_some() {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Kills the group and reaps the child: always returns how it ended, and
    /// whether any process of its group was left behind afterwards.
    pub fn kill_and_reap(mut self) -> Reaped {
        let exit = self.kill_and_wait();
        let leftover = reap_group(self.pgid) || exit == Exit::Unreaped;
        Reaped { exit, leftover, stderr_tail: self.stderr_tail() }
    }

    /// Kills the group and waits for the child, within [`KILL_GRACE`]: a
    /// `SIGKILL` ends a process unless the kernel holds it, and a driver must
    /// not hang on one the kernel holds.
    fn kill_and_wait(&mut self) -> Exit {
        self.kill_group();
        let end = Instant::now() + KILL_GRACE;
        loop {
            if let Some(exit) = self.try_exit() {
                return exit;
            }
            if Instant::now() >= end {
                return Exit::Unreaped;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The last lines of the child's stderr, for a reason line.
    pub fn stderr_tail(&self) -> String {
        self.stderr.as_deref().map(stderr_tail).unwrap_or_default()
    }
}

impl Drop for Running {
    /// A child is never left running, whatever path the caller took.
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.kill_and_wait();
            reap_group(self.pgid);
        }
    }
}

/// What remains to know after a child was killed and reaped.
#[derive(Clone, Debug)]
pub struct Reaped {
    pub exit: Exit,
    /// True if a process of the child's group still existed after the reap.
    pub leftover: bool,
    pub stderr_tail: String,
}

/// How long a killed group may take to disappear before it counts as a leak.
const GROUP_GRACE: Duration = Duration::from_secs(2);

/// How long a killed child may take to be reaped before the driver gives up
/// on it (and reports it as left over).
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// The signal that interrupted the run (`SIGINT` or `SIGTERM`); 0 while none has.
static INTERRUPT: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));
/// Set by the first interrupting signal, so that a second one ends the driver at once.
static INTERRUPTED_ONCE: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Catches `SIGINT` and `SIGTERM`. The handlers only record the signal:
/// every wait of the harness looks at it and gives up at once, so the run's
/// children are killed and reaped by the ordinary paths, evidence is kept,
/// and the driver writes a partial report. A second signal ends the driver
/// at once with `128 + signal`; its children die with it (parent-death signal).
pub fn catch_interrupts() -> std::io::Result<()> {
    use signal_hook::flag;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // Registered first, so that it looks at the flag before the first
        // signal sets it.
        flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&INTERRUPTED_ONCE))?;
        flag::register(sig, Arc::clone(&INTERRUPTED_ONCE))?;
        flag::register_usize(sig, Arc::clone(&INTERRUPT), sig as usize)?;
    }
    Ok(())
}

/// The signal that interrupted the run, if one did.
pub fn interrupted() -> Option<i32> {
    match INTERRUPT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

/// Makes this process the reaper of its orphaned descendants, so that a
/// killed child's own children are reparented to us and can be reaped here,
/// rather than lingering as zombies under an init that may never reap them.
pub fn become_subreaper() {
    // SAFETY: a plain prctl on the calling process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// Reaps what is left of a killed group and reports whether anything of it
/// survived the grace period.
fn reap_group(pgid: Pid) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let end = Instant::now() + GROUP_GRACE;
    loop {
        while let Ok(status) = waitpid(Pid::from_raw(-pgid.as_raw()), Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        if !group_alive(pgid) {
            return false;
        }
        if Instant::now() >= end {
            return true;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether any process of group `pgid` exists. `kill(-pgid, 0)` answers
/// `ESRCH` once the last one is gone.
pub fn group_alive(pgid: Pid) -> bool {
    !matches!(killpg(pgid, None), Err(Errno::ESRCH))
}

/// The last non-empty lines of a stderr file, joined into one line.
pub fn stderr_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// Runs a short child to completion within `timeout`, capturing stdout.
/// A child that overstays is killed; the result says so.
pub fn run_to_end(
    cmd: Command,
    stdout: &Path,
    stderr: &Path,
    timeout: Duration,
) -> std::io::Result<(Option<Exit>, String)> {
    let mut cmd = cmd;
    cmd.stdout(std::fs::File::create(stdout)?);
    let mut running = Running::spawn(cmd, Some(stderr))?;
    let exit = running.wait_until(Instant::now() + timeout);
    let tail = running.stderr_tail();
    drop(running);
    Ok((exit, tail))
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
        assert_eq!(r.wait_until(start + Duration::from_millis(50)), None);
        let pgid = r.pgid;
        drop(r);
        assert!(!group_alive(pgid));
    }

    #[test]
    fn exits_are_classified() {
        let mut r = Running::spawn(sh("exit 10"), None).unwrap();
        assert_eq!(r.wait_until(Instant::now() + Duration::from_secs(10)), Some(Exit::Code(10)));
        assert!(!Exit::Code(0).is_sigkill());
        assert_eq!(Exit::Signal(9).to_string(), "signal SIGKILL");
    }
}
