//! Injections: what the tracer does to a counted call instead of killing
//! the child there, the child running on to its own end. One trait, which
//! each injecting kill mode's driver implements ([`super::fault`]), and the
//! things the tracer can do to a call ([`Injected`]).
//!
//! Crash model: none; nothing is killed. At kill point N the call is
//! changed as the mode says (made to fail, or cut short) and every other
//! call runs as it would; what the store makes of it is the clause's
//! question (`crate::pipeline::workload::fault` judges it, by the one verdict path).

pub use super::syscall::Injected;
use super::syscall::Point;

/// A kill mode that changes one call per run instead of killing.
pub trait Injection: Sync {
    /// What it does to point `p`'s call, if it changes that call at all.
    fn at(&self, p: &Point) -> Option<Injected>;

    /// The calls it changes, said after the mode's name where a `--point`
    /// names one it does not: `fails only writes (ENOSPC) and syncs (EIO)
    /// of the store's files`.
    fn changes(&self) -> &'static str;

    /// A sweep's closing line: how many writes and syncs it changed, in
    /// how many runs the child ended with an error, how many power states
    /// after a failed sync were judged.
    fn summary(&self, writes: usize, syncs: usize, failed_ends: usize, power_states: usize) -> String;
}
