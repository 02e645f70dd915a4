//! Checking many rebuilt crash states at once: states that hold the same
//! store share one recovery; stores are written out in batches, each pass
//! of a batch recovering all of them in one child process (`dump-batch`),
//! batches spread over `--jobs` threads; then each state is judged with its
//! own ack journal, by the one verdict path ([`super::verdict`]).
//!
//! Crash model: a state is the store's files and the ack journal a crash
//! left (a process crash or a power loss, [`crate::crashstate`]); recovery
//! depends on the store's files only, so one recovery per distinct store is
//! exact, and the judgement of each state uses its own acks. Clause: the
//! cell's, with determinism and integrity.

use std::borrow::Borrow;
use std::ops::Range;
use std::sync::Arc;

use super::census::Census;
use super::context::Context;
use super::outcome::{Failure, Interruption, Outcome};
use super::parallel::{parallel, until_first_bad};
use super::trial::Trial;
use super::verdict::{Acks, Crash, Ended, conclude};
use crate::cells::{Cell, End};
use crate::crashstate::{Files, Names, State};
use crate::matrix::Leg;
use crate::recovery::batch::Restore;
use crate::recovery::{Pair, Passes, Recovered, recover_batch};
use crate::trialdir::TrialEnv;

/// Most distinct stores one dump process recovers: large enough that an
/// interpreter's start is paid rarely, small enough that `--jobs` threads
/// share a sweep.
const MOST_PER_BATCH: usize = 96;

/// What checking rebuilt states needs from the sweep that rebuilt them.
pub struct Checker<'a> {
    pub ctx: &'a Context,
    pub cell: &'a dyn Cell,
    pub leg: &'a Leg,
    /// The recording's census: its ready record and leg audit stand for
    /// every state (the sweep runs only on a leg the census showed honored).
    pub census: &'a Census,
    /// The recorded run's folder: its config home, the workload's seed and
    /// the recovery step every pass runs.
    pub recorded: &'a TrialEnv,
    /// Names this job's folders (`{cell}-{leg}-{label}`).
    pub label: &'a (dyn Fn(&str) -> String + Sync),
    /// Makes a trial folder of this job (for a state's evidence).
    pub make_env: &'a (dyn Fn(&str) -> Result<TrialEnv, Failure> + Sync),
}

/// A recovery of one distinct store, shared by the states that hold it.
pub type Recovery = Result<Recovered, Outcome>;

impl Checker<'_> {
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

    /// A state with ack journal `acks`, as the verdict reads it.
    pub fn crash<'s>(&'s self, acks: &'s [u8]) -> Crash<'s> {
        Crash {
            cell: self.cell,
            leg: self.leg,
            db: &self.recorded.db,
            ended: vec![Ended { name: "child".into(), acks: Acks::Bytes(acks), end: End::Killed }],
            seed: self.recorded.seed,
            census: Some(self.census),
        }
    }

    /// Recovers `stores` twice each, written out in a folder of their own
    /// under the run's work folder; the results in order, and a note when
    /// the batched dump failed and each store was recovered alone.
    pub fn recover(&self, stores: &[&Files], label: &str) -> (Vec<Recovery>, Option<String>) {
        self.ctx.pool.unit(|| self.recovered(stores, label))
    }

    fn recovered(&self, stores: &[&Files], label: &str) -> (Vec<Recovery>, Option<String>) {
        let fail = |f: Failure| (stores.iter().map(|_| Err(Outcome::Error(f.clone()))).collect(), None);
        let prefix = format!("{}-", (self.label)(label));
        let dir = match tempfile::Builder::new().prefix(&prefix).tempdir_in(&self.ctx.work_root) {
            Ok(d) => d,
            Err(e) => return fail(Failure::BatchFolder(e.to_string())),
        };
        // One folder per pass, each state's store under a database name of its own.
        let passes = [dir.path().join("1"), dir.path().join("2")];
        if let Err(e) = passes.iter().try_for_each(std::fs::create_dir) {
            return fail(Failure::BatchFolder(e.to_string()));
        }
        let step = self.recorded.recovery_step.as_ref();
        let mut pairs = Vec::with_capacity(stores.len());
        for (i, &files) in stores.iter().enumerate() {
            let db = format!("s{i}.db");
            match (files.write_store_to(&passes[0], &db), files.write_store_to(&passes[1], &db)) {
                (Ok(first), Ok(second)) => {
                    // A recovery step reads and writes the state's transport.
                    let transports = step.map(|_| [&first, &second].map(|d| Names::store(d).transport_path(d)));
                    let dirs = passes.clone();
                    let restore: Restore =
                        Arc::new(move |n| files.write_store_to(&dirs[n as usize - 1], &db).map(drop));
                    pairs.push(Pair { first, second, transports, restore: Some(restore) })
                }
                (Err(e), _) | (_, Err(e)) => return fail(Failure::WritingState(e.to_string())),
            }
        }
        let passes = Passes {
            child: &self.ctx.child,
            deadline: self.ctx.deadline,
            home: &self.recorded.home,
            out: dir.path(),
            step,
        };
        let got = recover_batch(&passes, &pairs, self.ctx.batching());
        (got.results.into_iter().map(|r| r.map_err(Outcome::from)).collect(), got.note)
    }

    /// Recovers `files` in batches spread over the sweep's threads, in
    /// order, each batch's folders labelled `{label}{b}`; `done` hears the
    /// range of `files` each batch recovered, as it ends (a progress tick).
    pub fn recover_spread(&self, files: &[&Files], label: &str, done: &(dyn Fn(Range<usize>) + Sync)) -> Vec<Recovery> {
        let groups = batches(files.len(), self.ctx.jobs);
        parallel(groups.len(), self.ctx.jobs, &|_| crate::harness::interrupted().is_some(), &|b| {
            let got = self.recover(&files[groups[b].clone()], &format!("{label}{b}")).0;
            done(groups[b].clone());
            got
        })
        .into_iter()
        .flatten()
        .collect()
    }

    /// A trial folder holding `state` as rebuilt (its store's files and its
    /// ack journal), with a note saying where it came from.
    pub fn evidence(&self, state: &State, label: &str, note: &str, text: &str) -> Option<TrialEnv> {
        let env = (self.make_env)(label).ok()?;
        let dir = env.db.parent()?.to_path_buf();
        let mut files = state.files.clone();
        files.set_acks(&state.acks);
        files.write_to(&dir, &Names::new(&env.db, &env.acks, &env.transport)).ok()?;
        std::fs::write(dir.join(note), format!("{text}\n")).ok()?;
        Some(env)
    }
}

/// What a recorded state's evidence says of itself.
const RECORDED_NOTE: &str = "this state was rebuilt from the recorded run's log";

/// An interrupted run may have skipped batches: its last trial says so,
/// rather than a pass standing for states nobody checked. True if it did.
pub fn interrupted_after(trials: &mut Vec<Trial>) -> bool {
    if crate::harness::interrupted().is_none() {
        return false;
    }
    let next = trials.last().map_or(0, |t| t.index.saturating_add(1));
    trials.push(Trial::ended(next, Outcome::Interrupted(Interruption::BetweenBatches)));
    true
}

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

/// Splits `n` stores into batches of at most [`MOST_PER_BATCH`], their
/// count a multiple of `jobs` so that every thread gets as many, of about
/// one size.
pub fn batches(n: usize, jobs: usize) -> Vec<std::ops::Range<usize>> {
    let jobs = jobs.max(1);
    let count = jobs * n.div_ceil(jobs * MOST_PER_BATCH).max(1);
    let size = n.div_ceil(count).max(1);
    (0..n).step_by(size).map(|s| s..(s + size).min(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_every_store_about_once_per_thread() {
        assert_eq!(batches(10, 2), [0..5, 5..10]);
        assert_eq!(batches(3, 4), [0..1, 1..2, 2..3]);
        assert_eq!(batches(0, 2), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(batches(200, 2).len(), 4, "two rounds of two, not 96, 96 and 8");
        assert!(batches(1000, 2).iter().all(|b| b.len() <= MOST_PER_BATCH));
    }
}
