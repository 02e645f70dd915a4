//! Recorded sweeps: the child runs its workload once, traced and logged
//! ([`crate::crashstate::record`]); every crash state is rebuilt from the log and
//! checked in batches ([`super::batch`]); a process-crash state that does
//! not pass is confirmed by a real kill at its point before it is reported.
//!
//! Crash model: as [`super::source`]'s syscall kill: state N is what a
//! `SIGKILL` at the entry of kill point N leaves, i.e. the logged calls
//! before N. Clause: the cell's, judged by [`super::verdict`] like any
//! trial. Trust: the log is only used when, replayed to the end, it agrees
//! with the files the run left on disk (the self-check); otherwise the sweep
//! re-executes the child at every point and says why. A recorded state that
//! fires is reported only once a real kill at its point fires too; one that
//! fires only when recorded is an `error` naming the non-determinism.

use super::batch::{State, check, evidence_env};
use super::source::{Workload, ended_well};
use super::sweep::{Census, Filter, Swept, preflight, sweep, trace_outcome};
use super::{Outcome, Trial};
use crate::crashstate::record::record;
use crate::crashstate::{Files, Log, Names};
use crate::harness::Traced;
use crate::kill::syscall::{Driven, Goal, sweep_points};
use crate::trialdir::TrialEnv;

/// A workload's recorded run: its log, its census, and the folder it ran in.
pub struct Recording {
    pub log: Log,
    pub census: Census,
    pub env: TrialEnv,
    pub names: Names,
    /// Where the replayed log and the disk disagree, if they do.
    pub disagrees: Option<String>,
    /// The filter it was recorded with, for the real kill that confirms a fire.
    pub filter: Filter,
}

impl Workload<'_> {
    /// The recording every recorded sweep starts from, or how the sweep
    /// ends before its first point: tracing refused here, a recording that
    /// failed, or a leg the child did not honour (a skip).
    pub fn honoured_recording(&self) -> Result<Recording, Box<Swept>> {
        let unplanned = |t: Trial| Box::new(Swept::unplanned(t));
        let filter = preflight().map_err(|outcome| unplanned(Trial::ended(0, outcome)))?;
        let rec = self.record(filter).map_err(|trial| unplanned(*trial))?;
        if !rec.census.audit.honored {
            let mut t = Trial::ended(0, Outcome::Skip(rec.census.audit.reason.clone()));
            t.audit = Some(rec.census.audit);
            return Err(unplanned(t));
        }
        Ok(rec)
    }

    /// Runs the sweep's workload once, traced, to its own end, logging every
    /// call on the trial's files; then audits the leg and self-checks the log.
    pub fn record(&self, filter: Filter) -> Result<Recording, Box<Trial>> {
        let fail = |env: Option<TrialEnv>, o: Outcome| {
            let t = Trial::ended(0, census_error(o));
            Box::new(match env {
                Some(env) => t.with_env(env),
                None => t,
            })
        };
        let env = self.env("census").map_err(|o| fail(None, o))?;
        let log = match self.record_in(&env, filter) {
            Ok(log) => log,
            Err(o) => return Err(fail(Some(env), o)),
        };
        // The points, and one more: the state the child's own end left.
        let census = match self.census_of(&env, log.total() + 1) {
            Ok(c) => c,
            Err(o) => return Err(fail(Some(env), o)),
        };
        let names = Names::new(&env.db, &env.acks, &env.transport);
        let dir = env.db.parent().expect("a trial's database is in its folder");
        let disagrees = self_check(&log, dir, &names);
        Ok(Recording { log, census, env, names, disagrees, filter })
    }

    fn record_in(&self, env: &TrialEnv, filter: Filter) -> Result<Log, Outcome> {
        let mut child = Traced::spawn(self.sweep_command(env), Some(&env.stderr), filter, self.ctx.deadline)
            .map_err(|e| trace_outcome(e, self.ctx))?;
        match record(&mut child, &self.targets(env), Goal::ToEnd) {
            Ok((Driven::Exited { exit, counted }, log)) => ended_well(exit, counted, &child.stderr_tail()).map(|_| log),
            Ok((Driven::At(p), _)) => Err(Outcome::Error(format!("the recording stopped at point {}", p.ordinal))),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }
}

/// The self-check: the log replayed to its end against the files the run
/// left in `dir`; where they first differ, if they do.
pub fn self_check(log: &Log, dir: &std::path::Path, names: &Names) -> Option<String> {
    Files::after(log.ran()).differs_from_disk(dir, names)
}

/// What a result says when its recorded states were not used.
fn fallback_note(why: &str) -> String {
    format!(
        "recorded states not used: after the run, {why} (the child writes in a way the tracer does not see, \
         e.g. through mmap); every point re-ran the child"
    )
}

/// A recording's failure names the census it stands for.
fn census_error(o: Outcome) -> Outcome {
    match o {
        Outcome::Error(why) if !why.starts_with("census") => Outcome::Error(format!("census: {why}")),
        other => other,
    }
}

/// The trials of a recorded process-crash sweep of `w`; where the log
/// cannot be trusted, the re-executed sweep's, with the reason.
pub fn process_sweep(w: &Workload, seed: u64) -> Swept {
    let rec = match w.honoured_recording() {
        Ok(r) => r,
        Err(ended) => return *ended,
    };
    if let Some(why) = &rec.disagrees {
        let note = fallback_note(why);
        drop(rec);
        let mut swept = sweep(w.ctx, seed, w);
        if let Some(last) = swept.trials.last_mut() {
            last.details.push(note);
        }
        return swept;
    }
    let points = sweep_points(rec.census.points, None, w.ctx.options.points, seed);
    w.ctx.tally.planned(points.len() as u64);
    let states = process_states(&rec.log, &points);
    let mut trials = check(w, &rec, states);
    trials.iter().for_each(|_| w.ctx.tally.done());
    let last_bad = trials.last().is_some_and(|t| t.outcome != Outcome::Pass);
    if last_bad {
        let recorded = trials.pop().expect("a last trial");
        let real = w.kill_at(rec.filter, u64::from(recorded.index), &rec.census);
        trials.push(decide(recorded, real));
    }
    Swept { planned: Some(points), trials }
}

/// The process-crash state at each of `points` (ascending), with its acks.
fn process_states(log: &Log, points: &[u64]) -> Vec<State> {
    let mut files = Files::default();
    let mut applied = 0;
    let mut states = Vec::with_capacity(points.len());
    for &n in points {
        let before = log.before(n);
        for e in &before[applied..] {
            files.apply(&e.effect);
        }
        applied = before.len();
        let acks = files.get(crate::kill::syscall::FileKind::Acks).unwrap_or_default().to_vec();
        let point = log.point(n);
        states.push(State { point, acks, files: files.clone(), version: files.version(), rule: None });
    }
    states
}

/// A recorded state that did not pass, against a real kill at its point:
/// the real kill's trial when it does not pass either (confirmed), else an
/// `error` naming the non-determinism, with the recorded state as evidence.
pub fn decide(recorded: Trial, real: Trial) -> Trial {
    let n = recorded.index;
    if real.outcome != Outcome::Pass {
        let mut t = real;
        t.details.push(format!("confirmed by a real kill at point {n}"));
        if let Some(why) = reason(&recorded.outcome).filter(|w| Some(*w) != reason(&t.outcome)) {
            t.details.push(format!("the recorded state at point {n} found: {why}"));
        }
        return t;
    }
    let found = reason(&recorded.outcome).unwrap_or("a verdict other than pass").to_string();
    let why = format!(
        "point {n} fails only when recorded: the recorded state found {found}, but a real kill at point {n} \
         passes; the child does not write the same bytes on every run (a clock, a random salt, scheduling), \
         so its recorded states do not stand for it (run with --replay off)"
    );
    let mut t = recorded;
    t.outcome = Outcome::Error(why);
    t
}

fn reason(o: &Outcome) -> Option<&str> {
    match o {
        Outcome::Pass => None,
        Outcome::Fire(r) | Outcome::Skip(r) | Outcome::Error(r) | Outcome::Interrupted(r) => Some(r),
    }
}

/// The evidence of a recorded state: its files as the log rebuilds them, in
/// a trial folder of their own.
pub(super) fn recorded_evidence(w: &Workload, state: &State, label: &str) -> Option<TrialEnv> {
    evidence_env(w, state, label, "recorded-state.txt", "this state was rebuilt from the recorded run's log")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(n: u32, outcome: Outcome) -> Trial {
        Trial::ended(n, outcome)
    }

    #[test]
    fn a_fire_a_real_kill_repeats_is_confirmed_and_reported_as_the_real_kill() {
        let t = decide(trial(7, Outcome::Fire("lost m1".into())), trial(7, Outcome::Fire("lost m1".into())));
        assert_eq!(t.outcome, Outcome::Fire("lost m1".into()));
        assert_eq!(t.details, ["confirmed by a real kill at point 7"]);
        let t = decide(trial(7, Outcome::Fire("lost m1".into())), trial(7, Outcome::Fire("lost m0".into())));
        assert_eq!(t.details[1], "the recorded state at point 7 found: lost m1");
    }

    #[test]
    fn a_log_that_disagrees_with_the_disk_is_not_trusted_and_says_why() {
        use crate::crashstate::{At, Effect};
        use crate::kill::syscall::{FileKind, Point};
        let dir = tempfile::tempdir().unwrap();
        let names = Names::new(
            &dir.path().join("store.db"),
            &dir.path().join("acks.ndjson"),
            &dir.path().join("transport.ndjson"),
        );
        let mut log = Log::default();
        let point = Point { ordinal: 0, syscall: "pwrite64", file: Some(FileKind::Database), offset: None, len: None };
        log.push(Some(point), Effect::Write { file: FileKind::Database, at: At::Offset(0), data: b"page".to_vec() });
        std::fs::write(dir.path().join("store.db"), b"page").unwrap();
        assert_eq!(self_check(&log, dir.path(), &names), None);
        // A byte the tracer never saw written (through a shared mmap, say).
        std::fs::write(dir.path().join("store.db"), b"pagX").unwrap();
        let why = self_check(&log, dir.path(), &names).expect("the disk disagrees");
        assert_eq!(why, "the database differs at byte 3 (model 4 bytes, disk 4 bytes)");
        let note = fallback_note(&why);
        assert!(note.starts_with("recorded states not used: after the run, the database differs"), "{note}");
        assert!(note.ends_with("every point re-ran the child"), "{note}");
    }

    #[test]
    fn a_fire_only_the_recording_sees_is_an_error_naming_the_non_determinism() {
        let t = decide(trial(7, Outcome::Fire("lost m1".into())), trial(7, Outcome::Pass));
        let Outcome::Error(why) = &t.outcome else { panic!("{:?}", t.outcome) };
        assert!(why.starts_with("point 7 fails only when recorded: the recorded state found lost m1"), "{why}");
        assert!(why.contains("does not write the same bytes on every run"), "{why}");
        assert_eq!(t.index, 7);
    }
}
