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
        cmd.args(&self.prefix).args(args).env(crashcells_protocol::HOME_ENV, home);
        // The protocol says a child's stdout is captured and ignored: left
        // inherited, a chatty child would corrupt `--format json` on ours.
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
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
    /// True once `kill_and_reap` has dealt with the group, whatever it found.
    reaped: bool,
}

impl Running {
    /// Spawns `cmd` as the leader of a new process group, with stderr to
    /// `stderr` (if given) and the parent-death signal set before exec.
    pub fn spawn(mut cmd: Command, stderr: Option<&Path>) -> std::io::Result<Running> {
        ensure_subreaper();
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
        Ok(Running { child, pgid, stderr: stderr.map(Path::to_path_buf), exit: None, reaped: false })
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
        self.reaped = true;
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
    /// A child is never left running, whatever path the caller took; and a
    /// child that ended on its own leaves nothing of its group behind either
    /// (a wrapper script's own children, say).
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        if self.exit.is_none() {
            self.kill_and_wait();
        } else if group_alive(self.pgid) {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
        reap_group(self.pgid);
    }
}

/// Why a traced child could not be started or driven.
#[derive(Debug)]
pub enum TraceError {
    /// ptrace or seccomp is refused here (a container's seccomp or yama
    /// policy); the syscall results are skipped with this reason.
    NotPermitted(String),
    /// The trial's deadline passed; the watchdog killed the group.
    Deadline,
    Io(String),
}

impl TraceError {
    fn from_errno(step: &str, e: Errno) -> TraceError {
        match e {
            Errno::EPERM | Errno::EACCES | Errno::ENOSYS => {
                TraceError::NotPermitted(format!("{step} is not permitted here ({e})"))
            }
            e => TraceError::Io(format!("{step}: {e}")),
        }
    }
}

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

/// Kills a group once a deadline passes, from a thread of its own, so that
/// the tracer can block in `waitpid` (a blocked wait then returns the kill).
#[derive(Debug)]
struct Watchdog {
    cancel: Option<std::sync::mpsc::Sender<()>>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(pgid: Pid, deadline: Duration) -> Watchdog {
        use std::sync::atomic::Ordering;
        let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = fired.clone();
        let end = Instant::now() + deadline;
        let thread = std::thread::spawn(move || {
            // Wakes now and then to notice an interrupted run, which ends
            // the traced trial as promptly as an untraced one.
            loop {
                let left = end.saturating_duration_since(Instant::now());
                match cancelled.recv_timeout(left.min(Duration::from_millis(20))) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                        if Instant::now() >= end || interrupted().is_some() =>
                    {
                        flag.store(true, Ordering::SeqCst);
                        let _ = killpg(pgid, Signal::SIGKILL);
                        return;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        });
        Watchdog { cancel: Some(cancel), fired, thread: Some(thread) }
    }

    fn fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops the watchdog before the child is reaped, so that it can never
    /// kill a group whose id was reused.
    fn stop(&mut self) {
        self.cancel.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A child run under ptrace with a seccomp filter that stops it at the entry
/// of the system calls the filter traps, in a process group of its own.
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
    pid: Pid,
    /// The tracee of the latest stop: the child, or a process or thread it
    /// started (all of them are traced, so that none meets the filter's
    /// trap without a tracer, which would fail its call with `ENOSYS`).
    current: Pid,
    /// Tracees seen so far: a new one's first stop is the `SIGSTOP` that
    /// auto-attaching gives it, which must not be passed on.
    seen: std::collections::HashSet<Pid>,
    stderr: Option<PathBuf>,
    exit: Option<Exit>,
    watchdog: Watchdog,
    /// True once `kill_and_reap` reaped the whole group.
    group_reaped: bool,
    /// The tracer thread's CPU mask before it was pinned with its child.
    affinity: Option<libc::cpu_set_t>,
}

/// Pins the calling thread (and so the child it spawns next, which inherits
/// the mask) to one CPU of its allowed set, taken round-robin; returns the
/// mask to restore. A tracer and its tracee hand control back and forth at
/// every stop, and on one CPU each handoff is a plain context switch rather
/// than a cross-CPU wakeup.
fn pin_round_robin() -> Option<libc::cpu_set_t> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: affinity calls on the calling thread with masks of the stated size.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut old) != 0 {
            return None;
        }
        let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &old)).collect();
        let cpu = *allowed.get(NEXT.fetch_add(1, Ordering::Relaxed) % allowed.len().max(1))?;
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        (libc::sched_setaffinity(0, size, &one) == 0).then_some(old)
    }
}

fn restore_affinity(mask: &Option<libc::cpu_set_t>) {
    if let Some(m) = mask {
        // SAFETY: as above.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), m);
        }
    }
}

/// The seccomp program as the kernel reads it; `filter` is the compiled BPF.
fn install_filter(filter: &[seccompiler::sock_filter]) -> Result<(), std::io::Error> {
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
    // SAFETY: plain syscalls on the calling process; `prog` outlives them.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Traced {
    /// Spawns `cmd` traced: before exec the child asks to be traced and
    /// installs `filter` (compiled beforehand, since nothing may allocate
    /// between fork and exec); after exec it stops, the driver sets the
    /// options (seccomp stops; kill the child if the driver dies) and lets it
    /// run to its first trapped call.
    pub fn spawn(
        mut cmd: Command,
        stderr: Option<&Path>,
        filter: &'static [seccompiler::sock_filter],
        deadline: Duration,
    ) -> Result<Traced, TraceError> {
        ensure_subreaper();
        if let Some(path) = stderr {
            cmd.stderr(std::fs::File::create(path).map_err(|e| TraceError::Io(format!("child stderr: {e}")))?);
        }
        cmd.process_group(0);
        // SAFETY: only async-signal-safe syscalls on the child itself; the
        // filter is 'static and read in place, nothing is allocated.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                install_filter(filter)
            });
        }
        let affinity = pin_round_robin();
        let child = cmd.spawn().inspect_err(|_| restore_affinity(&affinity));
        let child = child.map_err(|e| match e.raw_os_error() {
            Some(n) => TraceError::from_errno("tracing the child (PTRACE_TRACEME, seccomp)", Errno::from_raw(n)),
            None => TraceError::Io(format!("spawn: {e}")),
        })?;
        let pid = Pid::from_raw(child.id() as i32);
        // The std handle is dropped unwaited: only waitpid below may wait.
        drop(child);
        let mut traced = Traced {
            pid,
            current: pid,
            seen: std::collections::HashSet::from([pid]),
            stderr: stderr.map(Path::to_path_buf),
            exit: None,
            watchdog: Watchdog::start(pid, deadline),
            group_reaped: false,
            affinity,
        };
        traced.start()?;
        Ok(traced)
    }

    /// Waits for the stop after exec, sets the options and resumes.
    fn start(&mut self) -> Result<(), TraceError> {
        use nix::sys::ptrace::{Options, cont, setoptions};
        match self.wait()? {
            Some(()) => {}
            None => return Err(TraceError::Io(format!("the child ended before exec ({})", self.describe_exit()))),
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

    /// One blocking wait on any tracee of the group: `Some(())` on a stop
    /// (of `self.current`), `None` once the child itself ended (recorded in
    /// `self.exit`). The end of another tracee is not the trial's end.
    fn wait(&mut self) -> Result<Option<()>, TraceError> {
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
                        return Ok(Some(()));
                    }
                    WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, ..) => {
                        self.seen.remove(&p);
                        continue;
                    }
                    _ => continue,
                },
            };
            self.exit = Some(status);
            if self.watchdog.fired() {
                return Err(TraceError::Deadline);
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
        nix::sys::ptrace::cont(self.current, None).map_err(|e| TraceError::Io(format!("PTRACE_CONT: {e}")))
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
        self.stderr.as_deref().map(stderr_tail).unwrap_or_default()
    }
}

impl Drop for Traced {
    /// Whatever path the caller took (an early exit, a deadline, an error),
    /// the group is killed and everything of it reaped.
    fn drop(&mut self) {
        restore_affinity(&self.affinity);
        if self.group_reaped {
            return;
        }
        let _ = killpg(self.pid, Signal::SIGKILL);
        self.watchdog.stop();
        self.reap_after_kill();
        reap_group(self.pid);
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
    pub fn check(&self) -> Result<(), String> {
        if !self.exit.is_sigkill() {
            return Err(format!("child ended by {} instead of SIGKILL: {}", self.exit, self.stderr_tail));
        }
        if self.leftover {
            return Err("a process of the child's group was left after the reap".into());
        }
        Ok(())
    }
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

/// Becomes the subreaper once per process, before the first child.
fn ensure_subreaper() {
    static SUBREAPER: std::sync::Once = std::sync::Once::new();
    SUBREAPER.call_once(become_subreaper);
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

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn traced(script: &str) -> Option<Traced> {
        let filter = crate::kill::syscall::filter().unwrap();
        match Traced::spawn(sh(script), None, filter, Duration::from_secs(20)) {
            Err(TraceError::NotPermitted(why)) => {
                eprintln!("ptrace refused here: {why}");
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
        let mut t = match Traced::spawn(sh("sleep 30; echo late"), None, filter, Duration::from_millis(200)) {
            Err(TraceError::NotPermitted(_)) => return,
            other => other.unwrap(),
        };
        let pgid = t.pid;
        assert!(matches!(t.next_syscall(), Err(TraceError::Deadline)));
        drop(t);
        assert!(!group_alive(pgid));
    }

    #[test]
    fn a_refused_trace_is_not_permitted_and_other_failures_are_errors() {
        for e in [Errno::EPERM, Errno::EACCES, Errno::ENOSYS] {
            assert!(matches!(TraceError::from_errno("PTRACE_TRACEME", e), TraceError::NotPermitted(_)), "{e}");
        }
        assert!(matches!(TraceError::from_errno("waitpid", Errno::ECHILD), TraceError::Io(_)));
    }

    #[test]
    fn a_child_that_ends_on_its_own_leaves_nothing_of_its_group() {
        let mut r = Running::spawn(sh("sleep 30 & exit 0"), None).unwrap();
        assert_eq!(r.wait_until(Instant::now() + Duration::from_secs(10)), Some(Exit::Code(0)));
        let pgid = r.pgid;
        assert!(group_alive(pgid), "the background sleep is still in the group");
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
