//! Tracing a forked process: a process a fork server forked has no seccomp
//! filter of ours (the server installed none, and no exec came after the
//! fork), so the driver seizes it (`PTRACE_SEIZE`) while it is stopped
//! before its operation and stops it at every system call
//! (`PTRACE_SYSCALL`), passing over all but the entries the filter would
//! trap: the same calls, with the same flag test on `open`, `openat` and
//! `creat` (the [`super::traced::Traps`] test the caller gives). A [`Traced`] made here is
//! driven, killed and reaped exactly as an exec'd one, so kill points
//! number the same: the Nth trapped call on a target file is point N.
//!
//! Crash model: as for an exec'd traced child, the process is killed while
//! stopped at a call's entry, so the call never runs. The tracer (the thread
//! that seized) waits for its end with `waitpid` as its tracer; the server,
//! its parent, reaps it after that and reports an exit line nobody needs.

use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use super::Exit;
use super::forkserver::Forked;
use super::traced::{Stops, TraceError, TraceEvent, Traced};
use super::tracee::{pin_round_robin, share_cpu};

impl Traced {
    /// Seizes `forked`, stopped and confirmed fresh, and lets it run to its
    /// first trapped call. Every later method must be called from this
    /// thread (ptrace binds a tracee to its tracer thread).
    pub(super) fn seize(
        forked: Forked,
        stderr: Option<&Path>,
        test: fn(i64, &[u64; 6]) -> bool,
        deadline: Duration,
    ) -> Result<Traced, TraceError> {
        use nix::sys::ptrace::Options;
        let pid = forked.pid();
        let affinity = pin_round_robin();
        // The process exists already: it takes the tracer's CPU explicitly.
        share_cpu(pid);
        let mut traced = Traced::new(pid, stderr, deadline, affinity, Stops::Syscalls(test), Some(forked));
        let options = Options::PTRACE_O_TRACESYSGOOD
            | Options::PTRACE_O_EXITKILL
            | Options::PTRACE_O_TRACEFORK
            | Options::PTRACE_O_TRACEVFORK
            | Options::PTRACE_O_TRACECLONE
            | Options::PTRACE_O_TRACEEXEC;
        nix::sys::ptrace::seize(pid, options).map_err(|e| TraceError::from_errno("PTRACE_SEIZE", e))?;
        traced.leave_stop()?;
        Ok(traced)
    }

    /// A process seized in its stop (its own `SIGSTOP`) reports that stop to
    /// its tracer first; it is then resumed under `PTRACE_SYSCALL`, which
    /// ends the stop without a `SIGCONT`.
    fn leave_stop(&mut self) -> Result<(), TraceError> {
        match self.wait()? {
            Some(_) => self.resume_syscalls(self.pid, None),
            None => {
                let exit = self.exit.map_or_else(|| "unknown".into(), |e| e.to_string());
                Err(TraceError::Io(format!("the forked process ended before it was traced ({exit})")))
            }
        }
    }

    /// The next trapped call's entry (or the child's end), passing over
    /// every other stop: syscall exits, entries the filter would not trap,
    /// new tracees' first stops and other events. A signal the process got
    /// on the way is passed on.
    pub(super) fn next_entry(&mut self, test: fn(i64, &[u64; 6]) -> bool) -> Result<TraceEvent, TraceError> {
        loop {
            let Some(status) = self.wait()? else {
                return Ok(TraceEvent::Exited(self.exit.unwrap_or(Exit::Code(-1))));
            };
            let pid = self.current;
            self.seen.insert(pid);
            let signal = match status {
                WaitStatus::PtraceSyscall(_) => match self.trapped_entry(pid, test)? {
                    Some(event) => return Ok(event),
                    None => None,
                },
                // A signal-delivery stop; SIGSTOP included, as a seccomp
                // tracee's is passed on.
                WaitStatus::Stopped(_, sig) => Some(sig),
                // Fork, clone and exec events, new tracees' first stops and
                // group stops: nothing to pass on.
                _ => None,
            };
            self.resume_syscalls(pid, signal)?;
        }
    }

    /// The call `pid` is stopped at, if it is the entry of one the filter
    /// traps.
    fn trapped_entry(&self, pid: Pid, test: fn(i64, &[u64; 6]) -> bool) -> Result<Option<TraceEvent>, TraceError> {
        match nix::sys::ptrace::syscall_info(pid) {
            Ok(info) if info.op == libc::PTRACE_SYSCALL_INFO_ENTRY => {
                // SAFETY: the kernel filled the entry member, as `op` says.
                let entry = unsafe { info.u.entry };
                let nr = entry.nr as i64;
                Ok(test(nr, &entry.args).then_some(TraceEvent::Syscall { nr, args: entry.args }))
            }
            Ok(_) => Ok(None),
            // A kernel before 5.3 does not know the request.
            Err(e @ (Errno::EIO | Errno::EINVAL)) => {
                Err(TraceError::NotPermitted(format!("PTRACE_GET_SYSCALL_INFO is not supported ({e})")))
            }
            // Killed meanwhile: its end is the next wait's.
            Err(Errno::ESRCH) => Ok(None),
            Err(e) => Err(TraceError::from_errno("PTRACE_GET_SYSCALL_INFO", e)),
        }
    }

    /// Resumes `pid` to its next system call stop.
    pub(super) fn resume_syscalls(&self, pid: Pid, signal: Option<Signal>) -> Result<(), TraceError> {
        match nix::sys::ptrace::syscall(pid, signal) {
            // Killed meanwhile: its end is the next wait's.
            Ok(()) | Err(Errno::ESRCH) => Ok(()),
            Err(e) => Err(TraceError::Io(format!("PTRACE_SYSCALL: {e}"))),
        }
    }
}
