//! Which calls a traced child stops at, and how: the seccomp filter an
//! exec'd child installs, the same test in the tracer's hands for a process
//! seized without a filter of its own, and the two ways of stopping they
//! give ([`Stops`]). The kill code makes the traps
//! ([`crate::kill::syscall`]); the harness only applies them.

/// Which calls a traced child stops at: the seccomp program an exec'd
/// child installs before its exec, and the same test in the tracer's hands
/// for a process seized without a filter of its own (a fork server's).
#[derive(Clone, Copy, Debug)]
pub struct Traps {
    pub filter: &'static [seccompiler::sock_filter],
    /// Whether the filter traps call `nr` with these arguments.
    pub test: fn(i64, &[u64; 6]) -> bool,
}

/// How a tracee is stopped at the calls its [`Traps`] name.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stops {
    /// The exec'd child installed the seccomp filter itself: it stops at the
    /// trapped calls only.
    Seccomp,
    /// A forked process runs under no filter of the driver's: it stops at
    /// every system call's entry and exit (`PTRACE_SYSCALL`), and the tracer
    /// passes over all but the entries the filter would trap (the test).
    Syscalls(fn(i64, &[u64; 6]) -> bool),
}
