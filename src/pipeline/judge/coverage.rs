//! What a syscall result really tested: the kill points its sweep planned,
//! the points where a kill landed (the child was stopped at that call and
//! killed before it finished), per path of the killed process where it has
//! several, and why the two differ when they do.
//!
//! Crash model: see [`crate::kill::syscall`]. A planned point does not land
//! when the sweep stopped before it (every point after the first that does
//! not pass is left out) or when the child ended before reaching it (its
//! path was shorter than the census's). A report that counts trials alone
//! would claim both as tested.

use std::ops::RangeInclusive;

use crate::kill::TrialIndex;
use crate::model::PathPoints;
use crate::pipeline::judge::sweep::Swept;
use crate::pipeline::trial::Trial;

/// One path of the killed process, as a range of the sweep's points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    /// `winning-claim`, `losing-claim`.
    pub name: &'static str,
    pub points: RangeInclusive<u64>,
}

/// Planned and landed kill points of one result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub planned: u64,
    pub landed: u64,
    pub by_path: Vec<PathPoints>,
    /// Why fewer landed than were planned, one phrase per cause.
    pub why: Vec<String>,
    /// The states were rebuilt from a recording (else re-executed).
    pub recorded: bool,
    /// How many distinct crash states the landed points left, if known.
    pub distinct: Option<u64>,
}

/// The coverage of a sweep whose points split into `paths` (none: one path);
/// `None` when the sweep planned nothing (tracing refused, a census that
/// failed or showed the leg was not honored).
pub fn of(swept: &Swept, paths: &[Path]) -> Option<Coverage> {
    let planned = swept.planned.as_ref()?;
    let landed: Vec<u64> = swept.trials.iter().filter(|t| landed(t)).map(|t| t.index.ordinal().0).collect();
    let ran: Vec<u64> = swept.trials.iter().map(|t| t.index.ordinal().0).collect();
    let mut c = Coverage {
        planned: planned.len() as u64,
        landed: landed.len() as u64,
        recorded: swept.recorded,
        distinct: swept.distinct,
        ..Coverage::default()
    };
    for p in paths {
        let within = |points: &[u64]| points.iter().filter(|n| p.points.contains(n)).count() as u64;
        c.by_path.push(PathPoints { path: p.name.into(), planned: within(planned), landed: within(&landed) });
    }
    let not_run = planned.iter().filter(|n| !ran.contains(n)).count();
    if not_run > 0 {
        let last = swept.trials.last().map_or(TrialIndex::CENSUS, |t| t.index);
        c.why.push(format!(
            "the sweep stopped at point {last}, the first that did not pass: {not_run} planned after it did not run"
        ));
    }
    let unreached: Vec<u64> = ran.iter().copied().filter(|n| *n > 0 && !landed.contains(n)).collect();
    c.why.extend(unreached_phrases(&unreached, paths));
    Some(c)
}

/// Whether a trial's kill landed: its child was stopped at the trial's point
/// and killed there (a trial that ended before its point, or before its
/// child started, has no kill point).
fn landed(t: &Trial) -> bool {
    t.index > TrialIndex::CENSUS && t.kill_point.as_ref().is_some_and(|k| k.ordinal.is_some())
}

/// "at 3 points the child ended before its kill point", per path if any.
fn unreached_phrases(unreached: &[u64], paths: &[Path]) -> Vec<String> {
    if unreached.is_empty() {
        return Vec::new();
    }
    let outside = unreached.iter().filter(|u| !paths.iter().any(|p| p.points.contains(u))).count();
    if paths.is_empty() || outside > 0 {
        return vec![format!("at {} points the child ended before its kill point", unreached.len())];
    }
    paths
        .iter()
        .filter_map(|p| {
            let n = unreached.iter().filter(|u| p.points.contains(u)).count();
            (n > 0).then(|| {
                format!(
                    "at {n} points of the {} the killed process ended before its kill point",
                    p.name.replace('-', " ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::KillPoint;
    use crate::pipeline::Outcome;

    fn trial(n: u32, landed: bool, outcome: Outcome) -> Trial {
        let mut t = Trial::ended(TrialIndex::nth(n), outcome);
        if landed {
            t.kill_point =
                Some(KillPoint { trial: TrialIndex::nth(n), ordinal: Some(u64::from(n)), ..KillPoint::default() });
        }
        t
    }

    #[test]
    fn every_planned_point_landed_is_equal_counts_and_no_reason() {
        let swept = Swept {
            planned: Some(vec![1, 2, 3]),
            trials: (1..=3).map(|n| trial(n, true, Outcome::Pass)).collect(),
            recorded: true,
            distinct: None,
        };
        let c = of(&swept, &[]).unwrap();
        assert_eq!((c.planned, c.landed, c.why.len(), c.recorded), (3, 3, 0, true));
    }

    #[test]
    fn a_sweep_stopped_at_a_fire_says_how_many_points_did_not_run() {
        let mut trials: Vec<Trial> = (1..=2).map(|n| trial(n, true, Outcome::Pass)).collect();
        trials.push(trial(3, true, Outcome::Error(crate::pipeline::outcome::Failure::NoKill)));
        let c = of(&Swept { planned: Some((1..=10).collect()), trials, recorded: false, distinct: None }, &[]).unwrap();
        assert_eq!((c.planned, c.landed), (10, 3));
        assert_eq!(
            c.why,
            ["the sweep stopped at point 3, the first that did not pass: 7 planned after it did not run"]
        );
    }

    #[test]
    fn points_the_child_never_reached_are_counted_per_path() {
        let paths = [Path { name: "winning-claim", points: 1..=3 }, Path { name: "losing-claim", points: 4..=6 }];
        let trials = (1..=6).map(|n| trial(n, n != 6 && n != 5, Outcome::Pass)).collect();
        let c =
            of(&Swept { planned: Some((1..=6).collect()), trials, recorded: false, distinct: None }, &paths).unwrap();
        assert_eq!((c.planned, c.landed), (6, 4));
        assert_eq!(c.by_path[0], PathPoints { path: "winning-claim".into(), planned: 3, landed: 3 });
        assert_eq!(c.by_path[1], PathPoints { path: "losing-claim".into(), planned: 3, landed: 1 });
        assert_eq!(c.why, ["at 2 points of the losing claim the killed process ended before its kill point"]);
    }

    #[test]
    fn a_sweep_that_planned_nothing_has_no_coverage() {
        let swept = Swept {
            recorded: false,
            planned: None,
            distinct: None,
            trials: vec![trial(0, false, Outcome::Skip(crate::pipeline::outcome::Skip::NoTracing("ptrace".into())))],
        };
        assert_eq!(of(&swept, &[]), None);
    }
}
