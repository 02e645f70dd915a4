//! The shapes of what a cell's child runs, and what differs between them:
//! the operations a shape needs, the processes one trial starts, how it
//! takes each kill mode, and which operation a process that refused it ran.
//! Each shape is a struct that implements [`ShapeKind`]; [`Shape`] holds one
//! and dispatches to it once ([`Shape::kind`]). Its crash sources are the
//! pipeline's (`pipeline/result/dispatch.rs`, `shaped`: one arm per shape).
//!
//! Adding a shape is a struct, its `impl ShapeKind`, a variant here and its
//! arm in `kind`, and its sources' arm in the dispatch: the compiler names
//! each (docs/design/adding.md, "A cell of another shape").

use crashcells_protocol::{Op, Ready};

use crate::catalog::Params;
use crate::killmode::{KillMode, Source};

/// A parameter a cell's shape needs that its catalog file does not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("field `params.{0}`: the cell's shape needs it")]
pub struct MissingParam(pub &'static str);

/// The parameter `name`'s value, or the error that names it.
pub fn need<T>(value: Option<T>, name: &'static str) -> Result<T, MissingParam> {
    value.ok_or(MissingParam(name))
}

/// What a cell's child runs: one of the shapes, each with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Workload(WorkloadShape),
    Race(RaceShape),
    Writers(WritersShape),
}

impl Shape {
    /// The shape's behaviour. Besides this match, only the pipeline's
    /// `shaped` matches the shapes, for their crash sources.
    pub fn kind(&self) -> &dyn ShapeKind {
        match self {
            Shape::Workload(s) => s,
            Shape::Race(s) => s,
            Shape::Writers(s) => s,
        }
    }

    /// A workload of `op` with the catalog's `window` (the timed kill's) and
    /// `sweep_ops` (a sweep's operations), and the recovery step if any.
    pub fn workload(op: Op, params: &Params, recovery: Option<Op>) -> Result<Shape, MissingParam> {
        let window = need(params.window, "window")?;
        let sweep_acks = need(params.sweep_ops, "sweep_ops")?;
        Ok(Shape::Workload(WorkloadShape { op, window, sweep_acks, recovery }))
    }
}

/// What differs between the shapes, besides their crash sources.
pub trait ShapeKind {
    /// The child operations it runs: a child that lacks one of them cannot
    /// be probed by the cell, which is then skipped.
    fn operations(&self) -> Vec<Op>;

    /// The most processes one trial starts at once: the run's pool keeps
    /// that many warm per unit (the pool's crowd).
    fn crowd(&self) -> u32;

    /// How a result of this shape takes kill mode `kill`.
    fn takes(&self, kill: KillMode) -> Taking;

    /// Whether its processes race: one exec'd run that passes proves
    /// little, so a fire found through the fork server is tried more often.
    fn racy(&self) -> bool;

    /// The operation a process of a trial ran when it said it does not
    /// implement it (exit 69); `None` when no operation of the shape is it.
    fn refused(&self, who: Unsupported) -> Option<Op>;

    /// The first operation of the shape that `ready` does not list.
    fn missing(&self, ready: &Ready) -> Option<Op> {
        self.operations().into_iter().find(|&op| !ready.implements(op))
    }
}

/// How a shape takes a kill mode: what the plan and the dispatch do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taking {
    /// It runs the mode's crash source.
    Killed,
    /// It runs without a kill, reported as the mode that kills nothing
    /// (`none`): a race is its own probe.
    Free,
    /// It is not planned: it has nothing to show without a kill.
    Unplanned,
    /// It is planned, and its result is a skip for this reason.
    Skip(&'static str),
}

/// Which process of a trial said it does not implement its operation
/// (exit 69, docs/PROTOCOL.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// The workload's child (`rotate`, `fork`, ...).
    Workload,
    /// A race's `park`.
    Park,
    /// A racer: a claimant, or a writer.
    Claim,
}

/// One child runs `op` until it is killed: a timed kill once `window` acks
/// are reached (plus a seeded extra), and a syscall (or power) sweep over
/// every kill point of `sweep_acks` operations run to the child's own end
/// (the catalog's `sweep_ops`). With a `recovery` step, each recovery pass
/// runs it to its end on its own copy of the crash state (the database and
/// the transport) before `dump`: what the store does on restart (cell 5's
/// `catch-up`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadShape {
    pub op: Op,
    pub window: u64,
    pub sweep_acks: u64,
    pub recovery: Option<Op>,
}

impl ShapeKind for WorkloadShape {
    fn operations(&self) -> Vec<Op> {
        [Some(self.op), self.recovery, Some(Op::Dump)].into_iter().flatten().collect()
    }

    fn crowd(&self) -> u32 {
        1
    }

    /// Every mode that kills (or injects) runs its source.
    fn takes(&self, kill: KillMode) -> Taking {
        if kill.kills() { Taking::Killed } else { Taking::Unplanned }
    }

    fn racy(&self) -> bool {
        false
    }

    fn refused(&self, who: Unsupported) -> Option<Op> {
        match who {
            Unsupported::Workload => Some(self.op),
            Unsupported::Park => Some(Op::Park),
            Unsupported::Claim => Some(Op::Claim),
        }
    }
}

/// `park`, then `racers` claimants released together by a barrier; under
/// syscall kills, racer r0 is killed at each of its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaceShape {
    pub racers: u32,
}

/// Why power loss skips a race.
const RACE_POWER: &str = "power-loss states are not modelled for races: a race's crash states depend on the other \
     racers, which one recording cannot stand for";

impl ShapeKind for RaceShape {
    fn operations(&self) -> Vec<Op> {
        vec![Op::Park, Op::Claim, Op::Dump]
    }

    fn crowd(&self) -> u32 {
        self.racers
    }

    /// A timed kill leaves the race free; a syscall kill kills racer r0 at
    /// every point of its winning and losing claims. Every mode is named:
    /// a new one must say how a race takes it.
    fn takes(&self, kill: KillMode) -> Taking {
        match kill {
            KillMode::Timed | KillMode::None => Taking::Free,
            KillMode::Syscall => Taking::Killed,
            KillMode::Power | KillMode::Torn => Taking::Skip(RACE_POWER),
            KillMode::Fault => Taking::Skip(
                "fault injection is not run on races: its clause is about one workload's own writes and acks, and \
                 a race's store is written by every racer",
            ),
            KillMode::ShortWrite => Taking::Skip(
                "short writes are not run on races: their clause is about one workload's own writes, and a race's \
                 store is written by every racer",
            ),
        }
    }

    fn racy(&self) -> bool {
        true
    }

    fn refused(&self, who: Unsupported) -> Option<Op> {
        match who {
            Unsupported::Workload => None,
            Unsupported::Park => Some(Op::Park),
            Unsupported::Claim => Some(Op::Claim),
        }
    }
}

/// `writers` processes appending to one session at once (`co-append`),
/// released by a barrier, each `appends` times; writer r0 is killed at
/// `window` acks (plus a seeded extra) while the others run on, or at each
/// point of `sweep_appends` appends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritersShape {
    pub writers: u32,
    pub appends: u64,
    pub window: u64,
    pub sweep_appends: u64,
}

/// Why a writers' result skips a kill mode that is neither timed nor syscall.
const PROCESS_CRASH_ONLY: &str = "concurrent writers are probed under process crashes (timed and syscall kills); durability per journal mode is cell 1's";

impl ShapeKind for WritersShape {
    fn operations(&self) -> Vec<Op> {
        vec![Op::CoAppend, Op::Dump]
    }

    fn crowd(&self) -> u32 {
        self.writers
    }

    /// Process crashes only: a timed kill of r0 among running writers, or
    /// a syscall sweep of r0.
    fn takes(&self, kill: KillMode) -> Taking {
        match kill.mode().source {
            Source::Timed | Source::Syscall => Taking::Killed,
            Source::NoKill => Taking::Unplanned,
            Source::Power { .. } | Source::Injected(_) => Taking::Skip(PROCESS_CRASH_ONLY),
        }
    }

    fn racy(&self) -> bool {
        true
    }

    /// A writer is a racer whose operation is `co-append`.
    fn refused(&self, who: Unsupported) -> Option<Op> {
        match who {
            Unsupported::Workload => None,
            Unsupported::Park => Some(Op::Park),
            Unsupported::Claim => Some(Op::CoAppend),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKLOAD: Shape = Shape::Workload(WorkloadShape { op: Op::Rotate, window: 1, sweep_acks: 1, recovery: None });
    const RACE: Shape = Shape::Race(RaceShape { racers: 3 });
    const WRITERS: Shape = Shape::Writers(WritersShape { writers: 2, appends: 4, window: 1, sweep_appends: 1 });

    #[test]
    fn a_recovery_step_is_an_operation_the_child_must_implement() {
        let shape = WorkloadShape { op: Op::Deliver, window: 1, sweep_acks: 1, recovery: Some(Op::CatchUp) };
        assert_eq!(shape.operations(), [Op::Deliver, Op::CatchUp, Op::Dump]);
        let plain = WorkloadShape { recovery: None, op: Op::Fork, ..shape };
        assert_eq!(plain.operations(), [Op::Fork, Op::Dump]);
    }

    /// The pool starts a race's claimants or a writers' writers at once.
    #[test]
    fn a_shape_starts_its_racers_together_and_a_workload_one_child() {
        let crowds: Vec<u32> = [WORKLOAD, RACE, WRITERS].iter().map(|s| s.kind().crowd()).collect();
        assert_eq!(crowds, [1, 3, 2]);
    }

    /// A workload runs every mode that kills; a race runs free where a
    /// timed kill is asked; the writers take process crashes only.
    #[test]
    fn each_shape_takes_each_kill_mode_its_own_way() {
        let taken = |s: Shape| KillMode::all().map(|k| s.kind().takes(k)).collect::<Vec<_>>();
        let w = taken(WORKLOAD);
        assert_eq!(w[..3], [Taking::Killed, Taking::Killed, Taking::Unplanned]);
        assert!(w[3..].iter().all(|t| *t == Taking::Killed), "{w:?}");
        let r = taken(RACE);
        assert_eq!(r[..3], [Taking::Free, Taking::Killed, Taking::Free]);
        assert!(r[3..].iter().all(|t| matches!(t, Taking::Skip(why) if why.contains("races"))), "{r:?}");
        let c = taken(WRITERS);
        assert_eq!(c[..3], [Taking::Killed, Taking::Killed, Taking::Unplanned]);
        assert!(c[3..].iter().all(|t| *t == Taking::Skip(PROCESS_CRASH_ONLY)), "{c:?}");
    }

    /// A racer that refused ran the race's claim or the writers' co-append.
    #[test]
    fn a_refused_operation_is_the_one_its_process_ran() {
        let refused = |s: Shape, who| s.kind().refused(who);
        assert_eq!(refused(WORKLOAD, Unsupported::Workload), Some(Op::Rotate));
        assert_eq!(refused(RACE, Unsupported::Claim), Some(Op::Claim));
        assert_eq!(refused(RACE, Unsupported::Workload), None);
        assert_eq!(refused(WRITERS, Unsupported::Claim), Some(Op::CoAppend));
        assert_eq!(refused(WRITERS, Unsupported::Park), Some(Op::Park));
        assert!(RACE.kind().racy() && WRITERS.kind().racy() && !WORKLOAD.kind().racy());
    }
}
