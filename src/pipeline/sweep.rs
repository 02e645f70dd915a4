//! The re-executed sweep's plan, for every shape ([`planned`]): a census
//! counts the kill points of a short workload and audits the leg, and the
//! points to visit are drawn. A workload's points then run through the one
//! driver ([`super::point`]'s `re_executed`); a race's ([`sweep`], for
//! [`super::race_sweep`]) one trial per point, spread over `--jobs`
//! threads (each trial's tracer is the thread that spawned its child, as
//! ptrace requires), up to the lowest point that does not pass
//! ([`super::parallel::until_first_bad`]).
//!
//! Crash model: see [`crate::kill::syscall`]: the child is stopped at the
//! entry of its Nth file-mutating call on the store's files or the ack
//! journal and killed there, for N = 1..=M+1. Each trial is judged exactly
//! as a timed trial is, with the census's leg audit.

use super::census::{Census, Filter, preflight};
use super::context::Context;
use super::outcome::{Outcome, Skip};
use super::parallel::until_first_bad;
use super::trial::Trial;
use crate::kill::syscall::sweep_points;

/// A shape that can be swept: it counts its points, and kills at one.
pub trait Sweepable: Sync {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>>;
    fn at(&self, filter: Filter, n: u64, census: &Census) -> Trial;
}

/// What a sweep ran: the points it planned (none when it never got past its
/// preflight or its census), its trials, the decisive trial last, and
/// whether their crash states were rebuilt from a recording (else the
/// child was re-run to each point), which the report says.
#[derive(Debug)]
pub struct Swept {
    pub planned: Option<Vec<u64>>,
    pub trials: Vec<Trial>,
    pub recorded: bool,
    /// How many distinct crash states its landed points left (the same
    /// bytes in every file of the store and the same acks count once): a
    /// recorded sweep's; none for a re-executed one.
    pub distinct: Option<u64>,
}

impl Swept {
    /// A sweep that ended before it planned any point.
    pub fn unplanned(trial: Trial) -> Swept {
        Swept { planned: None, trials: vec![trial], recorded: false, distinct: None }
    }

    /// A sweep that ended at its census because the leg was not honored.
    pub fn skipped(census: Census) -> Swept {
        let mut t = Trial::ended(0, Outcome::Skip(Skip::NotHonored(census.audit.reason.clone())));
        t.audit = Some(census.audit);
        Swept::unplanned(t)
    }
}

/// The trials of a syscall result: the census, then a trial per point, the
/// decisive trial last. Refused tracing skips the result; a leg the census
/// shows was not honored skips it too.
pub fn sweep(ctx: &Context, seed: u64, shape: &dyn Sweepable) -> Swept {
    let (filter, census, points) = match planned(ctx, seed, shape) {
        Ok(p) => p,
        Err(swept) => return *swept,
    };
    ctx.tally.planned(points.len() as u64);
    let trials = each_point(&points, ctx.jobs, &|n| {
        let trial = shape.at(filter, n, &census);
        ctx.tally.done();
        trial
    });
    Swept { planned: Some(points), trials, recorded: false, distinct: None }
}

/// A sweep's plan: the filter, the census and the points to visit, or how
/// the sweep ends before its first point (tracing refused, a census that
/// failed, a leg not honored: a skip).
pub fn planned(ctx: &Context, seed: u64, shape: &dyn Sweepable) -> Result<(Filter, Census, Vec<u64>), Box<Swept>> {
    let filter = preflight().map_err(|outcome| Box::new(Swept::unplanned(Trial::ended(0, outcome))))?;
    let census = shape.census(filter).map_err(|trial| Box::new(Swept::unplanned(*trial)))?;
    if !census.audit.honored {
        return Err(Box::new(Swept::skipped(census)));
    }
    let o = &ctx.options;
    let points = sweep_points(census.candidates(), o.point, o.points, seed);
    Ok((filter, census, points))
}

/// Runs `run` for each point, up to the lowest that does not pass, which
/// comes last: the decisive trial does not depend on scheduling. A passing
/// trial's folder is dropped at once.
pub fn each_point(points: &[u64], jobs: usize, run: &(dyn Fn(u64) -> Trial + Sync)) -> Vec<Trial> {
    until_first_bad(points.len(), jobs, &|i| points[i], &|i| {
        let mut t = run(points[i]);
        if t.outcome.is_pass() {
            t.env = None;
        }
        let bad = t.is_bad().then_some(points[i]);
        (t, bad)
    })
    .outputs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::pipeline::outcome::Finding;

    fn fire(p: u64) -> Outcome {
        Outcome::Fire(Finding { violations: vec![Violation::new("x", format!("at {p}"))], power: None, fault: None })
    }

    #[test]
    fn a_parallel_sweep_keeps_the_points_up_to_the_lowest_that_does_not_pass_last() {
        let points: Vec<u64> = (1..=20).collect();
        let run = |p: u64| Trial::ended(p as u32, if p.is_multiple_of(7) { fire(p) } else { Outcome::Pass });
        let trials = each_point(&points, 3, &run);
        let indices: Vec<u32> = trials.iter().map(|t| t.index).collect();
        assert_eq!(indices, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(trials.last().unwrap().outcome, fire(7));
        assert_eq!(each_point(&points, 2, &|p| Trial::ended(p as u32, Outcome::Pass)).len(), 20);
    }
}
