//! Injection at a trapped call: the child, stopped at the entry of a call
//! the filter traps, gets an error back instead of the call running, and
//! goes on (issue 24: an `fsync` that fails with `EIO`, a write that fails
//! with `ENOSPC`); or a write runs on fewer bytes than it asked for and
//! returns that short count, as a write(2) may.
//!
//! Crash model: none; the child is not killed. The call never runs (the
//! files are as the calls before it left them) and returns `-errno`, as a
//! failing disk or a full one would make it return; what the child does
//! next is its own. How: at a seccomp stop the tracer may set the call's
//! number to -1, and "the system call will appear to return the value that
//! the tracer puts in the return value register" (seccomp(2),
//! `SECCOMP_RET_TRACE`): `orig_rax` and `rax` on x86_64; on aarch64 the
//! number through `PTRACE_SETREGSET` with `NT_ARM_SYSTEM_CALL`, and `x0`.

use nix::errno::Errno;
use nix::unistd::Pid;

use super::traced::{TraceError, Traced};

impl Traced {
    /// Makes the trapped call the child is stopped at fail with `errno`
    /// without running, and lets the child go on.
    pub fn fail(&mut self, errno: Errno) -> Result<(), TraceError> {
        let pid = Pid::from_raw(self.stopped_pid() as i32);
        skip_with(pid, errno).map_err(|e| TraceError::Io(format!("making the call fail with {errno}: {e}")))?;
        self.resume()
    }
}

impl Traced {
    /// Makes the trapped single-buffer write (`write`, `pwrite64`) the child
    /// is stopped at write only its first `kept` bytes: its count argument
    /// is set to `kept` before it runs, so it returns `kept`, and the
    /// child goes on with a short count in hand.
    pub fn shorten(&mut self, kept: u64) -> Result<(), TraceError> {
        let pid = Pid::from_raw(self.stopped_pid() as i32);
        set_count(pid, kept).map_err(|e| TraceError::Io(format!("cutting the write short to {kept} bytes: {e}")))?;
        self.resume()
    }
}

/// Sets the third argument (a write's count) of the call `pid` is stopped at.
#[cfg(target_arch = "x86_64")]
fn set_count(pid: Pid, count: u64) -> nix::Result<()> {
    use nix::sys::ptrace::{getregs, setregs};
    let mut regs = getregs(pid)?;
    regs.rdx = count;
    setregs(pid, regs)
}

#[cfg(target_arch = "aarch64")]
fn set_count(pid: Pid, count: u64) -> nix::Result<()> {
    use nix::sys::ptrace::{getregs, setregs};
    let mut regs = getregs(pid)?;
    regs.regs[2] = count;
    setregs(pid, regs)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn set_count(_: Pid, _: u64) -> nix::Result<()> {
    Err(Errno::ENOSYS)
}

/// The value a failed call returns: `-errno`, in a register's width.
fn returned(errno: Errno) -> u64 {
    (-(errno as i64)) as u64
}

#[cfg(target_arch = "x86_64")]
fn skip_with(pid: Pid, errno: Errno) -> nix::Result<()> {
    use nix::sys::ptrace::{getregs, setregs};
    let mut regs = getregs(pid)?;
    regs.orig_rax = u64::MAX; // -1: no call
    regs.rax = returned(errno);
    setregs(pid, regs)
}

#[cfg(target_arch = "aarch64")]
fn skip_with(pid: Pid, errno: Errno) -> nix::Result<()> {
    use nix::sys::ptrace::{getregs, setregs};
    /// The register set of the call's number (linux/elf.h).
    const NT_ARM_SYSTEM_CALL: usize = 0x404;
    let mut regs = getregs(pid)?;
    regs.regs[0] = returned(errno);
    setregs(pid, regs)?;
    let mut nr: libc::c_int = -1;
    let mut iov = libc::iovec { iov_base: (&raw mut nr).cast(), iov_len: std::mem::size_of::<libc::c_int>() };
    // SAFETY: the kernel reads one int through an iovec that points at it.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGSET,
            pid.as_raw(),
            NT_ARM_SYSTEM_CALL as *mut libc::c_void,
            (&raw mut iov).cast::<libc::c_void>(),
        )
    };
    Errno::result(r).map(drop)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn skip_with(_: Pid, _: Errno) -> nix::Result<()> {
    Err(Errno::ENOSYS)
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use std::path::Path;
    use std::process::Command;
    use std::time::Duration;

    use super::*;
    use crate::harness::{Exit, TraceEvent};

    /// `sh` running `script` in `dir`, traced, its stderr in `dir/err`.
    fn traced(dir: &Path, script: &str) -> Option<Traced> {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]).current_dir(dir);
        let filter = crate::kill::syscall::filter().unwrap();
        match Traced::spawn(
            cmd,
            Some(&dir.join("err")),
            filter,
            Duration::from_secs(20),
            &crate::harness::Interrupt::new(),
        ) {
            Err(TraceError::NotPermitted(why)) => {
                crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
                None
            }
            other => Some(other.unwrap()),
        }
    }

    #[test]
    fn a_write_made_to_fail_never_runs_and_the_child_sees_its_errno_and_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        // dd writes with write(2) and names the errno it got.
        let script = "echo lost | dd of=f status=none; echo \"status $?\" >&2; echo kept > g";
        let Some(mut t) = traced(&dir, script) else { return };
        let mut failed = 0;
        let exit = loop {
            match t.next_syscall().unwrap() {
                TraceEvent::Syscall { nr, args } if nr == libc::SYS_write => {
                    let path = crate::kill::syscall::fd_path(t.stopped_pid(), args[0]);
                    if path.as_deref() == Some(&dir.join("f")) {
                        failed += 1;
                        t.fail(Errno::ENOSPC).unwrap();
                    } else {
                        t.resume().unwrap();
                    }
                }
                TraceEvent::Syscall { .. } => t.resume().unwrap(),
                TraceEvent::Exited(e) => break e,
            }
        };
        assert_eq!(failed, 1);
        assert_eq!(exit, Exit::Code(0), "the child ran on to its end");
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"", "the write never ran");
        let err = std::fs::read_to_string(dir.join("err")).unwrap();
        assert!(err.contains("No space left on device") && err.contains("status 1"), "{err}");
        assert_eq!(std::fs::read(dir.join("g")).unwrap(), b"kept\n", "the calls after it ran");
    }

    #[test]
    fn a_write_cut_short_writes_its_first_bytes_and_the_child_sees_the_short_count() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        // dd writes its block with write(2) and writes the rest after a short count.
        let script = "printf abcdefgh | dd of=f bs=8 count=1 status=none";
        let Some(mut t) = traced(&dir, script) else { return };
        let mut counts = Vec::new();
        loop {
            match t.next_syscall().unwrap() {
                TraceEvent::Syscall { nr, args } if nr == libc::SYS_write => {
                    let path = crate::kill::syscall::fd_path(t.stopped_pid(), args[0]);
                    if path.as_deref() == Some(&dir.join("f")) {
                        counts.push(args[2]);
                        if counts.len() == 1 {
                            t.shorten(3).unwrap();
                            continue;
                        }
                    }
                    t.resume().unwrap();
                }
                TraceEvent::Syscall { .. } => t.resume().unwrap(),
                TraceEvent::Exited(_) => break,
            }
        }
        assert_eq!(counts, [8, 5], "the first write ran on 3 bytes and the child wrote the other 5");
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"abcdefgh");
    }

    #[test]
    fn a_failed_call_returns_minus_its_errno() {
        assert_eq!(returned(Errno::EIO) as i64, -5);
        assert_eq!(returned(Errno::ENOSPC) as i64, -28);
    }
}
