//! The re-executed sweep, for every shape ([`re_executed`]): a census
//! counts the kill points of a short workload (or of r0's two claims) and
//! audits the leg, the points to visit are drawn ([`planned`]), and each
//! point's real kill is a trial of the one driver ([`crate::pipeline::judge::pending`]):
//! its store recovered in a batch with its wave's, a point that does not
//! pass recovered again alone, no wave after the one that decided. Each
//! trial's tracer is the thread that spawned its child, as ptrace
//! requires: the driver's threads make the units.
//!
//! Crash model: see [`crate::kill::syscall`]: the child is stopped at the
//! entry of its Nth file-mutating call on the store's files or the ack
//! journal and killed there, for N = 1..=M+1. Each trial is judged exactly
//! as a timed trial is, with the census's leg audit.

use crate::kill::syscall::sweep_points;
use crate::kill::{Ordinal, TrialIndex};
use crate::pipeline::judge::census::{Census, Filter, preflight};
use crate::pipeline::judge::pending::{MakeTrial, Pending};
use crate::pipeline::outcome::{Failure, Outcome, Skip};
use crate::pipeline::run::context::Context;
use crate::pipeline::trial::Trial;

/// A shape that can be swept: it counts its points, kills at one (read up
/// to its recovery), and runs a result's points through the one driver
/// with its own recovery home and labels.
pub trait Sweepable: Sync {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>>;
    fn at(&self, filter: Filter, n: u64, census: &Census) -> Pending;
    fn driven(&self, census: &Census, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial>;
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
        let mut t = Trial::ended(TrialIndex::CENSUS, Outcome::Skip(Skip::NotHonored(census.audit.reason.clone())));
        t.audit = Some(census.audit);
        Swept::unplanned(t)
    }
}

/// The trials of a re-executed syscall result: the census, then a real
/// kill at each point through the one driver, the decisive trial last.
/// Refused tracing skips the result; a leg the census shows was not
/// honored skips it too.
pub fn re_executed(ctx: &Context, seed: u64, shape: &dyn Sweepable) -> Swept {
    let (filter, census, points) = match planned(ctx, seed, shape) {
        Ok(p) => p,
        Err(swept) => return *swept,
    };
    let indices: Vec<TrialIndex> = points.iter().map(|&n| TrialIndex::at(Ordinal(n))).collect();
    let trials = shape.driven(&census, &indices, &|n| shape.at(filter, n.ordinal().0, &census));
    Swept { planned: Some(points), trials, recorded: false, distinct: None }
}

/// A sweep's plan: the filter, the census and the points to visit, or how
/// the sweep ends before its first point (tracing refused, a census that
/// failed, a leg not honored: a skip).
pub fn planned(ctx: &Context, seed: u64, shape: &dyn Sweepable) -> Result<(Filter, Census, Vec<u64>), Box<Swept>> {
    let filter =
        preflight().map_err(|outcome| Box::new(Swept::unplanned(Trial::ended(TrialIndex::CENSUS, outcome))))?;
    let census = shape.census(filter).map_err(|trial| Box::new(Swept::unplanned(*trial)))?;
    if !census.audit.honored {
        return Err(Box::new(Swept::skipped(census)));
    }
    let o = &ctx.options;
    if let Some(outside) = point_outside(o.point, census.points) {
        return Err(Box::new(Swept::unplanned(Trial::ended(TrialIndex::CENSUS, outside))));
    }
    let points = sweep_points(census.candidates(), o.point, o.points, seed);
    Ok((filter, census, points))
}

/// `--point N` where the census counted fewer points: the error that says
/// the plan's range, where a sweep of no point would pass.
pub fn point_outside(point: Option<u64>, points: u64) -> Option<Outcome> {
    let n = point.filter(|&n| n == 0 || n > points)?;
    Some(Outcome::Error(Failure::PointOutside { point: n, points }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--point` beyond the census's points (or none asked) leaves the
    /// sweep be; only a point outside `1..=points` ends it, naming the range.
    #[test]
    fn a_point_outside_the_census_is_an_error_naming_its_range() {
        assert_eq!(point_outside(None, 10), None);
        assert_eq!(point_outside(Some(10), 10), None);
        let Some(Outcome::Error(e)) = point_outside(Some(11), 10) else { panic!("no error") };
        assert_eq!(e.to_string(), "--point 11 is outside the plan: this sweep has kill points 1 to 10");
    }
}
