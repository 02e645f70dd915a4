//! The trials of a timed result or of a free race (cell 2, kill `none`),
//! many at a time: each trial's child is killed (or its race ends) and its
//! files are read as [`super::verdict::prepare`] reads them; then every
//! trial's crash state is recovered in one batch per pass (two processes
//! per wave of trials, not two per trial: `dump-batch`,
//! [`crate::recovery::batch`]), and each trial is judged on its own
//! recovery and its own journals; the next wave runs only if every trial
//! so far passed.
//!
//! Crash model and clause: exactly a single trial's ([`super::source`],
//! [`super::race`], [`super::verdict`]); only the processes that recover
//! the states are shared. A trial that does not pass on its batched
//! recovery is recovered again alone, in its own folder, as a single trial
//! always was: its verdict, evidence and repro are those of a trial judged
//! alone, and a state that passes alone but not in a batch is an `error`,
//! never dropped. The trials run on up to `--jobs` threads, in ascending
//! order; after one that does not pass, no higher one starts, and the
//! trials kept are those up to the lowest that does not pass, which comes
//! last: the decisive trial does not depend on scheduling.

use super::context::Context;
use super::outcome::{Failure, Interruption, Outcome};
use super::parallel::until_first_bad;
use super::trial::Trial;
use super::verdict::judged;
use crate::cells::{Cell, Process};
use crate::recovery::{Pair, Passes, Recovered, RecoveryError, pair_of, recover, recover_batch};
use crate::trialdir::TrialEnv;

/// A trial whose child has ended, judged up to its recovery.
#[derive(Debug)]
pub struct Pending {
    pub trial: Trial,
    /// The processes to judge once the state is recovered; none when the
    /// trial already has its outcome (an error, a skip) or no folder.
    processes: Option<Vec<Process>>,
}

impl Pending {
    /// A trial that needs no recovery: its outcome is known.
    pub fn ended(trial: Trial) -> Pending {
        Pending { trial, processes: None }
    }

    /// A trial in `env` that [`super::verdict::prepare`] prepared: awaiting
    /// recovery, or ended with the outcome preparation gave.
    pub fn prepared(trial: Trial, env: TrialEnv, prepared: Result<Vec<Process>, Outcome>) -> Pending {
        match prepared {
            Ok(processes) => Pending { trial: trial.with_env(env), processes: Some(processes) },
            Err(outcome) => Pending::ended(trial.conclude(outcome).with_env(env)),
        }
    }

    /// Whether the trial has already ended on something other than a pass.
    fn bad(&self) -> bool {
        self.trial.is_bad()
    }
}

/// How many trials are killed before their states are recovered and judged
/// together: enough that a batch saves processes (a gate's 16 trials take
/// two waves), few enough that a result that fires early does not first
/// run every trial it was given (a mutant run with `--trials 100` stops
/// within the wave of its first fire, as it stopped at the fire itself when
/// each trial was recovered alone).
const WAVE: usize = 8;

/// Runs the trials `indices` of one result (`run` kills and prepares one),
/// wave by wave: recovers a wave's states in batches and judges them; the
/// trials up to the first that does not pass, that one last. Progress: each
/// trial is done when its child has ended.
pub fn in_order(ctx: &Context, cell: &dyn Cell, indices: &[u32], run: &(dyn Fn(u32) -> Pending + Sync)) -> Vec<Trial> {
    ctx.tally.planned(indices.len() as u64);
    let mut trials = Vec::with_capacity(indices.len());
    for wave in indices.chunks(WAVE.max(ctx.jobs)) {
        if run_wave(ctx, cell, wave, run, &mut trials) || crate::harness::interrupted().is_some() {
            break;
        }
    }
    if crate::harness::interrupted().is_some() && trials.last().is_none_or(|t| t.outcome.is_pass()) {
        // Trials the interrupt kept from starting: a pass must not stand for them.
        let next = trials.last().map_or(indices.first().copied().unwrap_or(0), |t| t.index.saturating_add(1));
        trials.push(Trial::ended(next, Outcome::Interrupted(Interruption::BeforeTrial)));
    }
    trials
}

/// Runs, recovers and judges one wave of trials on up to `--jobs` threads,
/// appending to `trials` those up to the first that does not pass; true
/// when one did not (it decides the result).
fn run_wave(
    ctx: &Context,
    cell: &dyn Cell,
    wave: &[u32],
    run: &(dyn Fn(u32) -> Pending + Sync),
    trials: &mut Vec<Trial>,
) -> bool {
    let pending = until_first_bad(wave.len(), ctx.jobs, &|i| i as u64, &|i| {
        let p = run(wave[i]);
        ctx.tally.done();
        let bad = p.bad().then_some(i as u64);
        (p, bad)
    })
    .outputs;
    for t in judge_all(ctx, cell, pending) {
        let decisive = t.is_bad();
        trials.push(t);
        if decisive {
            return true;
        }
    }
    false
}

/// Recovers every pending trial's state in one batch per pass, then judges
/// each trial, in order.
fn judge_all(ctx: &Context, cell: &dyn Cell, pending: Vec<Pending>) -> Vec<Trial> {
    let recovered = recover_all(ctx, &pending);
    pending
        .into_iter()
        .zip(recovered)
        .map(|(p, got)| match (p.processes, got) {
            (Some(processes), Some(Ok(got))) => judge(ctx, cell, p.trial, &processes, got),
            (Some(_), Some(Err(e))) => p.trial.conclude(Outcome::from(e)),
            _ => p.trial,
        })
        .collect()
}

/// Each pending trial's recovery from the batch (`Ok`), or why its copies
/// could not be made (`Err`), or none for a trial already decided.
type Recovery = Option<Result<Result<Recovered, RecoveryError>, RecoveryError>>;

/// The recoveries of every pending trial that awaits one, in one batch.
fn recover_all(ctx: &Context, pending: &[Pending]) -> Vec<Recovery> {
    let pairs: Vec<Option<Result<Pair, RecoveryError>>> =
        pending.iter().map(|p| p.processes.as_ref().and(p.trial.env.as_ref()).map(pair_of)).collect();
    let mut batched = ctx.pool.unit(|| recover_pairs(ctx, pending, &pairs)).into_iter();
    pairs
        .into_iter()
        .map(|pair| match pair {
            Some(Ok(_)) => Some(Ok(batched.next().expect("a recovery per batched state"))),
            Some(Err(e)) => Some(Err(e)),
            None => None,
        })
        .collect()
}

/// The batched recoveries of the states whose copies were made, in order.
fn recover_pairs(
    ctx: &Context,
    pending: &[Pending],
    pairs: &[Option<Result<Pair, RecoveryError>>],
) -> Vec<Result<Recovered, RecoveryError>> {
    let ready: Vec<(Pair, &TrialEnv)> = pending
        .iter()
        .zip(pairs)
        .filter_map(|(p, pair)| match pair {
            Some(Ok(pair)) => Some((pair.clone(), p.trial.env.as_ref()?)),
            _ => None,
        })
        .collect();
    let Some(&(_, first)) = ready.first() else { return Vec::new() };
    // Every trial of a result has the leg's config home and the cell's step.
    let out = match tempfile::Builder::new().prefix("batch-").tempdir_in(&ctx.work_root) {
        Ok(dir) => dir,
        Err(e) => {
            let why = || RecoveryError::Start { pass: 1, why: e.to_string() };
            return ready.iter().map(|_| Err(why())).collect();
        }
    };
    let passes = Passes {
        child: &ctx.child,
        deadline: ctx.deadline,
        home: &first.home,
        out: out.path(),
        step: first.recovery_step.as_ref(),
    };
    let states: Vec<Pair> = ready.into_iter().map(|(pair, _)| pair).collect();
    recover_batch(&passes, &states, ctx.batching()).results
}

/// Judges one trial on its batched recovery; a trial that does not pass is
/// recovered again alone in its own folder and judged on that, as a single
/// trial is (its evidence is then exactly a single trial's).
fn judge(
    ctx: &Context,
    cell: &dyn Cell,
    mut trial: Trial,
    processes: &[Process],
    got: Result<Recovered, RecoveryError>,
) -> Trial {
    let env = trial.env.take().expect("a pending trial has its folder");
    let before = trial.details.len();
    let outcome = judge_on(cell, processes, got, &env, &mut trial);
    if matches!(outcome, Outcome::Pass | Outcome::Interrupted(_)) {
        return trial.conclude(outcome).with_env(env);
    }
    trial.details.truncate(before);
    trial.integrity = None;
    for n in [1, 2] {
        let _ = std::fs::remove_dir_all(env.path(&format!("recovery-{n}")));
    }
    let got = ctx.pool.unit(|| recover(&ctx.child, ctx.deadline, &env));
    let alone = judge_on(cell, processes, got, &env, &mut trial);
    let outcome = match (alone, outcome) {
        (Outcome::Pass, found @ (Outcome::Fire(_) | Outcome::Error(_))) => {
            Outcome::Error(Failure::BatchOnly { found: Box::new(found) })
        }
        (alone, _) => alone,
    };
    trial.conclude(outcome).with_env(env)
}

/// A prepared trial's verdict on a recovery of its state.
fn judge_on(
    cell: &dyn Cell,
    processes: &[Process],
    got: Result<Recovered, RecoveryError>,
    env: &TrialEnv,
    trial: &mut Trial,
) -> Outcome {
    match got {
        Ok(recovered) => judged(cell, processes, &recovered, env.seed, trial),
        Err(e) => Outcome::from(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::pipeline::Step::{Done, Planned};

    fn ctx(jobs: usize) -> Context {
        Context::for_tests(jobs, None)
    }

    fn cell() -> &'static dyn Cell {
        crate::cells::find("prefix-durability").expect("a registered cell")
    }

    #[test]
    fn trials_up_to_the_first_that_does_not_pass_are_kept_it_last_whatever_the_threads() {
        let run = |i: u32| {
            let outcome =
                if i == 2 || i == 5 { Outcome::Error(Failure::CensusStopped(u64::from(i))) } else { Outcome::Pass };
            Pending::ended(Trial::ended(i, outcome))
        };
        for jobs in [1, 3] {
            let trials = in_order(&ctx(jobs), cell(), &[0, 1, 2, 3, 4, 5], &run);
            let got: Vec<(u32, Outcome)> = trials.into_iter().map(|t| (t.index, t.outcome)).collect();
            assert_eq!(got.last(), Some(&(2, Outcome::Error(Failure::CensusStopped(2)))), "{jobs} jobs");
            assert_eq!(got.len(), 3, "{jobs} jobs");
        }
    }

    #[test]
    fn each_trial_is_done_when_its_child_ends() {
        use std::sync::{Arc, Mutex};
        let steps = Arc::new(Mutex::new(Vec::new()));
        let mut c = ctx(1);
        let heard = Arc::clone(&steps);
        c.tally = crate::pipeline::Tally::new(move |s| heard.lock().unwrap().push(s));
        let run = |i: u32| Pending::ended(Trial::ended(i, Outcome::Pass));
        assert_eq!(in_order(&c, cell(), &[0, 1], &run).len(), 2);
        assert_eq!(*steps.lock().unwrap(), [Planned(2), Done, Done]);
    }

    /// A result that decides early runs no further wave, and one that
    /// decides in a later wave keeps every trial before it.
    #[test]
    fn no_wave_starts_after_the_one_that_decided() {
        for (bad, most_started) in [(3, WAVE), (20, 3 * WAVE)] {
            let started = AtomicUsize::new(0);
            let run = |i: u32| {
                started.fetch_add(1, Ordering::SeqCst);
                let outcome =
                    if i == bad { Outcome::Error(Failure::CensusStopped(u64::from(i))) } else { Outcome::Pass };
                Pending::ended(Trial::ended(i, outcome))
            };
            let indices: Vec<u32> = (0..100).collect();
            let trials = in_order(&ctx(2), cell(), &indices, &run);
            assert_eq!(trials.len(), bad as usize + 1);
            assert_eq!(trials.last().map(|t| t.index), Some(bad));
            assert!(started.load(Ordering::SeqCst) <= most_started, "{} started", started.load(Ordering::SeqCst));
        }
    }
}
