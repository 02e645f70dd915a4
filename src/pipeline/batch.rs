//! The recorded process-crash states of a sweep, checked many at a time:
//! consecutive states that hold the same store (one version of the log)
//! share one recovery; stores are recovered in batches by the driver
//! ([`super::driver::Driver::recover`]: each pass of a batch in one child
//! process, `dump-batch`), batches spread over `--jobs` threads, after a
//! state that does not pass no later batch started; then each state is
//! judged with its own ack journal, by the one verdict path
//! ([`super::verdict`]).
//!
//! Crash model: a state is the store's files and the ack journal a
//! `SIGKILL` at its point left ([`crate::crashstate::state`]); recovery
//! depends on the store's files only, so one recovery per version is exact,
//! and the judgement of each state uses its own acks. Clause: the cell's,
//! with determinism and integrity.

use std::borrow::Borrow;

use super::driver::{Driver, batches, interrupted_after};
use super::outcome::Outcome;
use super::parallel::until_first_bad;
use super::trial::Trial;
use super::verdict::conclude;
use crate::crashstate::{Files, State};
use crate::recovery::Recovered;

impl Driver<'_> {
    /// Checks process-crash `states` (ascending points): each distinct store
    /// recovered once, each state judged; after a state that does not pass,
    /// later batches are not started. A trial per state up to the lowest
    /// that does not pass, which comes last with its evidence (the state as
    /// rebuilt).
    pub fn check(&self, states: Vec<State>) -> Vec<Trial> {
        let units = units_of(&states);
        let batches = batches(units.len(), self.ctx.jobs);
        let first_point = |b: usize| states[units[batches[b].start].start].point.ordinal;
        let ran = until_first_bad(batches.len(), self.ctx.jobs, &first_point, &|b| {
            let range = batches[b].clone();
            let stores: Vec<&Files> = units[range.clone()].iter().map(|u| &states[u.start].files).collect();
            let (recovered, note) = self.recover(&stores, &format!("b{b}"));
            let mut trials = Vec::new();
            for (unit, r) in units[range].iter().zip(recovered) {
                for s in &states[unit.clone()] {
                    let mut t = self.judge(s, r.as_ref().map_err(Clone::clone));
                    t.details.extend(note.clone());
                    trials.push(t);
                }
            }
            // Progress moves as each batch is judged, not once at the end.
            trials.iter().for_each(|_| self.ctx.tally.done());
            let bad = trials.iter().find(|t| t.is_bad()).map(|t| u64::from(t.index));
            (trials, bad)
        });
        let bad = ran.lowest_bad.unwrap_or(u64::MAX);
        let mut trials: Vec<Trial> = ran.outputs.into_iter().flatten().filter(|t| u64::from(t.index) <= bad).collect();
        if interrupted_after(&mut trials) {
            return trials;
        }
        if let Some(last) = trials.last_mut().filter(|t| t.is_bad()) {
            let state = states.iter().find(|s| s.point.ordinal == u64::from(last.index)).expect("a judged state");
            last.env = self.evidence(state, &format!("p{}", last.index), "recorded-state.txt", RECORDED_NOTE);
        }
        trials
    }

    /// Judges one state with the recovery of its store.
    fn judge<R: Borrow<Recovered>>(&self, s: &State, recovered: Result<R, Outcome>) -> Trial {
        let index = u32::try_from(s.point.ordinal).unwrap_or(u32::MAX);
        let mut trial = Trial::new(index);
        let outcome = conclude(&self.crash(&s.acks), &mut trial, || recovered);
        trial.kill_point = Some(s.point.kill_point(index, trial.acked));
        trial.conclude(outcome)
    }
}

/// What a recorded state's evidence says of itself.
const RECORDED_NOTE: &str = "this state was rebuilt from the recorded run's log";

/// Consecutive states with one version: one recovery serves them all.
fn units_of(states: &[State]) -> Vec<std::ops::Range<usize>> {
    let mut units: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, s) in states.iter().enumerate() {
        match units.last_mut() {
            Some(u) if states[u.start].version == s.version => u.end = i + 1,
            _ => units.push(i..i + 1),
        }
    }
    units
}
