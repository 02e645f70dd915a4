//! The seccomp filter of syscall kill points: which system calls stop a
//! traced child at their entry, compiled once before any fork, and the same
//! test for a tracee that runs under no filter of ours (a process a fork
//! server forked).
//!
//! Crash model: the calls that can change a file (`write`, `pwrite64`,
//! `writev`, `pwritev`, `pwritev2`, `fsync`, `fdatasync`, `ftruncate`,
//! `unlink`, `unlinkat`, `rename`, `renameat`, `renameat2`) are trapped, so
//! a `SIGKILL` at the entry of any of them leaves exactly what the calls
//! before it left; opens that create or truncate, and (for a held process
//! only) lock calls, are trapped for a recording and a schedule, never as
//! kill points. Which trapped call is a kill point is [`super::point`]'s.
//!
//! Clause: none of its own; the cells judge the states these points leave.

use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::harness::Traps;

/// The trapped system calls, by name and number on this architecture.
#[cfg(target_arch = "x86_64")]
const TRAPPED: &[(&str, i64)] = &[
    ("write", libc::SYS_write),
    ("pwrite64", libc::SYS_pwrite64),
    ("writev", libc::SYS_writev),
    ("pwritev", libc::SYS_pwritev),
    ("pwritev2", libc::SYS_pwritev2),
    ("fsync", libc::SYS_fsync),
    ("fdatasync", libc::SYS_fdatasync),
    ("ftruncate", libc::SYS_ftruncate),
    ("unlink", libc::SYS_unlink),
    ("unlinkat", libc::SYS_unlinkat),
    ("rename", libc::SYS_rename),
    ("renameat", libc::SYS_renameat),
    ("renameat2", libc::SYS_renameat2),
];

/// aarch64 has no `unlink`, `rename` or `renameat`: only their `at` forms.
#[cfg(target_arch = "aarch64")]
const TRAPPED: &[(&str, i64)] = &[
    ("write", libc::SYS_write),
    ("pwrite64", libc::SYS_pwrite64),
    ("writev", libc::SYS_writev),
    ("pwritev", libc::SYS_pwritev),
    ("pwritev2", libc::SYS_pwritev2),
    ("fsync", libc::SYS_fsync),
    ("fdatasync", libc::SYS_fdatasync),
    ("ftruncate", libc::SYS_ftruncate),
    ("unlinkat", libc::SYS_unlinkat),
    ("renameat2", libc::SYS_renameat2),
];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const TRAPPED: &[(&str, i64)] = &[];

/// Opens trapped only when their flags (the argument at the index given)
/// create or truncate; never kill points.
#[cfg(target_arch = "x86_64")]
const OPENS: &[(&str, i64, u8)] =
    &[("openat", libc::SYS_openat, 2), ("open", libc::SYS_open, 1), ("creat", libc::SYS_creat, u8::MAX)];

#[cfg(target_arch = "aarch64")]
const OPENS: &[(&str, i64, u8)] = &[("openat", libc::SYS_openat, 2)];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const OPENS: &[(&str, i64, u8)] = &[];

/// Why syscall kill points cannot run on this architecture, if they cannot.
pub fn unsupported_arch() -> Option<String> {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        None
    } else {
        Some(format!("syscall kill points need x86_64 or aarch64, not {}", std::env::consts::ARCH))
    }
}

/// The compiled filter: trace the calls above, allow every other. Compiled
/// once, before any fork, since the child may not allocate before exec.
pub fn filter() -> Result<&'static [seccompiler::sock_filter], String> {
    static FILTER: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    FILTER.get_or_init(|| compile(false)).as_deref().map_err(Clone::clone)
}

/// The filter and its test together, as the harness applies them to an
/// exec'd child (the filter) or a seized one (the test).
pub fn trap_set() -> Result<Traps, String> {
    Ok(Traps { filter: filter()?, test: traps })
}

/// [`trap_set`] and the lock calls ([`crate::kill::locks`]): for a process a
/// controlled schedule holds between two transactions. Only such a process
/// stops at its locks (a sweep's children never do: a lock call is no kill
/// point, and SQLite makes several per transaction).
pub fn lock_trap_set() -> Result<Traps, String> {
    static FILTER: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    let filter = FILTER.get_or_init(|| compile(true)).as_deref().map_err(Clone::clone)?;
    Ok(Traps { filter, test: traps_with_locks })
}

fn compile(locks: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        TRAPPED.iter().map(|&(_, nr)| (nr, vec![])).collect();
    for &(_, nr, flags) in OPENS {
        rules.insert(nr, open_rules(flags).map_err(|e| format!("seccomp filter: {e}"))?);
    }
    if let (true, Some(nr)) = (locks, crate::kill::locks::FCNTL) {
        rules.insert(nr, lock_rules().map_err(|e| format!("seccomp filter: {e}"))?);
    }
    let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(0), arch)
        .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(f).map_err(|e| format!("seccomp filter: {e}"))
}

/// An open is trapped when its flags argument has `O_CREAT` or `O_TRUNC`;
/// `creat` (no flags argument, `u8::MAX`) always.
fn open_rules(flags: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    if flags == u8::MAX {
        return Ok(vec![]);
    }
    let with = |bit: libc::c_int| {
        let bit = bit as u64;
        SeccompCondition::new(flags, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    Ok(vec![with(libc::O_CREAT)?, with(libc::O_TRUNC)?])
}

/// An `fcntl` is trapped when its command (the second argument) sets a lock.
fn lock_rules() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let cmd = |c: libc::c_int| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, c as u64)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    crate::kill::locks::LOCK_CMDS.iter().map(|&c| cmd(c)).collect()
}

/// [`traps`], and the lock calls: the lock filter's test.
pub(crate) fn traps_with_locks(nr: i64, args: &[u64; 6]) -> bool {
    traps(nr, args) || crate::kill::locks::is_lock_call(nr, args)
}

/// Whether the filter traps call `nr` with `args`: the compiled filter's
/// test, for a tracee that stops at every system call instead (a process
/// forked by a fork server runs under no filter of ours). The same calls,
/// and an open's flags compared on their low 32 bits as the filter's
/// `Dword` does, so that a forked process's kill points are an exec'd one's.
pub(crate) fn traps(nr: i64, args: &[u64; 6]) -> bool {
    if TRAPPED.iter().any(|&(_, n)| n == nr) {
        return true;
    }
    let creates = |flags: u64| (flags as u32) & ((libc::O_CREAT | libc::O_TRUNC) as u32) != 0;
    OPENS.iter().find(|&&(_, n, _)| n == nr).is_some_and(|&(_, _, at)| at == u8::MAX || creates(args[at as usize]))
}

pub(crate) fn syscall_name(nr: i64) -> Option<&'static str> {
    let trapped = TRAPPED.iter().map(|&(name, n)| (name, n));
    let opens = OPENS.iter().map(|&(name, n, _)| (name, n));
    trapped.chain(opens).find(|&(_, n)| n == nr).map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::super::files::Targets;
    use super::super::point::classify;
    use super::*;
    use std::path::Path;

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn traps_is_the_filters_test() {
        let with = |flags: libc::c_int| [0, 0, flags as u64, 0, 0, 0];
        assert!(traps(libc::SYS_write, &[0; 6]));
        assert!(traps(libc::SYS_renameat2, &[0; 6]));
        assert!(!traps(libc::SYS_read, &[0; 6]));
        assert!(traps(libc::SYS_openat, &with(libc::O_WRONLY | libc::O_CREAT)));
        assert!(traps(libc::SYS_openat, &with(libc::O_RDWR | libc::O_TRUNC)));
        assert!(!traps(libc::SYS_openat, &with(libc::O_RDWR | libc::O_CLOEXEC)));
        // Only the low 32 bits are the flags, as the filter reads them.
        assert!(!traps(libc::SYS_openat, &[0, 0, (libc::O_CREAT as u64) << 32, 0, 0, 0]));
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_filter_compiles() {
        assert!(filter().unwrap().len() > TRAPPED.len());
        let locks = lock_trap_set().unwrap();
        assert!(locks.filter.len() > filter().unwrap().len(), "the lock filter adds fcntl's rules");
    }

    /// The lock filter traps what the plain one does, and fcntls that set
    /// a lock; the plain one never a lock call, so a sweep's child never
    /// stops at one.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn only_the_lock_filter_traps_lock_calls() {
        let setlk = [3, libc::F_SETLKW as u64, 0, 0, 0, 0];
        assert!(traps_with_locks(libc::SYS_fcntl, &setlk) && !traps(libc::SYS_fcntl, &setlk));
        assert!(!traps_with_locks(libc::SYS_fcntl, &[3, libc::F_SETFD as u64, 0, 0, 0, 0]));
        assert!(traps_with_locks(libc::SYS_write, &[0; 6]));
        let at = |nr| classify(std::process::id(), &Targets::new(Path::new("/t/s.db"), Path::new("/t/a")), nr, setlk);
        assert_eq!(at(libc::SYS_fcntl), None, "a lock call is never a kill point");
    }
}
