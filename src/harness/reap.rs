//! Killing a group, reaping it and classifying how a child ended.
//!
//! Crash model: `SIGKILL` is the only valid end of a killed child; anything
//! else (an exit, another signal, a child the kernel will not let go of) is
//! named, and a process of the group that outlives the reap is a leak.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::POLL;
use super::contain::children_of;

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// The child did not end within [`KILL_GRACE`] of its `SIGKILL` (stuck in
    /// the kernel, say); it may still exist.
    Unreaped,
    /// A forked process whose fork server ended before it reported the
    /// process's end (the process died by its parent-death signal, or is
    /// about to): never a valid kill, whatever signal it got.
    ServerLost,
}

impl Exit {
    pub(super) fn from_status(s: ExitStatus) -> Exit {
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
            Exit::ServerLost => write!(f, "the loss of its fork server"),
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

impl Reaped {
    /// A killed trial is valid only if the child died of the `SIGKILL` and
    /// nothing of its group outlived the reap; otherwise, why not.
    pub fn check(&self) -> Result<(), ReapError> {
        if !self.exit.is_sigkill() {
            return Err(ReapError::NotKilled { exit: self.exit, stderr_tail: self.stderr_tail.clone() });
        }
        if self.leftover {
            return Err(ReapError::Leftover);
        }
        Ok(())
    }
}

/// Why a killed child does not make a valid crash.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReapError {
    /// It ended some other way first (an early exit, another signal), or
    /// the kernel held it past the grace period.
    #[error("child ended by {exit} instead of SIGKILL: {stderr_tail}")]
    NotKilled { exit: Exit, stderr_tail: String },
    #[error("a process of the child's group was left after the reap")]
    Leftover,
}

/// How long a killed group may take to disappear before it counts as a leak.
const GROUP_GRACE: Duration = Duration::from_secs(2);

/// How long a killed child may take to be reaped before the driver gives up
/// on it (and reports it as left over).
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// Reaps what is left of a killed group and reports whether anything of it
/// survived the grace period.
pub(super) fn reap_group(pgid: Pid) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let end = Instant::now() + GROUP_GRACE;
    loop {
        while let Ok(status) = waitpid(Pid::from_raw(-pgid.as_raw()), Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        if !group_alive(pgid) {
            super::contain::sweep();
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

/// Kills and reaps every child the driver still has as it exits, within
/// `grace`; returns how many it reaped. The driver is the subreaper of what
/// its children leave (see [`super::contain`]), so a process a
/// fork server forked becomes the driver's once the server is reaped, and a
/// killed one may still be dying when the run's own paths are done with it
/// (on a loaded machine, for a while). Reaping them here is what makes
/// "nothing is left running" hold once the driver has exited, interrupted
/// or not. Called once, after every thread that waits on a child is done:
/// `waitpid(-1)` takes any child's status.
pub fn reap_leftovers(grace: Duration) -> usize {
    use nix::sys::signal::kill;
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let end = Instant::now() + grace;
    let mut reaped = 0;
    loop {
        for pid in children_of(std::process::id()) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if Instant::now() < end => std::thread::sleep(POLL),
            Ok(WaitStatus::StillAlive) => return reaped,
            Ok(_) => reaped += 1,
            Err(Errno::EINTR) => {}
            Err(_) => return reaped, // ECHILD: none is left
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_classified_and_only_sigkill_is_a_crash() {
        assert!(!Exit::Code(0).is_sigkill());
        assert!(Exit::Signal(libc::SIGKILL).is_sigkill());
        assert_eq!(Exit::Signal(9).to_string(), "signal SIGKILL");
        let reaped = Reaped { exit: Exit::Code(3), leftover: false, stderr_tail: "boom".into() };
        assert_eq!(reaped.check().unwrap_err().to_string(), "child ended by exit code 3 instead of SIGKILL: boom");
        let leak = Reaped { exit: Exit::Signal(libc::SIGKILL), leftover: true, stderr_tail: String::new() };
        assert_eq!(leak.check(), Err(ReapError::Leftover));
    }
}
