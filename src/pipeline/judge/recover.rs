//! A sweep's recoveries: its distinct stores ([`Stores`]: each recovered
//! once per sweep), the run's recoveries asked first
//! ([`crate::pipeline::run::recoveries`]: once per run, taken in [`Turn`]s
//! where sweeps share their stores), the rest recovered in batches
//! ([`batches`], `dump-batch`) spread over `--jobs` threads, and a store its
//! batch left not run recovered alone when a verdict reads it ([`Got`]).
//!
//! A [`Recoverer`] is what the recoveries need of the driver that asks for
//! them: the job where it runs ([`Scope`]) and the recorded folder whose
//! config home, recovery step and database name every pass runs with. The
//! driver ([`crate::pipeline::judge::driver`]) builds one and hands it the
//! part of its plan the recoveries read ([`Recovering`]); this module never
//! names the driver, so the two stay one way.
//!
//! Crash model: the states are crash states rebuilt from a log or read
//! from a killed trial's folder; recovery depends on the store's files only
//! (the ack journal aside) and on what is fixed for the driver (the child,
//! the leg's config home, the cell's recovery step), so one recovery per
//! distinct store is exact. Clause: none of its own; a verdict
//! ([`crate::pipeline::judge::verdict::conclude`]) reads each recovery.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::crashstate::pages::Sought;
use crate::crashstate::{Files, Names};
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::pipeline::run::context::Scope;
use crate::pipeline::run::parallel::parallel;
use crate::pipeline::run::recoveries::{Digests, Recovery, Setting};
use crate::recovery::batch::Restore;
use crate::recovery::{Pair, Passes, Recovered, RecoveryError, recover_batch};
use crate::trialdir::TrialEnv;

/// Most distinct stores one dump process recovers: large enough that an
/// interpreter's start is paid rarely, small enough that `--jobs` threads
/// share a sweep.
pub const MOST_PER_BATCH: usize = 96;

/// A store's recovery as a unit gets it: the store's identity among the
/// sweep's distinct stores (for [`Passed`]), its recovery, and a note when
/// its batch failed and it was recovered alone. A verdict reads it through
/// [`Recoverer::recovered`], never the field itself: a store its batch did not
/// run is recovered then.
#[derive(Clone)]
pub struct Got {
    pub store: usize,
    pub recovery: Arc<Recovery>,
    pub note: Option<String>,
    /// Set when the batch did not run this store (an earlier state of the
    /// batch failed alone, and a fallback stops there).
    alone: Option<Arc<Alone>>,
}

/// A store its batch left not run, recovered alone the first time a
/// verdict reads it: a batch's earlier failure is another state's, and
/// never stands for this one's (a power point reads its states in another
/// order than its batch ran them).
struct Alone {
    files: Files,
    recovery: OnceLock<Recovery>,
}

/// A store to recover, and the recorded folder it is recovered laid over
/// if its files name it ([`Recoverer::named`]).
pub type Placed<'f> = (&'f Files, Option<PathBuf>);

/// The recorded folder's names sought in a sweep's stores so far: one
/// [`Sought`] per name (the folder's path, and its canonical path).
#[derive(Default)]
struct Mentions(Vec<Sought>);

impl Mentions {
    /// Whether `files` name `name` ([`Files::names`]).
    fn name(&mut self, files: &Files, name: &[u8]) -> bool {
        let i = match self.0.iter().position(|s| s.needle() == name) {
            Some(i) => i,
            None => {
                self.0.push(Sought::new(name));
                self.0.len() - 1
            }
        };
        files.names(&mut self.0[i])
    }
}

/// Whether a recovery is a batch's "not run": no verdict of its own.
fn not_run(r: &Recovery) -> bool {
    matches!(r, Err(Outcome::Error(Failure::Recovery(RecoveryError::NotRun { .. }))))
}

/// How a sweep's new stores are recovered: the part of the driver's plan
/// its recoveries read.
#[derive(Clone, Copy)]
pub struct Recovering<'c> {
    /// Names the batches' folders.
    pub label: &'c str,
    /// Progress counts each distinct store as it is recovered.
    pub per_store: bool,
    /// The turn this sweep takes with others whose stores it shares, if
    /// any.
    pub turn: Option<&'c Turn>,
    /// A wave's stores are spread over `--jobs` batches recovered side by
    /// side, or recovered in as few as they fit.
    pub spread: bool,
}

/// The distinct stores of a sweep, by their bytes (the ack journal aside):
/// each store's index, the same for byte-identical ones; or, for stores of
/// one log, by their version (one version of a log is one store).
#[derive(Default)]
pub struct Stores {
    files: Vec<Files>,
    by_hash: HashMap<u64, Vec<usize>>,
    by_version: Option<HashMap<u64, usize>>,
}

impl Stores {
    /// Stores that all come from one log.
    pub fn of_one_log() -> Stores {
        Stores { by_version: Some(HashMap::new()), ..Stores::default() }
    }

    /// The index of `files`' store, added if no store so far holds its bytes.
    pub fn add(&mut self, files: Files) -> usize {
        if let Some(by_version) = &mut self.by_version {
            let next = self.files.len();
            let id = *by_version.entry(files.version()).or_insert(next);
            if id == next {
                self.files.push(files);
            }
            return id;
        }
        let bucket = self.by_hash.entry(files.store_hash()).or_default();
        if let Some(&same) = bucket.iter().find(|&&j| self.files[j].store().eq(files.store())) {
            return same;
        }
        bucket.push(self.files.len());
        self.files.push(files);
        self.files.len() - 1
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A turn at recovering, for sweeps that share their stores (the audit's
/// power and torn sweeps of one recording). A sweep holds it while it
/// recovers. A second one asking meanwhile waits, then finds the first's
/// recoveries in the run's rather than recover the same stores beside it.
/// A recovery that failed is not lent: the second sweep meets its own.
#[derive(Default)]
pub struct Turn(Mutex<()>);

impl Turn {
    /// Waits for the turn; it ends when the guard drops.
    pub fn take(&self) -> std::sync::MutexGuard<'_, ()> {
        self.0.lock().expect("no sweep panics holding its turn")
    }
}

/// What the sweep's stores and their recoveries are so far.
#[derive(Default)]
pub struct SweepStores {
    stores: Stores,
    recovered: Vec<Option<(Arc<Recovery>, Option<String>)>>,
    /// Stores whose recovery the run's cache already held.
    hits: usize,
    /// The pages digested for the run's cache.
    digests: Digests,
    /// The pages searched for the recorded folder's names.
    mentions: Mentions,
    /// The stores a batch left not run, each recovered alone if a verdict
    /// reads it.
    alone: HashMap<usize, Arc<Alone>>,
}

/// What a sweep's recoveries need of the driver that asks for them: the
/// job where it runs (a recoverer derefs to it: the run's context, the leg,
/// the folders' label) and the folder whose config home and recovery step
/// every pass runs with, and whose database name a store is written under.
#[derive(Clone, Copy)]
pub struct Recoverer<'a> {
    pub scope: Scope<'a>,
    pub recorded: &'a TrialEnv,
}

impl<'a> std::ops::Deref for Recoverer<'a> {
    type Target = Scope<'a>;

    fn deref(&self) -> &Scope<'a> {
        &self.scope
    }
}

impl Recoverer<'_> {
    /// Recovers the stores of `ids` not recovered yet in this sweep.
    pub fn recover_new(&self, ran: &mut SweepStores, ids: &[Vec<usize>], plan: &Recovering) {
        let mut new: Vec<usize> = ids.iter().flatten().copied().filter(|&id| ran.recovered_at(id).is_none()).collect();
        new.sort_unstable();
        new.dedup();
        if plan.per_store {
            // Progress counts the distinct stores recovered, batch by batch.
            self.ctx.events.planned(new.len() as u64);
            self.ctx.events.phase(crate::model::Phase::Recovering);
        }
        let files: Vec<&Files> = new.iter().map(|&id| &ran.stores.files[id]).collect();
        let turn = plan.turn.map(Turn::take);
        let got = self.recover_in_run(&files, plan, (&mut ran.hits, &mut ran.digests, &mut ran.mentions));
        drop(turn);
        ran.recovered.resize(ran.stores.len(), None);
        for (id, r) in new.into_iter().zip(got) {
            if not_run(&r.0) {
                let files = ran.stores.files[id].clone();
                ran.alone.insert(id, Arc::new(Alone { files, recovery: OnceLock::new() }));
            }
            ran.recovered[id] = Some(r);
        }
    }

    /// Store `g`'s recovery, as a verdict takes it. One that its batch did
    /// not run is recovered alone first, once per sweep: a batch stops at
    /// its first state that fails alone, in its own order, and a unit may
    /// read its states in another (a power point: the one that lost the
    /// least first).
    pub fn recovered<'g>(&self, g: &'g Got) -> Result<&'g Recovered, Outcome> {
        let r = match &g.alone {
            Some(alone) => alone.recovery.get_or_init(|| self.alone(&alone.files)),
            None => g.recovery.as_ref(),
        };
        r.as_ref().map_err(Clone::clone)
    }

    /// Recovers one store alone, in a batch of its own.
    fn alone(&self, files: &Files) -> Recovery {
        let at = self.named(files, &mut Mentions::default());
        let (mut got, _) = self.recover(&[(files, at)], "alone");
        got.pop().unwrap_or(Err(Outcome::Interrupted(Interruption::BetweenBatches)))
    }

    /// Recovers `files` in batches, as `plan` says, taking from the run's
    /// recoveries ([`crate::pipeline::run::recoveries`]) each store they hold (`hits`
    /// counts them) and keeping there each new one that succeeded; where
    /// each new one is recovered is asked of `mentions` ([`Recoverer::named`]).
    fn recover_in_run(
        &self,
        files: &[&Files],
        plan: &Recovering,
        (hits, memo, mentions): (&mut usize, &mut Digests, &mut Mentions),
    ) -> Vec<(Arc<Recovery>, Option<String>)> {
        let run = &self.ctx.recoveries;
        let setting = self.setting();
        let bytes: Vec<_> = files.iter().map(|f| run.bytes(f, memo)).collect();
        let mut got: Vec<Option<(Arc<Recovery>, Option<String>)>> =
            bytes.iter().map(|b| run.get(*b, &setting).map(|r| (r, None))).collect();
        let missing: Vec<usize> = (0..files.len()).filter(|&i| got[i].is_none()).collect();
        *hits += files.len() - missing.len();
        let done = |range: Range<usize>| self.ticked(plan, range);
        done(missing.len()..files.len());
        let stores: Vec<Placed> = missing.iter().map(|&i| (files[i], self.named(files[i], mentions))).collect();
        for (&i, (r, note)) in missing.iter().zip(self.recover_spread(&stores, plan, &done)) {
            let r = Arc::new(r);
            run.put(bytes[i], &setting, Arc::clone(&r));
            got[i] = Some((r, note));
        }
        got.into_iter().map(|g| g.expect("a recovery per store")).collect()
    }

    /// Progress for the stores of `range`, recovered: a step each where
    /// the plan counts stores.
    fn ticked(&self, plan: &Recovering, range: Range<usize>) {
        if plan.per_store {
            range.for_each(|_| self.ctx.events.done());
        }
    }

    /// What this driver's recoveries depend on besides the store's bytes.
    pub fn setting(&self) -> Setting {
        Setting {
            launcher: self.ctx.child.launcher(),
            config: self.ctx.configured(self.leg),
            step: self.recorded.recovery_step.clone(),
            mutant: self.ctx.options.mutant.clone(),
            library: self.leg.sqlite.clone(),
        }
    }

    /// Recovers `files` in batches (spread over the sweep's threads if the
    /// plan says so), in order, each batch's folders labelled `{label}{b}`
    /// (the plan's label); `done` hears the
    /// range of `files` each batch recovered, as it ends (a progress tick).
    /// One recovery per store (with its batch's note): a batch an interrupt
    /// kept from starting is an interrupted recovery of each of its stores.
    fn recover_spread(
        &self,
        files: &[Placed],
        plan: &Recovering,
        done: &(dyn Fn(Range<usize>) + Sync),
    ) -> Vec<(Recovery, Option<String>)> {
        let label = plan.label;
        let groups = batches(files.len(), if plan.spread { self.ctx.jobs } else { 1 });
        let got = parallel(groups.len(), self.ctx.jobs, &|_| false, &|b| {
            if self.ctx.interrupt.is_set() {
                let cut = || (Err(Outcome::Interrupted(Interruption::BetweenBatches)), None);
                return groups[b].clone().map(|_| cut()).collect::<Vec<_>>();
            }
            let (got, note) = self.recover(&files[groups[b].clone()], &format!("{label}{b}"));
            done(groups[b].clone());
            got.into_iter().map(|r| (r, note.clone())).collect()
        });
        got.into_iter().flatten().collect()
    }

    /// Recovers `stores` twice each, written out in a folder of their own
    /// under the run's work folder (or laid over the recorded folder, where
    /// a store's place says so); the results in order, and a note when the
    /// batched dump failed and each store was recovered alone.
    pub fn recover(&self, stores: &[Placed], label: &str) -> (Vec<Recovery>, Option<String>) {
        self.ctx.pool.unit(&self.ctx.interrupt, || self.recover_in_folder(stores, label))
    }

    fn recover_in_folder(&self, stores: &[Placed], label: &str) -> (Vec<Recovery>, Option<String>) {
        let fail = |f: Failure| (stores.iter().map(|_| Err(Outcome::Error(f.clone()))).collect(), None);
        let prefix = format!("{}-", self.label(label));
        let dir = match tempfile::Builder::new().prefix(&prefix).tempdir_in(&self.ctx.work_root) {
            Ok(d) => d,
            Err(e) => {
                crate::harness::disk::failed(&self.ctx.work_root, &e);
                return fail(Failure::BatchFolder(e.to_string()));
            }
        };
        // One folder per pass and state, the store in place: its own
        // database name and every file of its folder beside it, so that a
        // recovery that reads a file beside its database sees it.
        let db = self.recorded.db.file_name().map_or_else(|| "store.db".into(), |n| n.to_string_lossy().into_owned());
        let step = self.recorded.recovery_step.as_ref();
        let mut pairs = Vec::with_capacity(stores.len());
        for (i, &(files, ref at)) in stores.iter().enumerate() {
            let dirs = [1, 2].map(|n| dir.path().join(format!("{n}/s{i}")));
            let write = |d: &Path| {
                crate::harness::disk::checked(d, std::fs::create_dir_all(d).and_then(|()| files.write_store_to(d, &db)))
            };
            match (write(&dirs[0]), write(&dirs[1])) {
                (Ok(first), Ok(second)) => {
                    // A recovery step reads and writes the state's transport.
                    let transports = step.map(|_| [&first, &second].map(|d| Names::store(d).transport_path(d)));
                    let db = db.clone();
                    let restore: Restore =
                        Arc::new(move |n| files.write_store_to(&dirs[n as usize - 1], &db).map(drop));
                    pairs.push(Pair { first, second, transports, restore: Some(restore), at: at.clone() })
                }
                (Err(e), _) | (_, Err(e)) => return fail(Failure::WritingState(e.to_string())),
            }
        }
        let passes = Passes {
            child: &self.ctx.child,
            deadline: self.ctx.deadline,
            interrupt: self.ctx.interrupt.clone(),
            home: &self.recorded.home,
            out: dir.path(),
            step,
            place: None,
        };
        let got = recover_batch(&passes, &pairs, self.ctx.batching());
        (got.results.into_iter().map(|r| r.map_err(Outcome::from)).collect(), got.note)
    }

    /// The folder the recorded run wrote in, if `files` name it (SQLite's
    /// hot journal names its super-journal by absolute path): such a state
    /// is recovered laid over that folder, where every name in it resolves
    /// (docs/design/recorded.md, "Where a state is recovered"). The pages
    /// met before are answered from `mentions`: a sweep asks it of each of
    /// its distinct stores, and they share most of their pages.
    fn named(&self, files: &Files, mentions: &mut Mentions) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let at = self.recorded.db.parent()?;
        let real = at.canonicalize().ok().filter(|r| r != at);
        let mut named = |p: &Path| mentions.name(files, p.as_os_str().as_bytes());
        (named(at) || real.as_deref().is_some_and(named)).then(|| at.to_path_buf())
    }
}

impl SweepStores {
    /// Stores that all come from one log ([`Stores::of_one_log`]).
    pub fn of_one_log() -> SweepStores {
        SweepStores { stores: Stores::of_one_log(), ..SweepStores::default() }
    }

    /// The index of `files`' store among the sweep's ([`Stores::add`]).
    pub fn add(&mut self, files: Files) -> usize {
        self.stores.add(files)
    }

    /// How many stores the run's cache lent this sweep.
    pub fn hits(&self) -> usize {
        self.hits
    }

    /// How many distinct stores the sweep has a recovery of.
    pub fn recovered_count(&self) -> usize {
        self.recovered.iter().flatten().count()
    }

    fn recovered_at(&self, id: usize) -> Option<&(Arc<Recovery>, Option<String>)> {
        self.recovered.get(id).and_then(Option::as_ref)
    }

    /// Store `id`'s recovery, as a unit gets it.
    pub fn got(&self, id: usize) -> Got {
        let (recovery, note) = self
            .recovered_at(id)
            .cloned()
            .unwrap_or_else(|| (Arc::new(Err(Outcome::Interrupted(Interruption::BetweenBatches))), None));
        Got { store: id, recovery, note, alone: self.alone.get(&id).cloned() }
    }
}

/// Splits `n` stores into batches of at most [`MOST_PER_BATCH`], their
/// count a multiple of `jobs` so that every thread gets as many, of about
/// one size.
pub fn batches(n: usize, jobs: usize) -> Vec<Range<usize>> {
    let jobs = jobs.max(1);
    let count = jobs * n.div_ceil(jobs * MOST_PER_BATCH).max(1);
    let size = n.div_ceil(count).max(1);
    (0..n).step_by(size).map(|s| s..(s + size).min(n)).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::crashstate::{At, Effect};
    use crate::kill::syscall::FileKind;

    /// A store whose database is `db`, with the ack journal `acks`.
    pub(crate) fn files(db: &[u8], acks: &[u8]) -> Files {
        let mut f = Files::default();
        let write = |file, data: &[u8]| Effect::Write { file, at: At::Offset(0), data: data.to_vec() };
        f.apply(&write(FileKind::Database, db));
        f.set_acks(acks);
        f
    }

    #[test]
    fn byte_identical_stores_are_one_whatever_their_acks() {
        let mut s = Stores::default();
        assert_eq!(s.add(files(b"page", b"a")), 0);
        assert_eq!(s.add(files(b"page", b"ab")), 0, "the ack journal is not the store");
        assert_eq!(s.add(files(b"pagX", b"a")), 1);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn batches_cover_every_store_about_once_per_thread() {
        assert_eq!(batches(10, 2), [0..5, 5..10]);
        assert_eq!(batches(3, 4), [0..1, 1..2, 2..3]);
        assert_eq!(batches(0, 2), Vec::<Range<usize>>::new());
        assert_eq!(batches(200, 2).len(), 4, "two rounds of two, not 96, 96 and 8");
        assert!(batches(1000, 2).iter().all(|b| b.len() <= MOST_PER_BATCH));
    }
}
