//! The sweep skeleton, one for every shape: a census counts the kill points
//! of a short workload and audits the leg, then one trial per point runs,
//! spread over `--jobs` threads (each trial's tracer is the thread that
//! spawned its child, as ptrace requires).
//!
//! Crash model: see [`crate::kill::syscall`]: the child is stopped at the
//! entry of its Nth file-mutating call on the store's files or the ack
//! journal and killed there, for N = 1..=M+1. Each trial is judged exactly
//! as a timed trial is, with the census's leg audit.

use std::sync::atomic::{AtomicU64, Ordering};

use crashcells_protocol::Ready;

use super::{Context, Outcome, Trial};
use crate::harness::TraceError;
use crate::kill::syscall::{filter, sweep_points, unsupported_arch};
use crate::legaudit::Audit;

/// The compiled seccomp filter every traced child is given.
pub type Filter = &'static [seccompiler::sock_filter];

/// What a sweep learns from its census: how many kill points the workload
/// has, the child's ready record, and the leg audit of the finished census
/// (the mode the leg really ran in: a kill point may land before the header
/// or the ready record reach their final state).
#[derive(Clone, Debug)]
pub struct Census {
    pub points: u64,
    pub ready: Ready,
    pub audit: Audit,
}

/// A shape that can be swept: it counts its points, and kills at one.
pub trait Sweepable: Sync {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>>;
    fn at(&self, filter: Filter, n: u64, census: &Census) -> Trial;
}

/// What a sweep ran: the points it planned (none when it never got past its
/// preflight or its census) and its trials, the decisive trial last.
#[derive(Debug)]
pub struct Swept {
    pub planned: Option<Vec<u64>>,
    pub trials: Vec<Trial>,
}

impl Swept {
    /// A sweep that ended before it planned any point.
    pub(super) fn unplanned(trial: Trial) -> Swept {
        Swept { planned: None, trials: vec![trial] }
    }
}

/// The trials of a syscall result: the census, then a trial per point, the
/// decisive trial last. Refused tracing skips the result; a leg the census
/// shows was not honored skips it too.
pub fn sweep(ctx: &Context, seed: u64, shape: &dyn Sweepable) -> Swept {
    let filter = match preflight() {
        Ok(f) => f,
        Err(outcome) => return Swept::unplanned(Trial::ended(0, outcome)),
    };
    let census = match shape.census(filter) {
        Ok(c) => c,
        Err(trial) => return Swept::unplanned(*trial),
    };
    if !census.audit.honored {
        let mut t = Trial::ended(0, Outcome::Skip(census.audit.reason.clone()));
        t.audit = Some(census.audit);
        return Swept::unplanned(t);
    }
    let o = &ctx.options;
    let points = sweep_points(census.points, o.point, o.points, seed);
    ctx.tally.planned(points.len() as u64);
    let trials = parallel(&points, ctx.jobs, &|n| {
        let trial = shape.at(filter, n, &census);
        ctx.tally.done();
        trial
    });
    Swept { planned: Some(points), trials }
}

/// What a trace failure means for a trial: refused tracing is a skip with
/// the reason; anything else is the harness's error.
pub fn trace_outcome(e: TraceError, ctx: &Context) -> Outcome {
    match e {
        TraceError::NotPermitted(why) => Outcome::Skip(format!("syscall kill points unavailable: {why}")),
        TraceError::Deadline => Outcome::Error(format!("the traced child overstayed the {:?} deadline", ctx.deadline)),
        TraceError::Interrupted => Outcome::Interrupted("the traced child was killed by the interrupt".into()),
        TraceError::Io(why) => Outcome::Error(format!("tracing the child: {why}")),
    }
}

/// Whether syscall kill points can run here at all; `Err` is the skip or
/// error outcome that ends the result.
pub(super) fn preflight() -> Result<Filter, Outcome> {
    if let Some(why) = unsupported_arch() {
        return Err(Outcome::Skip(why));
    }
    filter().map_err(Outcome::Error)
}

/// Runs `run` for each point on up to `jobs` threads, in ascending order of
/// points. After a point that does not pass, higher points are not started,
/// and the trials kept are those up to the lowest such point, which comes
/// last: the decisive trial does not depend on scheduling.
pub fn parallel(points: &[u64], jobs: usize, run: &(dyn Fn(u64) -> Trial + Sync)) -> Vec<Trial> {
    let lowest_bad = AtomicU64::new(u64::MAX);
    let skip = |i: usize| points[i] > lowest_bad.load(Ordering::SeqCst);
    let mut trials = super::batch::parallel(points.len(), jobs, &skip, &|i| {
        let mut t = run(points[i]);
        if t.outcome == Outcome::Pass {
            t.env = None;
        } else {
            lowest_bad.fetch_min(points[i], Ordering::SeqCst);
        }
        t
    });
    let bad = lowest_bad.into_inner();
    trials.retain(|t| u64::from(t.index) <= bad);
    trials.sort_by_key(|t| (t.outcome != Outcome::Pass, t.index));
    trials
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::for_tests(2, None)
    }

    #[test]
    fn refused_tracing_skips_with_the_reason_and_a_deadline_is_an_error() {
        let skip = trace_outcome(TraceError::NotPermitted("PTRACE_TRACEME is not permitted here".into()), &ctx());
        assert!(matches!(&skip, Outcome::Skip(r) if r.contains("PTRACE_TRACEME")), "{skip:?}");
        assert!(matches!(trace_outcome(TraceError::Deadline, &ctx()), Outcome::Error(_)));
    }

    #[test]
    fn a_parallel_sweep_keeps_the_points_up_to_the_lowest_that_does_not_pass_last() {
        let points: Vec<u64> = (1..=20).collect();
        let run = |p: u64| {
            let outcome = if p.is_multiple_of(7) { Outcome::Fire(format!("at {p}")) } else { Outcome::Pass };
            Trial::ended(p as u32, outcome)
        };
        let trials = parallel(&points, 3, &run);
        let indices: Vec<u32> = trials.iter().map(|t| t.index).collect();
        assert_eq!(indices, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(trials.last().unwrap().outcome, Outcome::Fire("at 7".into()));
        assert_eq!(parallel(&points, 2, &|p| Trial::ended(p as u32, Outcome::Pass)).len(), 20);
    }
}
