//! A recorded fire found again by a real kill in a store whose calls differ
//! from run to run (a thread pool takes the store's lock in whatever order
//! the scheduler gives): when the real kill at the fire's ordinal passes,
//! the workload runs again, traced, up to [`TRIES`] times, each run killed
//! at the first counted call where its files are the recorded state again,
//! or where it makes the recorded point's call once its ack journal holds
//! what it held there ([`crate::crashstate::likeness`]); for a fire at
//! the child's own end, where the run's own end is like it. The first run
//! that does not pass confirms the fire; its details say how.
//!
//! Crash model: [`crate::pipeline::workload::point`]'s: the child is stopped at the entry of a
//! counted call and its group gets `SIGKILL` there; the call never runs.
//! Only how the call is chosen differs: by what the calls so far built
//! ([`crate::crashstate::record::record_asking`]), not by its ordinal.
//! Clause: the cell's, judged by [`crate::pipeline::judge::verdict`] like any killed trial.
//! A fire no run finds again stays an `error` naming the non-determinism.

use crate::crashstate::likeness::{Likeness, Sought};
use crate::crashstate::record::record_asking;
use crate::crashstate::{Files, Log};
use crate::harness::Exit;
use crate::kill::syscall::{Driven, Point};
use crate::kill::{Ordinal, TrialIndex};
use crate::model::{Crash, Trace};
use crate::pipeline::judge::census::{Census, Filter, trace_outcome};
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::plain::decide::{Found, Refound, TRIES};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::Workload;
use crate::trialdir::TrialEnv;

impl Workload<'_> {
    /// Up to [`TRIES`] runs, each killed where it first reaches `sought`
    /// (the recorded state of point `index`): the first that does not pass.
    pub fn refind(&self, filter: Filter, sought: &Sought, index: TrialIndex, census: &Census) -> Found {
        for run in 1..=TRIES {
            match self.ctx.pool.unit(&self.ctx.interrupt, || self.sought_once(filter, sought, (index, run), census)) {
                Ok(Some(found)) if found.trial.is_bad() => return Found::Again(Box::new(found)),
                Ok(_) => {}
                Err(broken) => return Found::Broken(broken),
            }
        }
        Found::Missed(TRIES)
    }

    /// One run seeking `sought`: `None` if it ended without reaching it.
    fn sought_once(
        &self,
        filter: Filter,
        sought: &Sought,
        (index, run): (TrialIndex, u32),
        census: &Census,
    ) -> Result<Option<Refound>, Box<Trial>> {
        let broken = |env: Option<TrialEnv>, o: Outcome| {
            let t = Trial::ended(index, o);
            Box::new(if let Some(env) = env { t.with_env(env) } else { t })
        };
        let env = self.env(&format!("p{index}-again{run}")).map_err(|f| broken(None, Outcome::Error(f)))?;
        let (point, log, how) = match self.killed_where(&env, filter, sought) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(None),
            Err(o) => return Err(broken(Some(env), o)),
        };
        let mut trial = Trial::new(index);
        trial.kill_point = Some(point.kill_point(index, 0));
        let outcome = self.judge(&env, Some(census), &mut trial);
        if let Some(kp) = trial.kill_point.as_mut() {
            kp.after_acks = trial.acked;
            if !outcome.is_pass() {
                let _ =
                    std::fs::write(env.path("kill-point.json"), serde_json::to_string_pretty(kp).unwrap_or_default());
                trial.trace = Some(Trace::of_log(&log, point.ordinal.0, Crash::Kill));
            }
        }
        let trial = trial.conclude(outcome).with_env(env);
        Ok(Some(Refound { trial, how, ordinal: point.ordinal.0, run }))
    }

    /// Runs the workload traced in `env`, killed at the first counted call
    /// where it is like `sought`: that call, the run's log, and how; `None`
    /// if it ended first.
    fn killed_where(
        &self,
        env: &TrialEnv,
        filter: Filter,
        sought: &Sought,
    ) -> Result<Option<(Point, Log, Likeness)>, Outcome> {
        let mut child = self.spawn_traced(env, filter)?;
        let mut how = None;
        let mut ask = |files: &Files, call: &Point| {
            how = sought.like(files, call);
            how.is_some()
        };
        let (driven, log) =
            record_asking(&mut child, &self.targets(env), &mut ask).map_err(|e| trace_outcome(e, self.ctx))?;
        let point = match driven {
            Driven::At(point) => point,
            Driven::Exited { exit, counted } => return Ok(at_end(sought, log, exit, counted)),
        };
        child.kill_and_reap().check().map_err(|e| Outcome::Error(Failure::Reap(e)))?;
        Ok(how.map(|how| (point, log, how)))
    }
}

/// A run that ended on its own: where the sought state is the one a
/// child's own end left (its point is `exit`), this run's end, if it ended
/// well and is like it; no other state is reached by an end.
fn at_end(sought: &Sought, log: Log, exit: Exit, counted: u64) -> Option<(Point, Log, Likeness)> {
    if !sought.point.syscall.is_end() || exit != Exit::Code(0) {
        return None;
    }
    let end = Point::end(Ordinal(counted + 1));
    let how = sought.like(&Files::after(log.ran()), &end)?;
    Some((end, log, how))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::{At, Effect};
    use crate::kill::syscall::Call;
    use crate::kill::syscall::FileKind;

    /// A run whose acks were written at the end of its file.
    fn run_of(acks: &[u8]) -> Log {
        let mut log = Log::default();
        let point = Point {
            ordinal: Ordinal(0),
            syscall: Call::Sys("write"),
            file: Some(FileKind::Acks),
            offset: None,
            len: None,
        };
        log.push(Some(point), Effect::Write { file: FileKind::Acks, at: At::End, data: acks.to_vec() });
        log
    }

    #[test]
    fn a_fire_at_the_childs_own_end_is_found_again_at_a_runs_end_that_ended_well_and_is_like_it() {
        let acks = b"{\"kind\":\"ready\",\"pid\":4}\n{\"kind\":\"ack\",\"i\":0}\n";
        let recorded = run_of(acks);
        let sought = Sought::new(&Files::after(recorded.ran()), &Point::end(Ordinal(2)));
        let other = run_of(b"{\"kind\":\"ready\",\"pid\":40}\n{\"kind\":\"ack\",\"i\":0}\n");
        let (end, _, how) = at_end(&sought, other.clone(), Exit::Code(0), 1).expect("the end is like it");
        assert_eq!((end, how), (Point::end(Ordinal(2)), Likeness::State));
        assert!(at_end(&sought, other.clone(), Exit::Code(3), 1).is_none(), "an end that failed is no state of it");
        assert!(at_end(&sought, run_of(b"{\"kind\":\"ready\"}\n"), Exit::Code(0), 1).is_none(), "other acks");
        let mid = Point {
            ordinal: Ordinal(2),
            syscall: Call::Sys("fsync"),
            file: Some(FileKind::Database),
            offset: None,
            len: None,
        };
        let sought = Sought::new(&Files::after(recorded.ran()), &mid);
        assert!(at_end(&sought, other, Exit::Code(0), 1).is_none(), "a call's state is not reached by an end");
    }
}
