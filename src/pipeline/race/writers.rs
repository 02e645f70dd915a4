//! Cell 6's crash sources: writers that append to one session at once
//! (`co-append`), one of them killed while the others run on.
//!
//! Crash model: a process crash of writer r0 only. Timed: every writer is
//! released together and r0's group gets `SIGKILL` once its journal holds a
//! seeded number of acks; the others append on to their `--stop-after`.
//! Syscall: r0 is released alone, stopped at the entry of its Nth
//! file-mutating call and killed there; the others are then released and
//! append on top of what its kill left (a hot journal they must roll back).
//! The reads-first schedule ([`crate::pipeline::race::schedule`]) comes
//! before the sweep. The sweep's states come from one recording of r0
//! ([`crate::pipeline::race::recorded`]); re-executed (this module's
//! [`WritersSweep`]) under `--replay off`, for a `--point` repro, to
//! confirm a recorded fire, and wherever the recording cannot stand.
//!
//! Clause: the cell's (`cells::writers`): every acknowledged append of
//! every writer survives exactly once, in its writer's order, at unique
//! and contiguous positions.

use std::ffi::OsString;
use std::ops::RangeInclusive;
use std::path::Path;

use crashcells_protocol::{Op, OpArgs};

use crate::cells::{End, WritersShape};
use crate::harness::Launch;
use crate::journal;
use crate::kill::syscall::{FileKind, Goal, Point};
use crate::kill::timed::{WaitError, timed_target, wait_for_acks};
use crate::kill::{KillPoint, Ordinal, TrialIndex};
use crate::legaudit::audit_leg;
use crate::pipeline::judge::census::{Census, Filter};
use crate::pipeline::judge::coverage::{self, Coverage};
use crate::pipeline::judge::pending::{MakeTrial, Pending};
use crate::pipeline::judge::sweep::{Sweepable, re_executed};
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::pipeline::race::job::{Order, R0, Race, acks_of, barrier_of};
use crate::pipeline::race::schedule::noted;
use crate::pipeline::race::sweep::ready_of;
use crate::pipeline::run::context::Scope;
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::ended_with;
use crate::trialdir::TrialEnv;

/// A writers' job under its kill mode: timed trials of `appends` appends
/// each; under syscall kills the reads-first schedule, then (unless it
/// fired) the sweep, both of `sweep_appends` appends each. The writers take
/// no other mode (`crate::cells::WritersShape`'s `takes`: the dispatch
/// skips the others).
pub fn shaped(
    scope: Scope<'_>,
    shape: WritersShape,
    timed: &[TrialIndex],
    re_execute: bool,
) -> (Vec<Trial>, Option<Coverage>) {
    let WritersShape { writers, appends, window, sweep_appends } = shape;
    if scope.job.kill.is_timed() {
        return (Race::writers(scope, (writers, appends)).timed_writers(window, timed), None);
    }
    let short = Race::writers(scope, (writers, sweep_appends));
    let (scheduled, said) = short.scheduled();
    if scheduled.iter().any(Trial::is_bad) {
        return (scheduled, None);
    }
    if re_execute {
        return noted(&said, writers_sweep(&short));
    }
    // r0 recorded once, the other writers run on each state rebuilt from it.
    noted(&said, crate::pipeline::race::recorded::run(&short, &short))
}

impl Race<'_> {
    /// Writer `r`'s arguments: its appends to `main`, on `barrier`, ending
    /// after `stop` of them (or when killed).
    pub(super) fn writer_args(&self, env: &TrialEnv, r: u32, barrier: &Path, stop: Option<u64>) -> Vec<OsString> {
        let args =
            OpArgs::new(Op::CoAppend).db(&env.db).acks(&acks_of(env, r)).writer(&format!("r{r}")).barrier(barrier);
        match stop {
            Some(n) => args.stop_after(n),
            None => args,
        }
        .mutant(self.ctx.mutant())
        .to_args()
    }

    /// The timed trials `indices` of a writers' result, up to the first
    /// that does not pass, through the one driver.
    pub fn timed_writers(&self, window: u64, indices: &[TrialIndex]) -> Vec<Trial> {
        self.trials(None, indices, &|i| self.timed_writer(window, i))
    }

    /// Trial `index`: every writer released together, r0 killed at its
    /// seeded target of acks.
    fn timed_writer(&self, window: u64, index: TrialIndex) -> Pending {
        let env = match self.env(&format!("t{index}")) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        let target = timed_target(window, crate::seed::derive(self.job.seed, &[&index.to_string()]));
        let raced = self.run(&env, self.racers, R0::Timed { target, trial: index }, Order::Together);
        let prepared = raced.and_then(|f| {
            trial.kill_point = f.kill_point.clone();
            trial.details.push(format!("r0 killed once it had acked {target} appends or more, the others running on"));
            prepare(&self.crash(&env, &f, None), &mut trial)
        });
        Pending::prepared(trial, env, prepared)
    }

    /// Spawns r0 untraced (on its tracer's thread, as a traced r0 is) and
    /// kills its group once its journal holds `target` acks.
    pub(super) fn timed_r0(
        &self,
        env: &TrialEnv,
        order: Order,
        target: u64,
        trial: TrialIndex,
    ) -> Result<KillPoint, Outcome> {
        // Until killed, as a timed workload runs: a stop would race the kill.
        let barrier = barrier_of(env, 0, order);
        let (stderr, args, acks) =
            (env.path("racer-r0.stderr"), self.writer_args(env, 0, &barrier, None), acks_of(env, 0));
        let launch = Launch { args: &args, home: &env.home, trial: env.dir(), stdout: None, stderr: Some(&stderr) };
        // r0 waits at its barrier while the others start: its deadline covers their start too.
        let deadline = self.ctx.deadline * 2;
        let mut child = self
            .ctx
            .child
            .spawn(&launch, deadline)
            .map_err(|e| Outcome::Error(Failure::RacerStart { racer: 0, why: e.to_string() }))?;
        let reached = wait_for_acks(&mut child, &acks, target, deadline, None).map_err(|e| match e {
            WaitError::Exited { exit, acks: n, stderr_tail } => {
                let failure = Failure::EndedEarly { exit, acks: n, stderr: stderr_tail };
                let ready = journal::parse(&std::fs::read(&acks).unwrap_or_default()).ok().and_then(|j| j.ready);
                if ready.is_some() { Outcome::store_failure(Op::CoAppend, failure) } else { Outcome::Error(failure) }
            }
            WaitError::Io(e) => Outcome::Error(Failure::AckJournal(e.to_string())),
            WaitError::Interrupted => Outcome::Interrupted(Interruption::WaitingForAcks),
            WaitError::Deadline { acks: n } => {
                Outcome::Error(Failure::Stalled { acks: n, target, deadline, stderr: child.stderr_tail() })
            }
        });
        let seen = journal::Tail::default().poll(&acks).map_or(0, |l| l.saturating_sub(1));
        let reaped =
            child.kill_and_reap().check().map_err(|error| Outcome::Error(Failure::RacerReap { racer: 0, error }));
        let reached = reached?;
        reaped?;
        Ok(KillPoint { trial, after_acks: seen.max(reached.acks), ..KillPoint::default() })
    }
}

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
