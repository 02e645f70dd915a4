//! The cell registry: one trait a cell implements, and one table of the
//! live cells. A cell says what its child runs (its [`Shape`], with the
//! catalog's parameters) and how to judge what a crash left (its
//! [`Cell::check`]); everything between the two (spawning, killing,
//! auditing the leg, recovering twice, keeping evidence) is the trial
//! pipeline's, written once in [`crate::pipeline`].
//!
//! Adding a cell is its TOML in `cells/`, a module here, a line in
//! [`CELLS`], and the child operation it needs (docs/DESIGN.md, "Adding a
//! cell").

pub mod consume;
pub mod fork;
pub mod outbox;
pub mod prefix;
pub mod rotation;

use crashcells_protocol::{Ack, Delivery, Dump, Op};

use crate::catalog::Params;

/// Every live cell's probe, by its id in the catalog (`cells/*.toml`). The
/// only place in the driver that names a cell.
pub static CELLS: &[(&str, &dyn Cell)] = &[
    ("prefix-durability", &prefix::PrefixDurability),
    ("consume-once", &consume::ConsumeOnce),
    ("rotation-atomicity", &rotation::RotationAtomicity),
    ("fork-determinism", &fork::ForkDeterminism),
    ("outbox-exactly-once", &outbox::OutboxExactlyOnce),
];

/// The probe of the cell with catalog id `id`, if this driver has one.
pub fn find(id: &str) -> Option<&'static dyn Cell> {
    CELLS.iter().find(|(name, _)| *name == id).map(|&(_, cell)| cell)
}

/// A live cell: its workload and its judgement.
pub trait Cell: Sync {
    /// What the child runs, given the cell's catalog parameters.
    fn shape(&self, params: &Params) -> Shape;

    /// The clause: what in the recovered state violates it, given what each
    /// process acknowledged and how it ended. Determinism of recovery and
    /// the integrity check are the pipeline's, for every cell.
    fn check(&self, seen: &Seen) -> Violations;

    /// What a result reports as acknowledged: by default, every ack.
    fn acked(&self, processes: &[Process]) -> u64 {
        processes.iter().map(|p| p.acks.len() as u64).sum()
    }

    /// Whether `crashcells audit`'s crash columns run this cell: its clause
    /// is that acknowledged commits survive (a single-row commit and a
    /// multi-statement one are enough to tell which journal mode and level
    /// keep them; cells whose clause is about something else stay out of an
    /// audit of fifteen legs).
    fn answers_durability(&self) -> bool {
        false
    }
}

/// What a cell's child runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One child runs `op` until it is killed: a timed kill once `window`
    /// acks are reached (plus a seeded extra), and a syscall (or power)
    /// sweep over every kill point of `sweep_acks` operations run to the
    /// child's own end (the catalog's `sweep_ops`). With a `recovery` step,
    /// each recovery pass runs it to its end on its own copy of the crash
    /// state (the database and the transport) before `dump`: what the store
    /// does on restart (cell 5's `catch-up`).
    Workload { op: Op, window: u64, sweep_acks: u64, recovery: Option<Op> },
    /// `park`, then `racers` claimants released together by a barrier; under
    /// syscall kills, racer r0 is killed at each of its points.
    Race { racers: u32 },
}

impl Shape {
    /// The child operations the shape runs: a child that lacks one of them
    /// cannot be probed by the cell, which is then skipped.
    pub fn operations(&self) -> Vec<Op> {
        match *self {
            Shape::Workload { op, recovery, .. } => {
                [Some(op), recovery, Some(Op::Dump)].into_iter().flatten().collect()
            }
            Shape::Race { .. } => vec![Op::Park, Op::Claim, Op::Dump],
        }
    }
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

/// What a check found: a line per violation, and the facts a reader of a
/// fire needs (what was acked, what was recovered).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Violations {
    pub found: Vec<String>,
    pub details: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Catalog, Status};

    #[test]
    fn the_embedded_catalog_names_the_registered_cells_in_order() {
        let catalog = Catalog::embedded().unwrap();
        let ids: Vec<_> = catalog.cells.iter().map(|c| (c.number, c.id.as_str(), c.status)).collect();
        assert_eq!(
            ids,
            [
                (1, "prefix-durability", Status::Live),
                (2, "consume-once", Status::Live),
                (3, "rotation-atomicity", Status::Live),
                (4, "fork-determinism", Status::Live),
                (5, "outbox-exactly-once", Status::Live),
            ]
        );
    }

    #[test]
    fn a_recovery_step_is_an_operation_the_child_must_implement() {
        let shape = Shape::Workload { op: Op::Deliver, window: 1, sweep_acks: 1, recovery: Some(Op::CatchUp) };
        assert_eq!(shape.operations(), [Op::Deliver, Op::CatchUp, Op::Dump]);
        let plain = Shape::Workload { op: Op::Fork, window: 1, sweep_acks: 1, recovery: None };
        assert_eq!(plain.operations(), [Op::Fork, Op::Dump]);
    }

    #[test]
    fn every_live_cell_of_the_catalog_has_a_probe_and_every_probe_a_cell() {
        let catalog = Catalog::embedded().unwrap();
        for spec in catalog.cells.iter().filter(|c| c.status == Status::Live) {
            assert!(find(&spec.id).is_some(), "no probe for live cell {}", spec.id);
        }
        for (id, _) in CELLS {
            assert!(catalog.cells.iter().any(|c| c.id == *id), "{id} is in no catalog file");
        }
    }
}
