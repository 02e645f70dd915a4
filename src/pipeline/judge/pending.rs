//! The trials of a timed result, of a free race (cell 2, kill `none`) or
//! of a re-executed sweep (a workload's points, a race's: [`crate::pipeline::judge::sweep`])
//! as a crash source of the one driver ([`crate::pipeline::judge::driver`]): each trial's
//! child is killed (or its race ends), its files are read as
//! [`crate::pipeline::judge::verdict::prepare`] reads them, and the store it left in its
//! folder is read in as a state ([`Files::read_store`]); the driver then
//! does for a wave of trials what it does for rebuilt states (their stores
//! told apart by their bytes, recovered in batches per pass with
//! `dump-batch`, the run's recoveries asked first, progress), and each
//! trial is judged on its own recovery and its own journals; the next wave
//! runs only if every trial so far passed.
//!
//! Crash model and clause: exactly a single trial's ([`crate::pipeline::workload::timed`],
//! [`crate::pipeline::race::job`], [`crate::pipeline::judge::verdict`]); only the processes that recover
//! the states are shared. A trial folder's store is its database,
//! `-journal`, `-wal` and transport as the crash left them, written out
//! again for recovery; the `-shm` is not (a first connection resets it, as
//! for every rebuilt state). A trial that does not pass on its batched
//! recovery is recovered again alone, in its own folder, as a single trial
//! always was ([`Context::recover_alone`]): its verdict, evidence and repro are
//! those of a trial judged alone, and a state that passes alone but not in
//! a batch is an `error`, never dropped. The trials run on up to `--jobs`
//! threads, in ascending order; after one that does not pass, no higher
//! one starts, and the trials kept are those up to the lowest that does
//! not pass, which comes last: the decisive trial does not depend on
//! scheduling.

use crate::cells::{Cell, Process};
use crate::crashstate::{Files, Names};
use crate::kill::TrialIndex;
use crate::model::Trace;
use crate::pipeline::judge::census::Census;
use crate::pipeline::judge::driver::{Count, Driver, Got, Passed, Plan, Source};
use crate::pipeline::judge::verdict::judged;
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::pipeline::run::context::{Context, Scope};
use crate::pipeline::trial::Trial;
use crate::recovery::{Recovered, RecoveryError};
use crate::trialdir::TrialEnv;

/// A trial whose child has ended, judged up to its recovery.
#[derive(Debug)]
pub struct Pending {
    pub trial: Trial,
    /// The processes to judge once the state is recovered, and the store
    /// the crash left; none when the trial already has its outcome (an
    /// error, a skip) or no folder.
    awaits: Option<(Vec<Process>, Files)>,
    /// A sweep point's calls up to its kill: its evidence, with its kill
    /// point, if it does not pass ([`Trial::with_calls`]).
    calls: Option<Trace>,
}

impl Pending {
    /// A trial that needs no recovery: its outcome is known.
    pub fn ended(trial: Trial) -> Pending {
        Pending { trial, awaits: None, calls: None }
    }

    /// [`Pending::prepared`], for a sweep point killed after `calls`.
    pub fn at_point(trial: Trial, env: TrialEnv, prepared: Result<Vec<Process>, Outcome>, calls: Trace) -> Pending {
        let mut p = Pending::prepared(trial, env, prepared);
        match p.awaits {
            Some(_) => p.calls = Some(calls),
            None => p.trial = p.trial.with_calls(calls),
        }
        p
    }

    /// The trial judged on a recovery of its folder alone, one unit of the
    /// run's pool: one real kill (a fire's confirmation), no batch to share.
    pub fn alone(self, ctx: &Context, cell: &dyn Cell) -> Trial {
        let Pending { mut trial, awaits, calls } = self;
        let (Some((processes, _)), Some(env)) = (awaits, trial.env.take()) else { return trial };
        let got = ctx.recover_alone(&env).map_err(Outcome::from);
        let outcome = judge_on(cell, &processes, got.as_ref().map_err(Clone::clone), &env, &mut trial);
        kept(trial.conclude(outcome).with_env(env), calls)
    }

    /// A trial in `env` that [`crate::pipeline::judge::verdict::prepare`] prepared: awaiting
    /// recovery of the store its folder holds, or ended with the outcome
    /// preparation gave (or with the error of reading its store).
    pub fn prepared(trial: Trial, env: TrialEnv, prepared: Result<Vec<Process>, Outcome>) -> Pending {
        let read = |processes| {
            let names = Names::new(&env.db, &env.acks, &env.transport);
            let store = Files::read_store(env.dir(), &names);
            store
                .map(|files| (processes, files))
                .map_err(|e| Outcome::from(RecoveryError::Copy { pass: 1, why: e.to_string() }))
        };
        match prepared.and_then(read) {
            Ok(awaits) => Pending { trial: trial.with_env(env), awaits: Some(awaits), calls: None },
            Err(outcome) => Pending::ended(trial.conclude(outcome).with_env(env)),
        }
    }
}

/// Makes trial `i` of a result (a timed trial, a race, a sweep's point):
/// its child killed or its race ended, read up to its recovery.
pub type MakeTrial<'a> = dyn Fn(TrialIndex) -> Pending + Sync + 'a;

/// How many trials are killed before their states are recovered and judged
/// together: enough that a batch saves processes (a gate's 16 trials take
/// two waves), few enough that a result that fires early does not first
/// run every trial it was given (a mutant run with `--trials 100` stops
/// within the wave of its first fire, as it stopped at the fire itself when
/// each trial was recovered alone).
const WAVE: usize = 8;

/// Runs the trials `indices` of one result of the job `scope` (`run` kills
/// and prepares one) through the one driver: `census` is a sweep's (its
/// leg audit stands for its points; none for a timed result or a race,
/// each of whose trials has its own ready record and audit), `home` the
/// folder whose config home and recovery step recover them all (made for
/// the result: every trial of it has the leg's home and the cell's step).
/// The trials up to the first that does not pass, that one last.
pub fn in_order(
    scope: Scope,
    census: Option<&Census>,
    home: Result<TrialEnv, Failure>,
    indices: &[TrialIndex],
    run: &MakeTrial,
) -> Vec<Trial> {
    let home = match home {
        Ok(env) => env,
        Err(f) => return vec![Trial::ended(indices.first().copied().unwrap_or(TrialIndex::CENSUS), Outcome::Error(f))],
    };
    // A trial's evidence is its own folder: the driver makes none.
    let no_folder = |_: &str| Err(Failure::TrialFolder("a trial's evidence is its own folder".into()));
    let d = Driver { scope, census, recorded: &home, make_env: &no_folder };
    through(&d, indices, run)
}

/// [`in_order`] through `d`, wave by wave. Progress: each trial is done
/// when its child has ended.
fn through(d: &Driver, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
    d.ctx.events.planned(indices.len() as u64);
    let wave = WAVE.max(d.ctx.jobs);
    let plan = Plan {
        units: indices.len(),
        wave,
        label: "batch",
        count: Count::Made,
        turn: None,
        one_log: false,
        spread: false,
    };
    d.run(&Trials { indices, run }, &plan)
}

/// A result's trials as a crash source: a unit per trial, its one store
/// the folder's.
struct Trials<'a> {
    indices: &'a [TrialIndex],
    run: &'a MakeTrial<'a>,
}

impl Source for Trials<'_> {
    type Unit = Pending;

    fn key(&self, i: usize) -> u64 {
        self.indices[i].ordinal().0
    }

    fn make(&self, i: usize) -> Result<Pending, Box<Trial>> {
        Ok((self.run)(self.indices[i]))
    }

    fn decided(&self, p: &Pending) -> bool {
        p.trial.is_bad()
    }

    fn stores(&self, p: &Pending) -> Vec<Files> {
        p.awaits.iter().map(|(_, files)| files.clone()).collect()
    }

    fn judge(&self, d: &Driver, p: Pending, got: &[Got], _: &mut Passed) -> Vec<Trial> {
        vec![match (p.awaits, got.first()) {
            (Some((processes, _)), Some(got)) => kept(judge(d, p.trial, &processes, got), p.calls),
            _ => p.trial,
        }]
    }

    fn interrupted(&self, next: Option<TrialIndex>) -> Trial {
        let next = next.or(self.indices.first().copied()).unwrap_or(TrialIndex::CENSUS);
        Trial::ended(next, Outcome::Interrupted(Interruption::BeforeTrial))
    }
}

/// Judges one trial on its batched recovery; a trial that does not pass is
/// recovered again alone in its own folder and judged on that, as a single
/// trial is (its evidence is then exactly a single trial's).
fn judge(d: &Driver, mut trial: Trial, processes: &[Process], got: &Got) -> Trial {
    let env = trial.env.take().expect("a pending trial has its folder");
    let before = trial.details.len();
    let outcome = judge_on(d.cell, processes, d.recovered(got), &env, &mut trial);
    if outcome.is_pass() {
        // Its folder goes at once: only the decisive trial's is evidence.
        trial.details.extend(got.note.clone());
        return trial.conclude(outcome);
    }
    if matches!(outcome, Outcome::Interrupted(_)) {
        return trial.conclude(outcome).with_env(env);
    }
    // A state whose recovery ran out its deadline was already recovered
    // alone (a batch that fails falls back to each state alone): again,
    // it would only wait out the deadline once more.
    if got.recovery.as_ref().as_ref().is_err_and(|o| matches!(o, Outcome::Error(f) if f.by_deadline())) {
        return trial.conclude(outcome).with_env(env);
    }
    trial.details.truncate(before);
    trial.integrity = None;
    let alone = d.ctx.recover_alone(&env).map_err(Outcome::from);
    let alone = judge_on(d.cell, processes, alone.as_ref().map_err(Clone::clone), &env, &mut trial);
    let outcome = match (alone, outcome) {
        (Outcome::Pass, found @ (Outcome::Fire(_) | Outcome::Error(_))) => {
            Outcome::Error(Failure::BatchOnly { found: Box::new(found) })
        }
        (alone, _) => alone,
    };
    trial.conclude(outcome).with_env(env)
}

/// `trial`, with a sweep point's `calls` kept as its evidence if it does
/// not pass.
fn kept(trial: Trial, calls: Option<Trace>) -> Trial {
    match calls {
        Some(calls) if trial.is_bad() => trial.with_calls(calls),
        _ => trial,
    }
}

/// A prepared trial's verdict on a recovery of its state.
fn judge_on(
    cell: &dyn Cell,
    processes: &[Process],
    got: Result<&Recovered, Outcome>,
    env: &TrialEnv,
    trial: &mut Trial,
) -> Outcome {
    match got {
        Ok(recovered) => judged(cell, processes, recovered, env.seed, trial),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::pipeline::run::context::Context;

    fn ctx(jobs: usize) -> Context {
        Context::for_tests(jobs, None)
    }

    fn indices(range: std::ops::Range<u32>) -> Vec<TrialIndex> {
        range.map(TrialIndex::nth).collect()
    }

    /// The trials `indices` of a result run by `run` through a driver.
    fn in_order(ctx: &Context, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        crate::pipeline::judge::driver::with_driver(ctx, |d| through(d, indices, run))
    }

    #[test]
    fn trials_up_to_the_first_that_does_not_pass_are_kept_it_last_whatever_the_threads() {
        let run = |i: TrialIndex| {
            let n = i.get();
            let outcome =
                if n == 2 || n == 5 { Outcome::Error(Failure::CensusStopped(n.into())) } else { Outcome::Pass };
            Pending::ended(Trial::ended(i, outcome))
        };
        for jobs in [1, 3] {
            let trials = in_order(&ctx(jobs), &indices(0..6), &run);
            let got: Vec<(u32, Outcome)> = trials.into_iter().map(|t| (t.index.get(), t.outcome)).collect();
            assert_eq!(got.last(), Some(&(2, Outcome::Error(Failure::CensusStopped(2)))), "{jobs} jobs");
            assert_eq!(got.len(), 3, "{jobs} jobs");
        }
    }

    #[test]
    fn each_trial_is_done_when_its_child_ends() {
        use crate::model::{Event, Events, Listener};
        use std::sync::{Arc, Mutex};
        /// The steps heard, as words.
        #[derive(Default)]
        struct Steps(Mutex<Vec<String>>);
        impl Listener for Steps {
            fn on(&self, event: &Event) -> Result<(), String> {
                let step = match event {
                    Event::Planned { count, .. } => format!("planned {count}"),
                    other => format!("{other:?}"),
                };
                self.0.lock().unwrap().push(step);
                Ok(())
            }
        }
        let steps = Arc::new(Steps::default());
        let mut c = ctx(1);
        c.events = Events::of(0, steps.clone());
        let run = |i: TrialIndex| Pending::ended(Trial::ended(i, Outcome::Pass));
        assert_eq!(in_order(&c, &indices(0..2), &run).len(), 2);
        assert_eq!(*steps.0.lock().unwrap(), ["planned 2", "Done { index: 0 }", "Done { index: 0 }"]);
    }

    /// A result that decides early runs no further wave, and one that
    /// decides in a later wave keeps every trial before it.
    #[test]
    fn no_wave_starts_after_the_one_that_decided() {
        for (bad, most_started) in [(3, WAVE), (20, 3 * WAVE)] {
            let started = AtomicUsize::new(0);
            let run = |i: TrialIndex| {
                started.fetch_add(1, Ordering::SeqCst);
                let n = i.get();
                let outcome = if n == bad { Outcome::Error(Failure::CensusStopped(n.into())) } else { Outcome::Pass };
                Pending::ended(Trial::ended(i, outcome))
            };
            let trials = in_order(&ctx(2), &indices(0..100), &run);
            assert_eq!(trials.len(), bad as usize + 1);
            assert_eq!(trials.last().map(|t| t.index.get()), Some(bad));
            assert!(started.load(Ordering::SeqCst) <= most_started, "{} started", started.load(Ordering::SeqCst));
        }
    }
}
