//! The traced child's side of the fork, and where both sides run: the
//! seccomp filter and the request to be traced, installed between fork and
//! exec; the exec the traced child runs itself; and the CPU the tracer and
//! its tracee share.

use std::process::Command;

/// Pins the calling thread (and so the child it spawns next, which inherits
/// the mask) to one CPU of its allowed set, taken round-robin; returns the
/// mask to restore. A tracer and its tracee hand control back and forth at
/// every stop, and on one CPU each handoff is a plain context switch rather
/// than a cross-CPU wakeup.
pub(super) fn pin_round_robin() -> Option<libc::cpu_set_t> {
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

/// Gives process `pid` the calling thread's CPU mask: a tracee that exists
/// before its tracer pinned itself (a forked process) does not inherit it.
pub(super) fn share_cpu(pid: nix::unistd::Pid) {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: affinity calls with a mask of the stated size.
    unsafe {
        let mut mask: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut mask) == 0 {
            libc::sched_setaffinity(pid.as_raw(), size, &mask);
        }
    }
}

pub(super) fn restore_affinity(mask: &Option<libc::cpu_set_t>) {
    if let Some(m) = mask {
        // SAFETY: as above.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), m);
        }
    }
}

/// The seccomp program as the kernel reads it; `filter` is the compiled BPF.
pub(super) fn install_filter(filter: &[seccompiler::sock_filter]) -> Result<(), std::io::Error> {
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

/// The program, arguments and environment of a traced child, ready for
/// `execvpe` after the fork, where nothing may be allocated.
///
/// Why the traced child runs its own exec: std's, on failure, writes the
/// errno into a pipe to the parent, but once the filter is installed that
/// `write` is trapped with no tracer options set yet, so it fails; std then
/// aborts, the abort's signal stops the traced child, and the parent waits
/// on the pipe for ever, before any watchdog could start. Here a failed
/// exec writes nothing and exits with its errno, which `Traced::start`
/// reads. std applies a command's environment only in its own exec, after
/// the `pre_exec` hooks, so the environment is built here (the working
/// folder and standard streams std has set by then).
pub(super) struct Exec {
    _owned: Vec<std::ffi::CString>,
    /// `argv` for execvpe, null-terminated; `argv[0]` is the program.
    argv: Vec<*const libc::c_char>,
    /// `envp` for execvpe, null-terminated.
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into `_owned`, which moves with them and is
// only read.
unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

impl Exec {
    /// `Err` says why the command cannot be exec'd (a NUL byte in a word).
    pub(super) fn of(cmd: &Command) -> Result<Exec, String> {
        use std::os::unix::ffi::OsStrExt;
        let nul = || format!("the child command holds a NUL byte: {cmd:?}");
        let words: Vec<_> = std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(OsStrExt::as_bytes).collect();
        let mut env: std::collections::BTreeMap<_, _> = std::env::vars_os().map(|(k, v)| (k, Some(v))).collect();
        env.extend(cmd.get_envs().map(|(k, v)| (k.to_os_string(), v.map(|v| v.to_os_string()))));
        let pairs: Vec<Vec<u8>> =
            env.iter().filter_map(|(k, v)| Some([k.as_bytes(), b"=", v.as_ref()?.as_bytes()].concat())).collect();
        let to_c = |b: &[u8]| std::ffi::CString::new(b).map_err(|_| nul());
        let owned =
            words.iter().map(|w| to_c(w)).chain(pairs.iter().map(|p| to_c(p))).collect::<Result<Vec<_>, _>>()?;
        let ptrs = |c: &[std::ffi::CString]| c.iter().map(|c| c.as_ptr()).chain([std::ptr::null()]).collect();
        let (argv, envp) = (ptrs(&owned[..words.len()]), ptrs(&owned[words.len()..]));
        Ok(Exec { _owned: owned, argv, envp })
    }

    /// Replaces the process with the program; returns only by exiting.
    pub(super) fn run(&self) -> std::io::Result<()> {
        // SAFETY: execvpe and _exit are async-signal-safe in practice (std
        // itself calls execvp here); both arrays are null-terminated and
        // live as long as `self`.
        unsafe {
            libc::execvpe(self.argv[0], self.argv.as_ptr(), self.envp.as_ptr());
            libc::_exit(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
        }
    }
}
