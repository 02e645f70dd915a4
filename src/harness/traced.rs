//! Traced children: a child under ptrace with a seccomp filter that stops it
//! at the entry of the system calls the filter traps, in a process group of
//! its own, with the same set-up as every child ([`super::setup::prepare`]):
//! the handle, what it stops at next ([`TraceEvent`]) and why it could not
//! start or go on ([`TraceError`], a refusal of the machine told apart from
//! a failure, which skips a syscall result rather than failing it).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::capture::Capture;
use super::forkserver::Forked;
use super::reap::reap_group;
use super::setup::{ORPHANED, prepare};
use super::tracee::{Exec, install_filter, pin_round_robin, restore_affinity};
use super::watchdog::Watchdog;
use super::{Cut, Exit, Interrupt, KILL_GRACE, POLL, Reaped};

use super::traps::Stops;

/// What a traced child did next.
#[derive(Debug)]
pub enum TraceEvent {
    /// Stopped at the entry of a system call the seccomp filter traps:
    /// its number and its six arguments. The child stays stopped until
    /// [`Traced::resume`] or a kill.
    Syscall {
        nr: i64,
        args: [u64; 6],
    },
    Exited(Exit),
}

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

/// A child run under ptrace with a seccomp filter that stops it at the entry
/// of the system calls the filter traps, in a process group of its own (or
/// a process a fork server forked, stopped at the same entries without the
/// filter: [`super::seized`]).
///
/// Crash model: the driver kills the group while the child is stopped at a
/// system call's entry, so the call never runs: the files hold exactly what
/// the calls before it wrote. The only valid end is still `SIGKILL`.
///
/// ptrace binds the child to the thread that spawned it: every method must be
/// called from that thread. The child is waited with `waitpid` only (std's
/// `Child::wait` would take a ptrace stop for an exit), every wait is bounded
/// by a watchdog that kills the group at the deadline, and the child is
/// always reaped.
#[derive(Debug)]
pub struct Traced {
    /// The child: the leader of the traced group, whose end is the trial's.
    pub(super) pid: Pid,
    /// The tracee of the latest stop: the child, or a process or thread it
    /// started (all of them are traced, so that none meets the filter's
    /// trap without a tracer, which would fail its call with `ENOSYS`).
    pub(super) current: Pid,
    /// Tracees seen so far: a new one's first stop is the `SIGSTOP` that
    /// auto-attaching gives it, which must not be passed on.
    pub(super) seen: std::collections::HashSet<Pid>,
    pub(super) stderr: Capture,
    pub(super) exit: Option<Exit>,
    pub(super) watchdog: Watchdog,
    /// True once `kill_and_reap` reaped the whole group.
    pub(super) group_reaped: bool,
    /// The tracer thread's CPU mask before it was pinned with its child.
    pub(super) affinity: Option<libc::cpu_set_t>,
    /// How the tracee stops at its trapped calls.
    pub(super) stops: Stops,
    /// What the launcher of a seized process keeps of it (never read): a
    /// forked process's drop, after this handle's reap, stops the server's
    /// bookkeeping of it.
    pub(super) _held: Option<Held>,
}

/// What a seized [`Traced`] holds of the launcher that started its process
/// (never read): a forked process's entry in its server's bookkeeping,
/// dropped after the reap; a warm process's std handle, which never waits
/// (the tracer's `waitpid` reaps it).
#[derive(Debug)]
#[expect(dead_code, reason = "held for its drop, never read")]
pub(super) enum Held {
    Forked(Forked),
    Warm(std::process::Child),
}

impl Traced {
    /// The handle of a tracee `pid` just started or seized, not yet
    /// attached: the group's only tracee so far, its deadline running (and
    /// the run's interrupt watched, `(deadline, interrupt)`).
    pub(super) fn new(
        pid: Pid,
        stderr: Option<&Path>,
        (deadline, interrupt): (Duration, &Interrupt),
        affinity: Option<libc::cpu_set_t>,
        stops: Stops,
        held: Option<Held>,
    ) -> Traced {
        Traced {
            pid,
            current: pid,
            seen: std::collections::HashSet::from([pid]),
            stderr: Capture::of(stderr),
            exit: None,
            watchdog: Watchdog::start(pid, deadline, interrupt),
            group_reaped: false,
            affinity,
            stops,
            _held: held,
        }
    }

    /// Spawns `cmd` traced: before exec the child asks to be traced and
    /// installs `filter` (compiled beforehand, since nothing may allocate
    /// between fork and exec); after exec it stops, the driver sets the
    /// options (seccomp stops; kill the child if the driver dies) and lets it
    /// run to its first trapped call. Its watchdog kills it at `deadline`,
    /// or once `interrupt` is raised.
    pub fn spawn(
        mut cmd: Command,
        stderr: Option<&Path>,
        filter: &'static [seccompiler::sock_filter],
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Traced, TraceError> {
        let exec = Exec::of(&cmd).map_err(TraceError::Io)?;
        // The filter is 'static and read in place, the exec's arguments were
        // built above: nothing is allocated between fork and exec, and every
        // call is async-signal-safe.
        let capture = prepare(&mut cmd, stderr, move || {
            install_filter(filter)?;
            exec.run()
        })
        .map_err(|e| TraceError::Io(format!("child stderr: {e}")))?;
        let affinity = pin_round_robin();
        let child = super::contain::spawn(&mut cmd).inspect_err(|_| restore_affinity(&affinity));
        let child = child.map_err(|e| match e.raw_os_error() {
            Some(n) => TraceError::from_errno("tracing the child (PTRACE_TRACEME, seccomp)", Errno::from_raw(n)),
            None => TraceError::Io(format!("spawn: {e}")),
        })?;
        let pid = Pid::from_raw(child.id() as i32);
        // The std handle is dropped unwaited: only waitpid below may wait.
        drop(child);
        let mut traced = Traced::new(pid, stderr, (deadline, interrupt), affinity, Stops::Seccomp, None);
        traced.stderr = capture;
        traced.start()?;
        Ok(traced)
    }

    /// Waits for the stop after exec, sets the options and resumes. A child
    /// that ends first could not exec: [`Exec::run`] exits with the errno.
    fn start(&mut self) -> Result<(), TraceError> {
        use nix::sys::ptrace::{Options, cont, setoptions};
        match (self.wait()?, self.exit) {
            (Some(_), _) => {}
            (None, Some(Exit::Code(errno))) if errno > 0 && errno != ORPHANED => {
                let why = Errno::from_raw(errno).desc();
                return Err(TraceError::Io(format!("the child could not be executed: {why}")));
            }
            (None, _) => return Err(TraceError::Io(format!("the child ended before exec ({})", self.describe_exit()))),
        }
        // Forks, vforks, clones and execs are followed: a child behind a
        // launcher script, or one with threads, is traced whole.
        let options = Options::PTRACE_O_TRACESECCOMP
            | Options::PTRACE_O_EXITKILL
            | Options::PTRACE_O_TRACEFORK
            | Options::PTRACE_O_TRACEVFORK
            | Options::PTRACE_O_TRACECLONE
            | Options::PTRACE_O_TRACEEXEC;
        setoptions(self.pid, options).map_err(|e| TraceError::from_errno("PTRACE_SETOPTIONS", e))?;
        cont(self.pid, None).map_err(|e| TraceError::from_errno("PTRACE_CONT", e))
    }

    fn describe_exit(&self) -> String {
        self.exit.map_or_else(|| "unknown".into(), |e| e.to_string())
    }

    /// One blocking wait on any tracee of the group: the stop's status (of
    /// `self.current`), or `None` once the child itself ended (recorded in
    /// `self.exit`). The end of another tracee is not the trial's end.
    pub(super) fn wait(&mut self) -> Result<Option<nix::sys::wait::WaitStatus>, TraceError> {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let group = Pid::from_raw(-self.pid.as_raw());
        loop {
            let status = match waitpid(group, Some(WaitPidFlag::__WALL)) {
                Err(Errno::EINTR) => continue,
                // Nothing of the group is left to wait for.
                Err(Errno::ECHILD) if self.exit.is_none() => Exit::Code(-1),
                Err(e) => return Err(TraceError::Io(format!("waitpid: {e}"))),
                Ok(s) => match s {
                    WaitStatus::Exited(p, code) if p == self.pid => Exit::Code(code),
                    WaitStatus::Signaled(p, sig, _) if p == self.pid => Exit::Signal(sig as i32),
                    WaitStatus::Stopped(p, _) | WaitStatus::PtraceEvent(p, ..) | WaitStatus::PtraceSyscall(p) => {
                        self.current = p;
                        return Ok(Some(s));
                    }
                    WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, ..) => {
                        self.seen.remove(&p);
                        continue;
                    }
                    _ => continue,
                },
            };
            self.exit = Some(status);
            match self.watchdog.fired() {
                Some(Cut::Deadline) => return Err(TraceError::Deadline),
                Some(Cut::Interrupted) => return Err(TraceError::Interrupted),
                None => {}
            }
            return Ok(None);
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid.as_raw() as u32
    }

    /// The process or thread stopped at the latest trapped call: its file
    /// descriptors are the ones the call's arguments name.
    pub fn stopped_pid(&self) -> u32 {
        self.current.as_raw() as u32
    }

    /// Runs the child to its next trapped system call (or its end). Signals
    /// sent to the child on the way are passed on to it, except the stops
    /// ptrace itself causes.
    pub fn next_syscall(&mut self) -> Result<TraceEvent, TraceError> {
        use nix::sys::ptrace::{cont, syscall_info};
        if let Stops::Syscalls(test) = self.stops {
            return self.next_entry(test);
        }
        loop {
            if self.wait()?.is_none() {
                return Ok(TraceEvent::Exited(self.exit.unwrap_or(Exit::Code(-1))));
            }
            let pid = self.current;
            if self.seen.insert(pid) {
                // A new tracee's first stop: the SIGSTOP of its attaching.
                cont(pid, None).map_err(|e| TraceError::Io(format!("PTRACE_CONT: {e}")))?;
                continue;
            }
            match syscall_info(pid) {
                Ok(info) if info.op == libc::PTRACE_SYSCALL_INFO_SECCOMP => {
                    // SAFETY: the kernel filled the seccomp member, as `op` says.
                    let s = unsafe { info.u.seccomp };
                    return Ok(TraceEvent::Syscall { nr: s.nr as i64, args: s.args });
                }
                Ok(_) => {
                    // Event stops (fork, clone, exec) have no signal to pass on.
                    let sig = nix::sys::ptrace::getsiginfo(pid)
                        .ok()
                        .and_then(|si| Signal::try_from(si.si_signo).ok())
                        .filter(|&s| s != Signal::SIGTRAP);
                    cont(pid, sig).map_err(|e| TraceError::Io(format!("PTRACE_CONT: {e}")))?;
                }
                // A kernel before 5.3 does not know the request.
                Err(e @ (Errno::EIO | Errno::EINVAL)) => {
                    return Err(TraceError::NotPermitted(format!("PTRACE_GET_SYSCALL_INFO is not supported ({e})")));
                }
                Err(e) => return Err(TraceError::from_errno("PTRACE_GET_SYSCALL_INFO", e)),
            }
        }
    }

    /// Lets a child stopped at a trapped call run the call and go on.
    pub fn resume(&mut self) -> Result<(), TraceError> {
        match self.stops {
            Stops::Seccomp => {
                nix::sys::ptrace::cont(self.current, None).map_err(|e| TraceError::Io(format!("PTRACE_CONT: {e}")))
            }
            Stops::Syscalls(_) => self.resume_syscalls(self.current, None),
        }
    }

    /// Kills the group (the child may be stopped at a call's entry: the call
    /// never runs) and reaps it.
    pub fn kill_and_reap(mut self) -> Reaped {
        let _ = killpg(self.pid, Signal::SIGKILL);
        self.watchdog.stop();
        let exit = self.reap_after_kill();
        self.group_reaped = true;
        restore_affinity(&self.affinity);
        let leftover = exit == Exit::Unreaped || reap_group(self.pid);
        Reaped { exit, leftover, stderr_tail: self.stderr_tail() }
    }

    /// After the group's `SIGKILL`: waits for the child's end, reaping every
    /// tracee of the group on the way, within [`KILL_GRACE`]; a child the
    /// kernel holds past that is `Unreaped`, as for an untraced child.
    fn reap_after_kill(&mut self) -> Exit {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let group = Pid::from_raw(-self.pid.as_raw());
        let end = Instant::now() + KILL_GRACE;
        while self.exit.is_none() {
            match waitpid(group, Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(p, code)) if p == self.pid => self.exit = Some(Exit::Code(code)),
                Ok(WaitStatus::Signaled(p, sig, _)) if p == self.pid => self.exit = Some(Exit::Signal(sig as i32)),
                Ok(WaitStatus::StillAlive) if Instant::now() >= end => return Exit::Unreaped,
                Ok(WaitStatus::StillAlive) => std::thread::sleep(POLL),
                // Another tracee's end, or a stop on the way to the kill.
                Ok(_) | Err(Errno::EINTR) => {}
                // Nothing of the group is left to wait for.
                Err(_) => self.exit = Some(Exit::Code(-1)),
            }
        }
        self.exit.unwrap_or(Exit::Code(-1))
    }

    pub fn stderr_tail(&self) -> String {
        self.stderr.quote()
    }
}

impl Drop for Traced {
    /// Whatever path the caller took (an early exit, a deadline, an error),
    /// the group is killed and everything of it reaped.
    fn drop(&mut self) {
        restore_affinity(&self.affinity);
        if !self.group_reaped {
            let _ = killpg(self.pid, Signal::SIGKILL);
            self.watchdog.stop();
            self.reap_after_kill();
            reap_group(self.pid);
        }
        self.stderr.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::group_alive;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn traced(script: &str) -> Option<Traced> {
        let filter = crate::kill::syscall::filter().unwrap();
        match Traced::spawn(sh(script), None, filter, Duration::from_secs(20), &Interrupt::new()) {
            Err(TraceError::NotPermitted(why)) => {
                crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
                None
            }
            other => Some(other.unwrap()),
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_traced_child_stops_at_trapped_calls_and_its_exit_is_seen() {
        let Some(mut t) = traced("echo x >&2; exit 4") else { return };
        let mut stops = 0;
        let exit = loop {
            match t.next_syscall().unwrap() {
                TraceEvent::Syscall { .. } => {
                    stops += 1;
                    t.resume().unwrap();
                }
                TraceEvent::Exited(e) => break e,
            }
        };
        assert!(stops >= 1, "the echo's write is trapped");
        assert_eq!(exit, Exit::Code(4));
    }

    /// A launcher script forks and execs before the real child runs; a
    /// forked process that met the filter untraced would fail its trapped
    /// calls with ENOSYS, so every process of the group is traced too.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn forked_and_execed_processes_of_a_traced_child_are_traced_too() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let script = format!("(echo forked > {0}); sh -c 'echo execed >> {0}'; cat {0} >&2", file.display());
        let Some(mut t) = traced(&script) else { return };
        let mut stoppers = std::collections::HashSet::new();
        let exit = loop {
            match t.next_syscall().unwrap() {
                TraceEvent::Syscall { .. } => {
                    stoppers.insert(t.stopped_pid());
                    t.resume().unwrap();
                }
                TraceEvent::Exited(e) => break e,
            }
        };
        assert_eq!(exit, Exit::Code(0));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "forked\nexeced\n");
        assert!(stoppers.len() >= 2, "the forked processes' writes were trapped: {stoppers:?}");
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_traced_child_killed_at_a_call_ends_by_sigkill_and_leaves_nothing() {
        let Some(mut t) = traced("echo x >&2; sleep 30 & wait") else { return };
        assert!(matches!(t.next_syscall().unwrap(), TraceEvent::Syscall { .. }));
        let pgid = t.pid;
        let reaped = t.kill_and_reap();
        assert!(reaped.exit.is_sigkill(), "{}", reaped.exit);
        assert!(!reaped.leftover);
        assert!(!group_alive(pgid));
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_stalled_traced_child_meets_its_deadline() {
        let filter = crate::kill::syscall::filter().unwrap();
        let mut t =
            match Traced::spawn(sh("sleep 30; echo late"), None, filter, Duration::from_millis(200), &Interrupt::new())
            {
                Err(TraceError::NotPermitted(why)) => {
                    return crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
                }
                other => other.unwrap(),
            };
        let pgid = t.pid;
        assert!(matches!(t.next_syscall(), Err(TraceError::Deadline)));
        drop(t);
        assert!(!group_alive(pgid));
    }

    /// The run's token raised by hand (no signal) while the tracer blocks
    /// in `waitpid`: the watchdog kills the group long before its deadline,
    /// and the tracer's error says interrupted, not the deadline.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_traced_child_whose_run_is_interrupted_is_killed_by_the_interrupt() {
        let (filter, interrupt) = (crate::kill::syscall::filter().unwrap(), Interrupt::new());
        let mut t = match Traced::spawn(sh("sleep 30; echo late"), None, filter, Duration::from_secs(20), &interrupt) {
            Err(TraceError::NotPermitted(why)) => {
                return crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
            }
            other => other.unwrap(),
        };
        let (pgid, started) = (t.pid, Instant::now());
        let raiser = interrupt.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            raiser.raise(libc::SIGINT);
        });
        assert_eq!(t.next_syscall().err(), Some(TraceError::Interrupted));
        assert!(started.elapsed() < Duration::from_secs(10), "cut short: {:?}", started.elapsed());
        drop(t);
        assert!(!group_alive(pgid));
    }

    /// The traced child runs its own exec: it must still get the command's
    /// environment (set and removed variables) and working folder.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_traced_child_gets_its_commands_environment_and_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut cmd = sh(&format!("echo \"$CC_SET ${{HOME:-unset}} $(pwd)\" > {}", out.display()));
        cmd.env("CC_SET", "yes").env_remove("HOME").current_dir(dir.path());
        let filter = crate::kill::syscall::filter().unwrap();
        let mut t = match Traced::spawn(cmd, None, filter, Duration::from_secs(20), &Interrupt::new()) {
            Err(TraceError::NotPermitted(why)) => {
                return crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
            }
            other => other.unwrap(),
        };
        while let TraceEvent::Syscall { .. } = t.next_syscall().unwrap() {
            t.resume().unwrap();
        }
        let folder = dir.path().canonicalize().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), format!("yes unset {}", folder.display()));
    }

    /// A program that cannot be executed (gone, or not executable) fails
    /// after the filter is installed, where a write would be refused: the
    /// spawn must still end, promptly, with an error naming the cause. Run
    /// on a thread of its own so that a hang fails the test, not the suite.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_program_that_cannot_be_executed_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let not_executable = dir.path().join("plain-file");
        std::fs::write(&not_executable, "not a program").unwrap();
        for program in [dir.path().join("missing"), not_executable] {
            let (tx, rx) = std::sync::mpsc::channel();
            let shown = program.display().to_string();
            std::thread::spawn(move || {
                let filter = crate::kill::syscall::filter().unwrap();
                let _ = tx.send(
                    Traced::spawn(Command::new(program), None, filter, Duration::from_secs(5), &Interrupt::new()).err(),
                );
            });
            match rx.recv_timeout(Duration::from_secs(20)).expect("the spawn ended") {
                Some(TraceError::NotPermitted(why)) => {
                    return crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
                }
                Some(TraceError::Io(why)) => assert!(why.contains("could not be executed"), "{shown}: {why}"),
                other => panic!("{shown}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_refused_trace_is_not_permitted_and_other_failures_are_errors() {
        for e in [Errno::EPERM, Errno::EACCES, Errno::ENOSYS] {
            assert!(matches!(TraceError::from_errno("PTRACE_TRACEME", e), TraceError::NotPermitted(_)), "{e}");
        }
        assert!(matches!(TraceError::from_errno("waitpid", Errno::ECHILD), TraceError::Io(_)));
    }
}
