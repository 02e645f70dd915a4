//! Cell 6's re-executed syscall sweep: writer r0 alone, really killed at
//! each of its points, then the other writers appending on what it left.
//! It runs under `--replay off`, for a `--point` repro, to confirm a
//! recorded fire ([`crate::pipeline::race::recorded`], which uses it and so
//! must not be imported by it), and wherever the recording cannot stand.
//!
//! Crash model: a process crash of writer r0 at the entry of its Nth
//! file-mutating call; the kernel's page cache outlives it.
//!
//! Clause: the cell's (`cells::writers`): every acknowledged append of
//! every writer survives exactly once, in its writer's order, at unique
//! and contiguous positions.

use std::ops::RangeInclusive;

use crate::cells::End;
use crate::kill::syscall::{FileKind, Goal, Point};
use crate::kill::{KillPoint, Ordinal, TrialIndex};
use crate::legaudit::audit_leg;
use crate::pipeline::judge::census::{Census, Filter};
use crate::pipeline::judge::coverage::{self, Coverage};
use crate::pipeline::judge::pending::{MakeTrial, Pending};
use crate::pipeline::judge::sweep::{Sweepable, re_executed};
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::race::job::{Order, R0, Race};
use crate::pipeline::race::sweep::ready_of;
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::ended_with;

/// The syscall sweep of the writers: r0 alone, killed at each of its
/// points, then the others on what it left.
pub struct WritersSweep<'a> {
    race: &'a Race<'a>,
}

impl<'a> WritersSweep<'a> {
    pub(super) fn new(race: &'a Race<'a>) -> WritersSweep<'a> {
        WritersSweep { race }
    }

    /// One real kill at point `n`, judged on its own recovery: a recorded
    /// state's confirmation.
    pub(super) fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        self.at(filter, n, census).alone(self.race.ctx, self.race.cell)
    }
}

impl Sweepable for WritersSweep<'_> {
    /// r0 recorded to its end, alone, then the others: its points, and its
    /// ready record and leg audit for every point. The sweep visits the
    /// points after its ready record, its appends: a kill while it opens
    /// the store is one writer's crash, cell 1's, whoever runs after it.
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        let race = self.race;
        let env = race.env("census").map_err(|f| ended_with(None, Outcome::Error(Failure::census(f))))?;
        let finished = match race.run(&env, race.racers, R0::Recorded(filter), Order::R0First) {
            Ok(f) => f,
            Err(o) => return Err(ended_with(Some(env), o.of_census())),
        };
        let (points, log) = match (finished.r0_points, finished.ends.first(), finished.log) {
            (Some(points), Some(&End::Exited(0)), Some(log)) => (points, log),
            (_, _, _) => {
                let f = Failure::R0OffPath { path: "appends", ends: finished.ends };
                return Err(ended_with(Some(env), Outcome::Error(Failure::census(f))));
            }
        };
        let windows = Some(vec![appending(&log.points, points)]);
        match ready_of(&env, 0) {
            Ok(ready) => Ok(Census { points, windows, audit: audit_leg(&env.db, &ready, race.leg), ready }),
            Err(f) => Err(ended_with(Some(env), Outcome::Error(f))),
        }
    }

    /// Point `n`: r0 killed at its `n`th counted call; the others appended
    /// on top; the store they left is the trial's.
    fn at(&self, filter: Filter, n: u64, census: &Census) -> Pending {
        let index = TrialIndex::at(Ordinal(n));
        let mut trial = Trial::new(index);
        let env = match self.race.env(&format!("p{n}")) {
            Ok(env) => env,
            Err(f) => return Pending::ended(trial.conclude(Outcome::Error(f))),
        };
        let f = match self.race.run(&env, self.race.racers, R0::Traced(filter, Goal::KillAt(n)), Order::R0First) {
            Ok(f) => f,
            Err(o) => return Pending::ended(trial.conclude(o).with_env(env)),
        };
        trial.details.push(said(n, census.points, f.kill_point.is_some()));
        trial.kill_point = f.kill_point.clone().map(|kp| KillPoint { trial: index, ..kp });
        let prepared = prepare(&self.race.crash(&env, &f, Some(census)), &mut trial);
        Pending::prepared(trial, env, prepared)
    }

    fn driven(&self, census: &Census, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        self.race.trials(Some(census), indices, run)
    }
}

/// The syscall result's trials of the writers `race` and what they covered.
pub fn writers_sweep(race: &Race<'_>) -> (Vec<Trial>, Option<Coverage>) {
    let swept = re_executed(race.ctx, race.job.seed, &WritersSweep { race });
    let coverage = coverage::of(&swept, &[]);
    (swept.trials, coverage)
}

/// r0's points after its ready record (its first call on the ack
/// journal), up to its last, `total`: where it appends.
pub(super) fn appending(points: &[Point], total: u64) -> RangeInclusive<u64> {
    let ready = points.iter().find(|p| p.file == Some(FileKind::Acks)).map_or(0, |p| p.ordinal.0);
    ready + 1..=total
}

/// What became of r0 at point `n` of `of`.
pub(super) fn said(n: u64, of: u64, killed: bool) -> String {
    if killed {
        format!("r0 killed at its point {n} of {of}; the other writers then appended on what it left")
    } else {
        format!("r0 not killed: its appends ended before its point {n} of {of}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::syscall::Call;

    #[test]
    fn the_sweep_visits_the_points_after_the_ready_record() {
        let at = |n, file| Point { ordinal: Ordinal(n), syscall: Call::Sys("pwrite64"), file, offset: None, len: None };
        let points = [at(1, Some(FileKind::Database)), at(2, Some(FileKind::Acks)), at(3, Some(FileKind::Wal))];
        assert_eq!(appending(&points, 5), 3..=5);
        assert_eq!(appending(&[], 5), 1..=5, "no ready write seen: every point");
    }

    #[test]
    fn a_point_says_whether_r0_was_killed_there() {
        assert!(said(3, 20, true).starts_with("r0 killed at its point 3 of 20"));
        assert!(said(21, 20, false).contains("ended before its point 21 of 20"));
    }
}
