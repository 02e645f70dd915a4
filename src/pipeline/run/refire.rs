//! A fire's repro, rerun in the run: how often it fires again, measured
//! rather than guessed (issue 29). A kill point lands on the same call
//! each time, a timed kill or a race where the scheduler lets it; a store
//! that writes from a thread pool may not make the same calls twice. The
//! report gives each fire `refire: {runs, fired}`, so that a reader knows
//! what its repro is worth before pasting it.
//!
//! The reruns take the repro's own path (the run's launcher: cheap through
//! a fork server) and its options narrowed to the fire's trial or point,
//! as its repro does. They cost only where something fired, and are
//! bounded: [`RUNS`] per fire, run over `--jobs` threads (each rerun is a
//! repro of its own, in a folder of its own, so they are independent: a
//! fire's result no longer waits for five reruns one after another, which
//! doubled a firing run's time). A fire decided by a sweep's census (its
//! repro reruns the whole sweep) is not rerun.

use crate::model::Refire;
use crate::pipeline::outcome::Outcome;
use crate::pipeline::run::parallel::parallel;

/// How many times a fire's repro is rerun.
pub const RUNS: u32 = 5;

/// Reruns a repro `runs` times through `again` (given the rerun's number),
/// over up to `jobs` threads, and counts the fires in order of the reruns
/// (`None`: that rerun gave no trial, and the count stops there). No
/// measure when none ran or an interrupt cut one short (a count of runs
/// the user stopped says nothing).
pub fn measure(runs: u32, jobs: usize, again: &(dyn Fn(u32) -> Option<Outcome> + Sync)) -> Option<Refire> {
    let outcomes = parallel(runs as usize, jobs, &|_| false, &|i| again(i as u32));
    let mut refire = Refire { runs: 0, fired: 0 };
    for outcome in outcomes {
        let Some(outcome) = outcome else { break };
        match outcome {
            Outcome::Interrupted(_) => return None,
            Outcome::Fire(_) => refire.fired += 1,
            _ => {}
        }
        refire.runs += 1;
    }
    (refire.runs > 0).then_some(refire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::pipeline::outcome::{Failure, Finding, Interruption};

    fn fire() -> Outcome {
        Outcome::Fire(Finding { violations: vec![Violation::new("winners", "2 WON")], power: None, fault: None })
    }

    /// A race-dependent fire refires in some runs only: k < N.
    #[test]
    fn a_fire_the_scheduler_decides_refires_in_some_runs() {
        let runs = [fire(), Outcome::Pass, fire(), Outcome::Error(Failure::NoKill), Outcome::Pass];
        let again = |i: u32| runs.get(i as usize).cloned();
        assert_eq!(measure(RUNS, 2, &again), Some(Refire { runs: 5, fired: 2 }));
        assert_eq!(measure(RUNS, 1, &again), measure(RUNS, 4, &again), "threads change no count");
    }

    /// A deterministic mutant's fire refires every time: k = N.
    #[test]
    fn a_deterministic_fire_refires_every_time() {
        assert_eq!(measure(RUNS, 2, &|_| Some(fire())), Some(Refire { runs: RUNS, fired: RUNS }));
    }

    #[test]
    fn no_run_or_an_interrupt_measures_nothing() {
        assert_eq!(measure(RUNS, 2, &|_| None), None);
        assert_eq!(measure(0, 2, &|_| Some(fire())), None);
        let runs = [fire(), Outcome::Interrupted(Interruption::BeforeTrial)];
        assert_eq!(measure(RUNS, 2, &|i| runs.get(i as usize).cloned()), None);
        let runs = [fire(), fire()];
        let again = |i: u32| runs.get(i as usize).cloned();
        assert_eq!(measure(RUNS, 2, &again), Some(Refire { runs: 2, fired: 2 }), "as many as ran");
    }
}
