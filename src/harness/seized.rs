//! Tracing a process the driver did not exec traced: a process a fork
//! server forked, or a warm process (exec'd before anyone knew its
//! operation), has no seccomp filter of ours (the server installed none and
//! no exec came after the fork; a warm process must run its imports
//! untraced), so the driver seizes it (`PTRACE_SEIZE`), every thread of it,
//! while it is stopped before its operation, and stops it at every system
//! call (`PTRACE_SYSCALL`), passing over all but the entries the filter
//! would trap: the same calls, with the same flag test on `open`, `openat`
//! and `creat` (the [`super::traps::Traps`] test the caller gives). A
//! [`Traced`] made here is driven, killed and reaped exactly as an exec'd
//! one, so kill points number the same: the Nth trapped call on a target
//! file is point N.
//!
//! Crash model: as for an exec'd traced child, the process is killed while
//! stopped at a call's entry, so the call never runs. The tracer (the thread
//! that seized) waits for its end with `waitpid` as its tracer; a forked
//! process's server, its parent, reaps it after that and reports an exit
//! line nobody needs (a warm process's parent is the driver: the tracer's
//! `waitpid` reaps it).

use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use super::traced::{Held, TraceError, TraceEvent, Traced};
use super::traps::Stops;
use super::{Exit, Interrupt};

/// The threads of process `pid`, itself first.
fn threads(pid: Pid) -> Vec<Pid> {
    let mut tids: Vec<Pid> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| dir.flatten().filter_map(|t| t.file_name().to_str()?.parse().ok()).map(Pid::from_raw).collect())
        .unwrap_or_default();
    tids.sort_by_key(|&t| (t != pid, t.as_raw()));
    if tids.first() != Some(&pid) {
        tids.insert(0, pid);
    }
    tids
}
use super::tracee::{pin_round_robin, share_cpu};

impl Traced {
    /// Seizes `pid`, stopped (every thread of it) and confirmed fresh, and
    /// lets it run to its first trapped call, its watchdog bound by `bound`
    /// (the deadline, the run's interrupt). Every later method must be
    /// called from this thread (ptrace binds a tracee to its tracer thread).
    pub(super) fn seize(
        pid: Pid,
        held: Held,
        stderr: Option<&Path>,
        test: fn(i64, &[u64; 6]) -> bool,
        bound: (Duration, &Interrupt),
    ) -> Result<Traced, TraceError> {
        use nix::sys::ptrace::Options;
        let affinity = pin_round_robin();
        // The process exists already: it takes the tracer's CPU explicitly.
        share_cpu(pid);
        let mut traced = Traced::new(pid, stderr, bound, affinity, Stops::Syscalls(test), Some(held));
        let options = Options::PTRACE_O_TRACESYSGOOD
            | Options::PTRACE_O_EXITKILL
            | Options::PTRACE_O_TRACEFORK
            | Options::PTRACE_O_TRACEVFORK
            | Options::PTRACE_O_TRACECLONE
            | Options::PTRACE_O_TRACEEXEC;
        // Every thread: a runtime that started threads before user code
        // (a warm Node.js process) may make a trapped call from any of them.
        // The process is stopped, so no thread starts meanwhile; one
        // started later is traced by PTRACE_O_TRACECLONE.
        let threads = threads(pid);
        for &tid in &threads {
            match nix::sys::ptrace::seize(tid, options) {
                Ok(()) => {}
                Err(Errno::ESRCH) if tid != pid => {}
                Err(e) => return Err(TraceError::from_errno("PTRACE_SEIZE", e)),
            }
        }
        traced.seen.extend(threads.iter().copied());
        traced.leave_stop(threads.len())?;
        Ok(traced)
    }

    /// Each thread seized in its stop (the process's own `SIGSTOP`) reports
    /// that stop to its tracer first; once all of them have, each is
    /// resumed under `PTRACE_SYSCALL`, which ends the stop without a
    /// `SIGCONT`. None runs before every stop is in, so that no trapped
    /// call is taken for a stop of the seizing.
    fn leave_stop(&mut self, threads: usize) -> Result<(), TraceError> {
        let mut stopped = Vec::with_capacity(threads);
        while stopped.len() < threads {
            if self.wait()?.is_none() {
                let exit = self.exit.map_or_else(|| "unknown".into(), |e| e.to_string());
                return Err(TraceError::Io(format!("the process ended before it was traced ({exit})")));
            }
            if !stopped.contains(&self.current) {
                stopped.push(self.current);
            }
        }
        for tid in stopped {
            self.resume_syscalls(tid, None)?;
        }
        Ok(())
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
