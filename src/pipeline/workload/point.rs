//! The re-executed syscall crash source of a workload cell: the child runs
//! traced and is killed at its Nth kill point, for real; and the census
//! that counts a workload's points by running it traced to its end. A
//! recorded sweep's fire is confirmed this way (one kill, recovered alone),
//! and a `--point` repro and `--replay off` (or a recording whose
//! self-check disagrees) sweep their points this way, each point's folder
//! a trial of the one driver ([`crate::pipeline::judge::pending`]).
//!
//! Crash model: the child is stopped at the entry of its Nth file-mutating
//! call on the store's files, the ack journal or the transport, and its
//! group gets `SIGKILL` there: the call never runs. The point after the
//! last call is the child's own end (exit 0 after `--stop-after`).

use crate::harness::Exit;
use crate::kill::syscall::{Call, Driven, Goal, Point, drive, drive_observed};
use crate::kill::{KillPoint, Ordinal, TrialIndex};
use crate::model::Trace;
use crate::pipeline::judge::census::{Census, Filter, trace_outcome};
use crate::pipeline::judge::pending::{MakeTrial, Pending};
use crate::pipeline::judge::sweep::{Sweepable, Swept, re_executed};
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::{Workload, ended_well, ended_with};
use crate::trialdir::TrialEnv;

/// What a point that the child's path does not reach is: a sweep's point
/// (a store that does not make the same calls on every run ended well
/// before it: its own end is the state, and the point did not land), or an
/// exact point (a recorded fire's confirming kill: not the fired state, so
/// the child's end is reported as it ended, for the confirmation to read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    Sweep,
    Exact,
}

/// The kill point of a sweep's point `goal` that a child which ended well
/// after `counted` points never reached: the child's own end is the state
/// judged (a `SIGKILL` after a clean exit leaves what the exit left), and no
/// ordinal, so coverage counts the point as not landed and says why ("the
/// child ended before its kill point"). Before, a store whose path ran
/// shorter than the census's (a thread pool's writes) was reported as
/// having failed its operation: a fire on the plain path for a store that
/// did nothing wrong.
fn unreached(goal: Goal, counted: u64) -> KillPoint {
    let trial = match goal {
        Goal::KillAt(n) => n,
        _ => counted + 1,
    };
    KillPoint { ordinal: None, ..Point::end(Ordinal(counted + 1)).kill_point(TrialIndex::at(Ordinal(trial)), 0) }
}

impl Sweepable for Workload<'_> {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        self.count_points(filter)
    }

    fn at(&self, filter: Filter, n: u64, census: &Census) -> Pending {
        self.ctx.pool.unit(&self.ctx.interrupt, || self.killed_at(filter, n, census, Reach::Sweep))
    }

    fn driven(&self, census: &Census, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        self.trials(Some(census), indices, run)
    }
}

impl Workload<'_> {
    /// Runs the workload traced to its end, counting its points (and one
    /// more: the state its own end left), and audits the leg.
    fn count_points(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        // A workload that may grow to cross a checkpoint grows here as it
        // does for a recorded sweep, so that point N is the same call.
        if self.checkpoint_ops.is_some() {
            return self.recording(filter).map(|r| r.census);
        }
        self.ctx.pool.unit(&self.ctx.interrupt, || self.counted(filter))
    }

    fn counted(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        let env = self.env("census").map_err(|f| ended_with(None, Outcome::Error(Failure::census(f))))?;
        let total = match self.traced_to_end(&env, filter) {
            Ok(total) => total + 1,
            Err(o) => return Err(ended_with(Some(env), o.of_census())),
        };
        match self.census_of(&env, total) {
            Ok(census) => Ok(census),
            Err(f) => Err(ended_with(Some(env), Outcome::Error(f))),
        }
    }

    /// Runs the sweep's workload traced to its own end; its points.
    fn traced_to_end(&self, env: &TrialEnv, filter: Filter) -> Result<u64, Outcome> {
        let mut child = self.spawn_traced(env, filter)?;
        match drive(&mut child, &self.targets(env), Goal::ToEnd) {
            Ok(Driven::Exited { exit, counted }) => {
                ended_well(exit, counted, &child.stderr_tail()).map_err(|f| self.ended_badly(env, f))
            }
            Ok(Driven::At(p)) => Err(Outcome::Error(Failure::CensusStopped(p.ordinal.0))),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }

    /// One real kill at point `n`, judged on its own recovery: a fire's
    /// confirmation.
    pub fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        self.ctx
            .pool
            .unit(&self.ctx.interrupt, || self.killed_at(filter, n, census, Reach::Exact))
            .alone(self.ctx, self.cell)
    }

    /// The re-executed sweep of this workload: its census, then a real kill
    /// at every point, each point's folder a trial of the one driver
    /// ([`crate::pipeline::judge::sweep::re_executed`]).
    pub fn re_executed(&self, seed: u64) -> Swept {
        re_executed(self.ctx, seed, self)
    }

    /// A real kill at point `n`, read up to its recovery (the kill point's
    /// acks are the trial's).
    fn killed_at(&self, filter: Filter, n: u64, census: &Census, reach: Reach) -> Pending {
        let index = TrialIndex::at(Ordinal(n));
        let env = match self.env(&format!("p{n}")) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        let mut calls = Vec::new();
        let (kp, call) = match self.traced_to(&env, filter, (Goal::KillAt(n), reach), &mut calls) {
            Ok(reached) => reached,
            Err(o) => return Pending::ended(trial.conclude(o).with_env(env)),
        };
        // Its calls, for the evidence's timeline, if it does not pass.
        let killed = (!call.is_end()).then_some(n);
        let calls = Trace::of_points(&calls, killed);
        let prepared = prepare(&self.crash(&env, Some(census)), &mut trial);
        trial.kill_point = Some(KillPoint { after_acks: trial.acked, ..kp });
        Pending::at_point(trial, env, prepared, calls)
    }

    /// Spawns the workload traced, drives it to `goal` and kills it there
    /// (its kill point, and the call it stopped at: the end if it ended);
    /// `calls` gets every counted call it made, the killed one included.
    fn traced_to(
        &self,
        env: &TrialEnv,
        filter: Filter,
        (goal, reach): (Goal, Reach),
        calls: &mut Vec<Point>,
    ) -> Result<(KillPoint, Call), Outcome> {
        let mut child = self.spawn_traced(env, filter)?;
        let mut seen = |_: u32, _: i64, _: [u64; 6], p: Option<&Point>| calls.extend(p.cloned());
        let point = match drive_observed(&mut child, &self.targets(env), goal, &mut seen) {
            Ok(Driven::At(p)) => p,
            // The point after the last call: the child's own end is the state.
            Ok(Driven::Exited { exit, counted }) if matches!(goal, Goal::KillAt(n) if n == counted + 1) => {
                ended_well(exit, counted, &child.stderr_tail()).map_err(|f| self.ended_badly(env, f))?;
                let end = Ordinal(counted + 1);
                return Ok((Point::end(end).kill_point(TrialIndex::at(end), 0), Call::End));
            }
            Ok(Driven::Exited { exit, counted }) if exit == Exit::Code(0) && reach == Reach::Sweep => {
                return Ok((unreached(goal, counted), Call::End));
            }
            Ok(Driven::Exited { exit, counted }) => {
                let before = match goal {
                    Goal::KillAt(n) => Some(n),
                    _ => None,
                };
                let failure = Failure::ChildEnded { exit, counted, before, stderr: child.stderr_tail() };
                return Err(self.ended_badly(env, failure));
            }
            Err(e) => return Err(trace_outcome(e, self.ctx)),
        };
        child.kill_and_reap().check().map_err(|e| Outcome::Error(Failure::Reap(e)))?;
        Ok((point.kill_point(TrialIndex::at(point.ordinal), 0), point.syscall))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep's point beyond a well-ended child's path is its end, judged,
    /// and not landed: no ordinal, the trial still the point's.
    #[test]
    fn a_point_a_well_ended_child_never_reached_is_its_end_and_does_not_land() {
        let kp = unreached(Goal::KillAt(207), 198);
        assert_eq!((kp.trial, kp.ordinal, kp.syscall.as_deref()), (TrialIndex::nth(207), None, Some("exit")));
    }
}
