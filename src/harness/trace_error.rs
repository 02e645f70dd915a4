//! Why a traced child could not be started or driven: the harness's error
//! for ptrace and seccomp, told apart from a refusal of the machine (a
//! container's seccomp or yama policy), which skips a syscall result
//! rather than failing it.

use nix::errno::Errno;

/// Why a traced child could not be started or driven.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// ptrace or seccomp is refused here (a container's seccomp or yama
    /// policy); the syscall results are skipped with this reason.
    NotPermitted(String),
    /// The trial's deadline passed; the watchdog killed the group.
    Deadline,
    /// The run was interrupted; the watchdog killed the group.
    Interrupted,
    Io(String),
}

impl TraceError {
    pub(super) fn from_errno(step: &str, e: Errno) -> TraceError {
        match e {
            Errno::EPERM | Errno::EACCES | Errno::ENOSYS => {
                TraceError::NotPermitted(format!("{step} is not permitted here ({e})"))
            }
            e => TraceError::Io(format!("{step}: {e}")),
        }
    }
}
