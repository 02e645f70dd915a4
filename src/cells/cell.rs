//! What a cell is: the trait a cell implements, what the judge sees after
//! a crash, and what it finds (the shape of what its child runs is
//! [`super::shape`]'s). Every cell
//! module imports these from here; the registry ([`super`]) lists the cells.

use crashcells_protocol::{Ack, Delivery, Dump, Op};

use super::shape::{MissingParam, Shape};

use crate::catalog::Params;

/// A live cell: its workload and its judgement.
pub trait Cell: Sync {
    /// The cell's id, as its catalog file (`cells/N-ID.toml`) names it: the
    /// one place in the driver that names the cell.
    fn id(&self) -> &'static str;

    /// What the child runs, from the cell's catalog parameters (the TOML is
    /// where they live: no default here); a parameter the shape needs and
    /// the catalog lacks is an error that names it.
    fn shape(&self, params: &Params) -> Result<Shape, MissingParam>;

    /// The clause: what in the recovered state violates it, given what each
    /// process acknowledged and how it ended. Determinism of recovery and
    /// the integrity check are the pipeline's, for every cell.
    fn check(&self, seen: &Seen) -> Violations;

    /// Every kind of violation [`Cell::check`] can find (each cell's tests
    /// check every kind they see against it): with the pipeline's own kinds
    /// ([`fire_kinds`]), the kinds a fire of this cell can have, so that a
    /// known finding naming another is refused as the typo it is.
    fn kinds(&self) -> &'static [&'static str];

    /// The workload seed of a syscall (or power) sweep, from the one derived
    /// for it: a cell whose operation is seeded (`Op::seeded`) may move it,
    /// deterministically, to one whose first `ops` operations show every
    /// shape the operation takes, so that the sweep's verdict does not
    /// depend on the draw. By default, the seed as derived. Timed trials
    /// keep drawing from their own.
    fn sweep_seed(&self, seed: u64, _ops: u64) -> u64 {
        seed
    }

    /// What a result reports as acknowledged: by default, every ack.
    fn acked(&self, processes: &[Process]) -> u64 {
        processes.iter().map(|p| p.acks.len() as u64).sum()
    }

    /// Whether `crashcells audit`'s crash columns run this cell: its clause
    /// is that acknowledged commits survive (a single-row commit and a
    /// multi-statement one are enough to tell which journal mode and level
    /// keep them; cells whose clause is about something else stay out of an
    /// audit of fifteen legs). Every cell says, so that none is left out
    /// of the audit without a word.
    fn answers_durability(&self) -> bool;
}

/// The kind of a fire whose recovered file `PRAGMA integrity_check` does
/// not pass (the pipeline's, for every cell).
pub const CORRUPT: &str = "corrupt";
/// The kind of a fire whose two recovery passes disagree (the pipeline's).
pub const NONDETERMINISTIC: &str = "nondeterministic-recovery";
/// The kind of a fire whose store reports a synchronous level its recorded
/// commits do not keep (the pipeline's, from a recording's calls).
pub const CLAIMED_LEVEL: &str = "claimed-level";
/// The kind of fault injection's clause (a): an operation acknowledged
/// though its write or sync failed (`--kill fault` only).
pub const ACKED_DESPITE_IO_ERROR: &str = "acked-despite-io-error";

/// The kind of a fire made of the store's own failure in `op`: a kind of
/// its own per operation, so that its fingerprint names what failed.
pub fn store_failed(op: Op) -> &'static str {
    match op {
        Op::Append => "store-failed-append",
        Op::Rotate => "store-failed-rotate",
        Op::Park => "store-failed-park",
        Op::Claim => "store-failed-claim",
        Op::Dump => "store-failed-dump",
        Op::Fork => "store-failed-fork",
        Op::Deliver => "store-failed-deliver",
        Op::CatchUp => "store-failed-catch-up",
        Op::CoAppend => "store-failed-co-append",
    }
}

/// Every kind a fire of `cell` can have: its check's, the pipeline's for
/// every cell (corrupt, nondeterministic recovery), the store's own failure
/// in each of `ops` (the operations its shape runs), and under an injected
/// failure (`fault`: a kill mode that fails a call, the child running on)
/// clause (a)'s.
pub fn fire_kinds(cell: &dyn Cell, ops: &[Op], fault: bool) -> Vec<&'static str> {
    let mut kinds = cell.kinds().to_vec();
    kinds.extend([CORRUPT, NONDETERMINISTIC, CLAIMED_LEVEL]);
    kinds.extend(ops.iter().map(|&op| store_failed(op)));
    if fault {
        kinds.push(ACKED_DESPITE_IO_ERROR);
    }
    kinds
}

/// A cell's check seen in its tests: every kind it found must be one it
/// declares (`Cell::kinds`), or a known finding of that kind would be
/// refused as a typo.
#[cfg(test)]
pub fn declared(kinds: &[&str], v: Violations) -> Violations {
    for f in &v.found {
        assert!(
            kinds.contains(&f.kind),
            "the check found kind `{}`, which its cell does not declare: {kinds:?}",
            f.kind
        );
    }
    v
}

/// How a process of a trial ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Killed by the driver at the trial's kill point.
    Killed,
    /// Ended on its own with this exit code.
    Exited(i32),
}

/// One process of a trial, as the judge sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    /// `child`, or the racer's name (`r0`, `r1`, ...).
    pub name: String,
    pub acks: Vec<Ack>,
    pub end: End,
}

/// What a crash left: each process's acks and end, and the recovered state.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    pub processes: &'a [Process],
    pub dump: &'a Dump,
    /// The workload's `--seed` (an operation that takes one), else 0.
    pub seed: u64,
    /// What the transport holds after recovery: every delivery the
    /// provider accepted, in order (empty for a child that sends nothing).
    pub deliveries: &'a [Delivery],
}

impl Seen<'_> {
    /// The acks of every process, in process order.
    pub fn acks(&self) -> impl Iterator<Item = &Ack> {
        self.processes.iter().flat_map(|p| &p.acks)
    }
}

/// The word for `n` of a thing, for a reader: `one` for 1, else `many`.
pub fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// One way a crash state broke a clause: its kind, stable for the same bug
/// whatever the numbers (`lost-ack`, not "acked append m3 was lost": a
/// finding's fingerprint is made of it), and the sentence a reader needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: &'static str,
    pub text: String,
}

impl Violation {
    pub fn new(kind: &'static str, text: impl Into<String>) -> Violation {
        Violation { kind, text: text.into() }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a check found: each violation, and the facts a reader of a fire
/// needs (what was acked, what was recovered).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Violations {
    pub found: Vec<Violation>,
    pub details: Vec<String>,
}

impl Violations {
    /// Records a violation of kind `kind`.
    pub fn fire(&mut self, kind: &'static str, text: impl Into<String>) {
        self.found.push(Violation::new(kind, text));
    }

    /// The violations' sentences, in order.
    pub fn texts(&self) -> Vec<&str> {
        self.found.iter().map(|v| v.text.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "the check found kind `typo`, which its cell does not declare")]
    fn a_kind_a_cell_does_not_declare_is_caught() {
        let mut v = Violations::default();
        v.fire("lost-ack", "declared");
        v.fire("typo", "not declared");
        declared(&["lost-ack"], v);
    }
}
