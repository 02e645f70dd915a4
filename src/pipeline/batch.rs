//! Checking many rebuilt crash states at once: states that hold the same
//! store share one recovery; stores are written out in batches, each pass
//! of a batch recovering all of them in one child process (`dump-batch`),
//! batches spread over `--jobs` threads; then each state is judged with its
//! own ack journal.
//!
//! Crash model: a state is the store's files and the ack journal a crash
//! left (a process crash or a power loss, [`crate::crashstate`]); recovery
//! depends on the store's files only, so one recovery per distinct store is
//! exact, and the judgement of each state uses its own acks. Clause: the
//! cell's, with determinism and integrity, as [`super::verdict`] judges
//! every trial.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::recorded::Recording;
use super::source::Workload;
use super::verdict::judge_state;
use super::{Outcome, Trial};
use crate::crashstate::{Files, Names};
use crate::kill::syscall::Point;
use crate::recovery::{Pair, Passes, Recovered, recover_batch};
use crate::trialdir::TrialEnv;

/// Most distinct stores one dump process recovers: large enough that an
/// interpreter's start is paid rarely, small enough that `--jobs` threads
/// share a sweep.
const MOST_PER_BATCH: usize = 96;

/// One crash state to judge.
#[derive(Clone, Debug)]
pub struct State {
    /// The kill point it belongs to.
    pub point: Point,
    /// Its ack journal's bytes.
    pub acks: Vec<u8>,
    /// Its store's files (the acks among them or not: recovery ignores them).
    pub files: Files,
    /// States with one version (consecutive, of one log) hold one store.
    pub version: u64,
    /// For a power-loss state: the rule that dropped data, for the reason.
    pub rule: Option<String>,
}

/// Checks process-crash `states` (ascending points) of a recording: each
/// distinct store recovered once, each state judged; after a state that
/// does not pass, later batches are not started. Returns a trial per
/// state up to the lowest that does not pass, which comes last with its
/// evidence (the state as rebuilt).
pub fn check(w: &Workload, rec: &Recording, states: Vec<State>) -> Vec<Trial> {
    let units = units_of(&states);
    let batches = batches(units.len(), w.ctx.jobs);
    let lowest_bad = AtomicU64::new(u64::MAX);
    let first_point = |b: usize| states[units[batches[b].start].start].point.ordinal;
    let skip = |b| first_point(b) > lowest_bad.load(Ordering::SeqCst) || crate::harness::interrupted().is_some();
    let judged = parallel(batches.len(), w.ctx.jobs, &skip, &|b| {
        let range = batches[b].clone();
        let stores: Vec<&Files> = units[range.clone()].iter().map(|u| &states[u.start].files).collect();
        let (recovered, note) = recover(w, rec, &stores, &format!("b{b}"));
        let mut trials = Vec::new();
        for (unit, r) in units[range].iter().zip(recovered) {
            for s in &states[unit.clone()] {
                let mut t = judge(w, rec, s, r.as_ref().map_err(Clone::clone));
                t.details.extend(note.clone());
                if t.outcome != Outcome::Pass {
                    lowest_bad.fetch_min(s.point.ordinal, Ordering::SeqCst);
                }
                trials.push(t);
            }
        }
        trials
    });
    let bad = lowest_bad.into_inner();
    let mut trials: Vec<Trial> = judged.into_iter().flatten().filter(|t| u64::from(t.index) <= bad).collect();
    trials.sort_by_key(|t| t.index);
    if interrupted_after(&mut trials) {
        return trials;
    }
    if let Some(last) = trials.last_mut().filter(|t| t.outcome != Outcome::Pass) {
        let state = states.iter().find(|s| s.point.ordinal == u64::from(last.index)).expect("a judged state");
        last.env = super::recorded::recorded_evidence(w, state, &format!("p{}", last.index));
    }
    trials
}

/// An interrupted run may have skipped batches: its last trial says so,
/// rather than a pass standing for states nobody checked. True if it did.
pub fn interrupted_after(trials: &mut Vec<Trial>) -> bool {
    if crate::harness::interrupted().is_none() {
        return false;
    }
    let next = trials.last().map_or(0, |t| t.index.saturating_add(1));
    trials.push(Trial::ended(next, Outcome::Interrupted("between batches of crash states".into())));
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

/// Judges one state with the recovery of its store.
fn judge(w: &Workload, rec: &Recording, s: &State, recovered: Result<&Recovered, String>) -> Trial {
    let index = u32::try_from(s.point.ordinal).unwrap_or(u32::MAX);
    let mut trial = Trial::new(index);
    let outcome = judge_state(w.cell, &rec.census, (&s.acks, rec.env.seed), recovered, &mut trial);
    let outcome = match (outcome, &s.rule) {
        (Outcome::Fire(why), Some(rule)) => Outcome::Fire(format!("{rule}: {why}")),
        (o, _) => o,
    };
    trial.kill_point = Some(s.point.kill_point(index, trial.acked));
    trial.conclude(outcome)
}

/// Recovers `stores` twice each, written out in a folder of their own
/// under the run's work folder; the results in order, and a note when the
/// batched dump failed and each store was recovered alone.
pub fn recover(
    w: &Workload,
    rec: &Recording,
    stores: &[&Files],
    label: &str,
) -> (Vec<Result<Recovered, String>>, Option<String>) {
    let fail = |why: String| (stores.iter().map(|_| Err(why.clone())).collect(), None);
    let prefix = format!("{}-{}-{label}-", w.job.cell.id, w.leg.name);
    let dir = match tempfile::Builder::new().prefix(&prefix).tempdir_in(&w.ctx.work_root) {
        Ok(d) => d,
        Err(e) => return fail(format!("batch folder: {e}")),
    };
    // One folder per pass, each state's store under a database name of its own.
    let passes = [dir.path().join("1"), dir.path().join("2")];
    if let Err(e) = passes.iter().try_for_each(std::fs::create_dir) {
        return fail(format!("batch folder: {e}"));
    }
    let step = rec.env.recovery_step.as_ref();
    let mut pairs = Vec::with_capacity(stores.len());
    for (i, files) in stores.iter().enumerate() {
        let db = format!("s{i}.db");
        match (files.write_store_to(&passes[0], &db), files.write_store_to(&passes[1], &db)) {
            (Ok(first), Ok(second)) => {
                // A recovery step reads and writes the state's transport.
                let transports = step.map(|_| [&first, &second].map(|d| Names::store(d).transport_path(d)));
                pairs.push(Pair { first, second, transports })
            }
            (Err(e), _) | (_, Err(e)) => return fail(format!("writing a crash state: {e}")),
        }
    }
    let passes = Passes { child: &w.ctx.child, deadline: w.ctx.deadline, home: &rec.env.home, out: dir.path(), step };
    let batched = w.ctx.dumps_in_batches();
    let got = recover_batch(&passes, &pairs, batched);
    (got.results.into_iter().map(|r| r.map_err(|e| e.to_string())).collect(), got.note)
}

/// Runs `work` for items 0..n (batches, kill points, trials) on up to
/// `jobs` threads, in ascending order, skipping any item `skip` says to (a
/// bad one below it was found, or the run was interrupted: the caller's
/// skip says so, and the caller says what an interrupt left unchecked);
/// the outputs in order of items.
pub fn parallel<T: Send>(
    n: usize,
    jobs: usize,
    skip: &(dyn Fn(usize) -> bool + Sync),
    work: &(dyn Fn(usize) -> T + Sync),
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| {
                loop {
                    let b = next.fetch_add(1, Ordering::SeqCst);
                    if b >= n {
                        break;
                    }
                    if skip(b) {
                        continue;
                    }
                    let out = work(b);
                    done.lock().expect("no batch thread panics holding the list").push((b, out));
                }
            });
        }
    });
    let mut done = done.into_inner().expect("no batch thread panicked");
    done.sort_by_key(|(b, _)| *b);
    done.into_iter().map(|(_, out)| out).collect()
}

/// A trial folder holding `state` as rebuilt (its store's files and its
/// ack journal), with a note saying where it came from.
pub(super) fn evidence_env(w: &Workload, state: &State, label: &str, note: &str, text: &str) -> Option<TrialEnv> {
    let env = w.env(label).ok()?;
    let dir = env.db.parent()?.to_path_buf();
    let mut files = state.files.clone();
    files.set_acks(&state.acks);
    files.write_to(&dir, &Names::new(&env.db, &env.acks, &env.transport)).ok()?;
    std::fs::write(dir.join(note), format!("{text}\n")).ok()?;
    Some(env)
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

    #[test]
    fn parallel_batches_come_back_in_order_and_skipped_ones_do_not_run() {
        let out = parallel(6, 3, &|b| b == 4, &|b| b * 10);
        assert_eq!(out, [0, 10, 20, 30, 50]);
    }
}
