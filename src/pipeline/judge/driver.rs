//! The one driver of crash states, rebuilt or left in a trial's folder: a
//! crash source ([`Source`]) yields units of work in ascending order of
//! their kill points (or trial indices) and says
//! how to judge one and how to annotate its finding ([`Cause`]); the driver
//! owns the rest, written once: the waves of units made over `--jobs`
//! threads up to the first that does not pass
//! ([`crate::pipeline::run::parallel::until_first_bad`]), the deduplication of stores by
//! their bytes ([`Stores`]) so that each distinct store is recovered once
//! per sweep, the run's recoveries asked first
//! ([`crate::pipeline::run::recoveries`]: once per run, taken in [`Turn`]s
//! where sweeps share their stores), the batched
//! recoveries, the memo of states already judged to pass ([`Passed`]), the
//! judgement of a point's power-loss states ([`Driver::power_point`]), the
//! evidence of a state that does not pass with its recovery beside it
//! ([`Driver::keep`]), and progress.
//!
//! Crash model: a unit's states are crash states rebuilt from a log (a
//! process crash, a power loss, the end of a run whose call was made to
//! fail) or read from the folder a killed trial or a race left
//! ([`crate::crashstate::Files::read_store`]: one kind of store for both,
//! so that nothing below is written twice); recovery depends on the store's files only (the ack journal
//! aside), and on what is fixed for the driver (the child, the leg's config
//! home, the cell's recovery step), so one recovery per distinct store is
//! exact. Clause: each source's, by the one verdict path
//! ([`crate::pipeline::judge::verdict::conclude`]). The memo holds passes only: a state
//! skipped for it is one whose store and acks already passed, and would
//! pass again, so it never changes a verdict.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use crate::cells::End;
use crate::crashstate::power::AtPoint;
use crate::crashstate::{Files, Names, State};
use crate::kill::TrialIndex;
use crate::pipeline::judge::census::Census;
use crate::pipeline::judge::verdict::{Acks, Crash, Ended, conclude};
use crate::pipeline::outcome::{Failure, Fault, Finding, Interruption, Outcome, PowerLoss};
use crate::pipeline::run::context::Scope;
use crate::pipeline::run::parallel::{parallel, until_first_bad};
use crate::pipeline::run::recoveries::{Digests, Setting};
use crate::pipeline::trial::Trial;
use crate::recovery::batch::Restore;
use crate::recovery::{Pair, Passes, Recovered, RecoveryError, recover_batch};
use crate::trialdir::TrialEnv;

/// Most distinct stores one dump process recovers: large enough that an
/// interpreter's start is paid rarely, small enough that `--jobs` threads
/// share a sweep.
pub const MOST_PER_BATCH: usize = 96;

/// What the driver needs from the sweep whose states it checks: its job
/// where it runs (the one set of job fields; the driver derefs to it, and
/// names its folders by [`Scope::label`]), and what the sweep adds.
pub struct Driver<'a> {
    pub scope: Scope<'a>,
    /// The recording's census: its ready record and leg audit stand for
    /// every rebuilt state (the sweep runs only on a leg the census showed
    /// honored); none for trials, each of which has its own.
    pub census: Option<&'a Census>,
    /// The folder whose config home and recovery step every pass runs with
    /// (the recorded run's, or for trials one made for their result: every
    /// trial of a result has the leg's home and the cell's step), and whose
    /// database and workload seed a rebuilt state is judged with.
    pub recorded: &'a TrialEnv,
    /// Makes a trial folder of this job (for a state's evidence).
    pub make_env: &'a (dyn Fn(&str) -> Result<TrialEnv, Failure> + Sync),
}

impl<'a> std::ops::Deref for Driver<'a> {
    type Target = Scope<'a>;

    fn deref(&self) -> &Scope<'a> {
        &self.scope
    }
}

pub use crate::pipeline::run::recoveries::Recovery;

/// A crash source, as the driver runs it: units of work (a kill point's
/// states, a run with a call made to fail), each made (the child work, if
/// any), its stores recovered by the driver, then judged.
pub trait Source: Sync {
    /// What making a unit gives: the states it left to judge.
    type Unit: Send;
    /// Unit `i`'s kill point: ascending in `i`, the lowest bad one decides.
    fn key(&self, i: usize) -> u64;
    /// Unit `i`'s child work, or the trial that ended it (a bad one).
    fn make(&self, i: usize) -> Result<Self::Unit, Box<Trial>>;
    /// Whether the unit, as made, already does not pass (no unit above it
    /// is made).
    fn decided(&self, _unit: &Self::Unit) -> bool {
        false
    }
    /// The stores the unit needs recovered, in the order `judge` reads them.
    fn stores(&self, unit: &Self::Unit) -> Vec<Files>;
    /// Judges the unit on its stores' recoveries: its trials (a unit may
    /// hold several states), in order, a finding annotated and its evidence
    /// kept; the driver keeps them up to the first that does not pass.
    fn judge(&self, d: &Driver, unit: Self::Unit, got: &[Got], memo: &mut Passed) -> Vec<Trial>;
    /// The trial that says an interrupt kept units from being made, after
    /// trial `next - 1` (none: before the first).
    fn interrupted(&self, next: Option<TrialIndex>) -> Trial {
        Trial::ended(next.unwrap_or(TrialIndex::CENSUS), Outcome::Interrupted(Interruption::BetweenBatches))
    }
}

/// A store's recovery as a unit gets it: the store's identity among the
/// sweep's distinct stores (for [`Passed`]), its recovery, and a note when
/// its batch failed and it was recovered alone. A verdict reads it through
/// [`Driver::recovered`], never the field itself: a store its batch did not
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

/// Whether a recovery is a batch's "not run": no verdict of its own.
fn not_run(r: &Recovery) -> bool {
    matches!(r, Err(Outcome::Error(Failure::Recovery(RecoveryError::NotRun { .. }))))
}

/// What progress counts: each distinct store as it is recovered (a power
/// sweep: judging is a moment once they are), each trial as it is judged,
/// or each unit as it is made (a trial, once its child has ended: its
/// judgement waits for its wave's recoveries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    Stores,
    Units,
    Made,
}

/// How the driver runs a source.
pub struct Plan<'c> {
    pub units: usize,
    /// Units made before their stores are recovered together.
    pub wave: usize,
    /// Names the batches' folders.
    pub label: &'c str,
    pub count: Count,
    /// The turn this sweep takes with others whose stores it shares, if
    /// any.
    pub turn: Option<&'c Turn>,
    /// Every store comes from one log: stores are told apart by their
    /// version ([`Files::version`]), without hashing megabytes of WAL.
    pub one_log: bool,
    /// A wave's stores are spread over `--jobs` batches recovered side by
    /// side (a sweep's hundreds), or recovered in as few as they fit (a
    /// wave of trials: the fewest processes; other results use the threads).
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

/// States already judged to pass, by store and ack journal: judged again,
/// they would pass again.
#[derive(Default)]
pub struct Passed(HashSet<(usize, u64)>);

impl Passed {
    fn key(store: usize, acks: &[u8]) -> (usize, u64) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        acks.hash(&mut h);
        (store, h.finish())
    }

    pub fn contains(&self, store: usize, acks: &[u8]) -> bool {
        self.0.contains(&Passed::key(store, acks))
    }

    pub fn insert(&mut self, store: usize, acks: &[u8]) {
        self.0.insert(Passed::key(store, acks));
    }
}

/// What made a state, for its finding's words: the power loss that left it
/// and the call that was made to fail, where there were.
#[derive(Clone, Debug, Default)]
pub struct Cause {
    pub power: Option<PowerLoss>,
    pub fault: Option<Fault>,
}

impl Cause {
    /// `outcome` with its cause: a fire names it; the harness's error says
    /// where it arose (the power loss inside the fault).
    pub fn annotate(&self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Fire(f) => Outcome::Fire(Finding {
                violations: f.violations,
                power: self.power.clone().or(f.power),
                fault: self.fault.clone().map(Box::new).or(f.fault),
            }),
            Outcome::Error(error) => {
                let error = match &self.power {
                    Some(power) => Failure::PowerLoss { power: power.clone(), error: Box::new(error) },
                    None => error,
                };
                Outcome::Error(match &self.fault {
                    Some(fault) => Failure::Fault { fault: fault.clone(), error: Box::new(error) },
                    None => error,
                })
            }
            other => other,
        }
    }
}

/// A power-loss state of a point that did not pass: its trial (the outcome
/// not yet concluded), its place among the point's states, and the outcome.
pub struct BadPower {
    pub trial: Trial,
    pub at: usize,
    pub outcome: Outcome,
}

/// What the sweep's stores and their recoveries are so far.
#[derive(Default)]
struct Ran {
    stores: Stores,
    recovered: Vec<Option<(Arc<Recovery>, Option<String>)>>,
    passed: Passed,
    /// Stores whose recovery the run's cache already held.
    hits: usize,
    /// The pages digested for the run's cache.
    digests: Digests,
    /// The stores a batch left not run, each recovered alone if a verdict
    /// reads it.
    alone: HashMap<usize, Arc<Alone>>,
}

impl Driver<'_> {
    /// Runs `source` as `plan` says: wave by wave, each wave's units made
    /// over `--jobs` threads up to the first that does not pass, their new
    /// stores recovered, each unit judged in order; the trials up to the
    /// first that does not pass, which comes last. An interrupted run says
    /// so in a last trial rather than let a pass stand for unjudged units.
    pub fn run<S: Source>(&self, source: &S, plan: &Plan) -> Vec<Trial> {
        let mut trials = Vec::new();
        let mut ran = Ran::default();
        if plan.one_log {
            ran.stores = Stores::of_one_log();
        }
        let mut start = 0;
        while start < plan.units {
            let end = (start + plan.wave.max(1)).min(plan.units);
            if self.wave(source, start..end, plan, &mut ran, &mut trials)
                || interrupted_after(&mut trials, |next| source.interrupted(next))
            {
                break;
            }
            start = end;
        }
        if let Some(last) = trials.last_mut().filter(|_| ran.hits > 0) {
            let recovered = ran.recovered.iter().flatten().count();
            last.details.push(format!(
                "{} of {recovered} distinct stores were recovered earlier in this run, byte for byte under this \
                 leg's settings: their recoveries came from the run's cache",
                ran.hits
            ));
        }
        trials
    }

    /// One wave: true when a unit did not pass (it decides the sweep).
    fn wave<S: Source>(&self, s: &S, range: Range<usize>, plan: &Plan, ran: &mut Ran, trials: &mut Vec<Trial>) -> bool {
        let key = |i: usize| s.key(range.start + i);
        let made = until_first_bad(range.len(), self.ctx.jobs, &key, &|i| {
            let unit = s.make(range.start + i);
            if plan.count == Count::Made {
                self.ctx.tally.done();
            }
            let bad = unit.as_ref().map_or(true, |u| s.decided(u));
            (unit, bad.then(|| key(i)))
        })
        .outputs;
        let mut units = Vec::new();
        let mut errored = None;
        for m in made {
            match m {
                Ok(u) => units.push(u),
                Err(t) => errored = Some(*t),
            }
        }
        let ids: Vec<Vec<usize>> =
            units.iter().map(|u| s.stores(u).into_iter().map(|f| ran.stores.add(f)).collect()).collect();
        self.recover_new(ran, &ids, plan);
        for (unit, ids) in units.into_iter().zip(ids) {
            let got: Vec<Got> = ids.iter().map(|&id| ran.got(id)).collect();
            for t in s.judge(self, unit, &got, &mut ran.passed) {
                if plan.count == Count::Units {
                    self.ctx.tally.done();
                }
                let bad = t.is_bad();
                trials.push(t);
                if bad {
                    return true;
                }
            }
        }
        trials.extend(errored);
        trials.last().is_some_and(Trial::is_bad)
    }

    /// Recovers the stores of `ids` not recovered yet in this sweep.
    fn recover_new(&self, ran: &mut Ran, ids: &[Vec<usize>], plan: &Plan) {
        let mut new: Vec<usize> = ids.iter().flatten().copied().filter(|&id| ran.recovered_at(id).is_none()).collect();
        new.sort_unstable();
        new.dedup();
        if plan.count == Count::Stores {
            // Progress counts the distinct stores recovered, batch by batch.
            self.ctx.tally.planned(new.len() as u64);
            self.ctx.tally.phase("recovering");
        }
        let files: Vec<&Files> = new.iter().map(|&id| &ran.stores.files[id]).collect();
        let turn = plan.turn.map(Turn::take);
        let got = self.recover_in_run(&files, plan, (&mut ran.hits, &mut ran.digests));
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
        let (mut got, _) = self.recover(&[files], "alone");
        got.pop().unwrap_or(Err(Outcome::Interrupted(Interruption::BetweenBatches)))
    }

    /// Recovers `files` in batches, as `plan` says, taking from the run's
    /// recoveries ([`crate::pipeline::run::recoveries`]) each store they hold (`hits`
    /// counts them) and keeping there each new one that succeeded.
    fn recover_in_run(
        &self,
        files: &[&Files],
        plan: &Plan,
        (hits, memo): (&mut usize, &mut Digests),
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
        let stores: Vec<&Files> = missing.iter().map(|&i| files[i]).collect();
        for (&i, (r, note)) in missing.iter().zip(self.recover_spread(&stores, plan, &done)) {
            let r = Arc::new(r);
            run.put(bytes[i], &setting, Arc::clone(&r));
            got[i] = Some((r, note));
        }
        got.into_iter().map(|g| g.expect("a recovery per store")).collect()
    }

    /// Progress for the stores of `range`, recovered: a step each where
    /// the plan counts stores.
    fn ticked(&self, plan: &Plan, range: Range<usize>) {
        if plan.count == Count::Stores {
            range.for_each(|_| self.ctx.tally.done());
        }
    }

    /// What this driver's recoveries depend on besides the store's bytes.
    fn setting(&self) -> Setting {
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
        files: &[&Files],
        plan: &Plan,
        done: &(dyn Fn(Range<usize>) + Sync),
    ) -> Vec<(Recovery, Option<String>)> {
        let label = plan.label;
        let groups = batches(files.len(), if plan.spread { self.ctx.jobs } else { 1 });
        let got = parallel(groups.len(), self.ctx.jobs, &|_| false, &|b| {
            if crate::harness::interrupted().is_some() {
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
    /// under the run's work folder; the results in order, and a note when
    /// the batched dump failed and each store was recovered alone.
    pub fn recover(&self, stores: &[&Files], label: &str) -> (Vec<Recovery>, Option<String>) {
        self.ctx.pool.unit(|| self.recover_in_folder(stores, label))
    }

    fn recover_in_folder(&self, stores: &[&Files], label: &str) -> (Vec<Recovery>, Option<String>) {
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
        for (i, &files) in stores.iter().enumerate() {
            let dirs = [1, 2].map(|n| dir.path().join(format!("{n}/s{i}")));
            let write = |d: &std::path::Path| {
                crate::harness::disk::checked(d, std::fs::create_dir_all(d).and_then(|()| files.write_store_to(d, &db)))
            };
            match (write(&dirs[0]), write(&dirs[1])) {
                (Ok(first), Ok(second)) => {
                    // A recovery step reads and writes the state's transport.
                    let transports = step.map(|_| [&first, &second].map(|d| Names::store(d).transport_path(d)));
                    let db = db.clone();
                    let restore: Restore =
                        Arc::new(move |n| files.write_store_to(&dirs[n as usize - 1], &db).map(drop));
                    pairs.push(Pair { first, second, transports, restore: Some(restore), at: self.named(files) })
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
            place: None,
        };
        let got = recover_batch(&passes, &pairs, self.ctx.batching());
        (got.results.into_iter().map(|r| r.map_err(Outcome::from)).collect(), got.note)
    }

    /// The folder the recorded run wrote in, if `files` name it (SQLite's
    /// hot journal names its super-journal by absolute path): such a state
    /// is recovered laid over that folder, where every name in it resolves
    /// (docs/design/recorded.md, "Where a state is recovered").
    fn named(&self, files: &Files) -> Option<std::path::PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let at = self.recorded.db.parent()?;
        let real = at.canonicalize().ok().filter(|r| r != at);
        let named = |p: &std::path::Path| files.names(p.as_os_str().as_bytes());
        (named(at) || real.as_deref().is_some_and(named)).then(|| at.to_path_buf())
    }

    /// A state with ack journal `acks`, as the verdict reads it.
    pub fn crash<'s>(&'s self, acks: &'s [u8]) -> Crash<'s> {
        Crash {
            cell: self.cell,
            leg: self.leg,
            db: &self.recorded.db,
            ended: vec![Ended { name: "child".into(), acks: Acks::Bytes(acks), end: End::Killed }],
            seed: self.recorded.seed,
            census: self.census,
        }
    }

    /// The power-loss states of one point, the one that lost the least
    /// first (the model lists them the other way): if it fails, the first
    /// operation it lost is the one whose loss did it. `got` holds their
    /// stores' recoveries in that order ([`judged_order`]), the order their
    /// batch recovers them in, so that a batch's fallback, which stops at
    /// its first state that fails alone, stops where this verdict does.
    /// The last that passed (or a bare trial, if the memo spared every
    /// one), or the first that did not, with its place in the point's
    /// list. The first state is judged even when the memo holds it: its
    /// trial is the point's (its acks, its leg audit).
    pub fn power_point(
        &self,
        index: TrialIndex,
        at: &AtPoint,
        got: &[Got],
        memo: &mut Passed,
    ) -> Result<Trial, Box<BadPower>> {
        let mut last = Trial::new(index);
        for (k, g) in got.iter().enumerate() {
            let pos = got.len() - 1 - k;
            if k > 0 && memo.contains(g.store, &at.acks) {
                continue;
            }
            let mut t = Trial::new(index);
            let outcome = conclude(&self.crash(&at.acks), &mut t, || self.recovered(g));
            if outcome.is_pass() {
                memo.insert(g.store, &at.acks);
                last = t;
                continue;
            }
            return Err(Box::new(BadPower { trial: t, at: pos, outcome }));
        }
        Ok(last)
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

    /// [`Driver::evidence`], with the recovery passes' copies and outputs
    /// beside the state, as a killed trial keeps them.
    pub fn keep(&self, state: &State, label: &str, note: &str, text: &str) -> Option<TrialEnv> {
        let env = self.evidence(state, label, note, text)?;
        self.beside(&env);
        Some(env)
    }

    /// Recovers the crash state in `env` again, in its own folder: the
    /// passes' copies and outputs become part of the evidence.
    pub fn beside(&self, env: &TrialEnv) {
        let _ = self.ctx.recover_alone(env);
    }
}

impl Ran {
    fn recovered_at(&self, id: usize) -> Option<&(Arc<Recovery>, Option<String>)> {
        self.recovered.get(id).and_then(Option::as_ref)
    }

    /// Store `id`'s recovery, as a unit gets it.
    fn got(&self, id: usize) -> Got {
        let (recovery, note) = self
            .recovered_at(id)
            .cloned()
            .unwrap_or_else(|| (Arc::new(Err(Outcome::Interrupted(Interruption::BetweenBatches))), None));
        Got { store: id, recovery, note, alone: self.alone.get(&id).cloned() }
    }
}

/// An interrupted run may have skipped units: its last trial (`cut`, told
/// the index after the last so far) says so, rather than a pass standing
/// for states nobody checked. True if it did.
fn interrupted_after(trials: &mut Vec<Trial>, cut: impl FnOnce(Option<TrialIndex>) -> Trial) -> bool {
    if crate::harness::interrupted().is_none() {
        return false;
    }
    trials.push(cut(trials.last().map(|t| t.index.next())));
    true
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

/// A power point's states in the order [`Driver::power_point`] judges
/// them: the one that lost the least first, the model's list reversed.
pub fn judged_order(at: &AtPoint) -> impl Iterator<Item = &(usize, crate::crashstate::power::Dropped)> {
    at.states.iter().rev()
}

/// The sentence of a power state that lost nothing.
pub const NOTHING_LOST: &str = "nothing was lost (the process crash's own state)";

/// The rule a finding reports for a state that lost `rules` (the cause
/// first).
pub fn first_rule(rules: &[String]) -> String {
    rules.first().cloned().unwrap_or_else(|| NOTHING_LOST.into())
}

/// Runs `f` with a driver of cell 1 on a WAL leg under `ctx`, its census
/// of 20 points in a folder of its own.
#[cfg(test)]
pub fn with_driver<T>(ctx: &crate::pipeline::run::context::Context, f: impl FnOnce(&Driver) -> T) -> T {
    let leg = crate::matrix::Leg::new("wal", None, None);
    let ready: crashcells_protocol::Ready =
        serde_json::from_str(r#"{"protocol":2,"pid":1,"op":"append","sqlite_version":"3.54.1","journal_mode":"wal"}"#)
            .unwrap();
    let work = tempfile::tempdir().unwrap();
    let recorded = TrialEnv::new(work.path(), &leg, "t").unwrap();
    let audit = crate::legaudit::audit_leg(&recorded.db, &ready, &leg);
    let census = Census { points: 20, ready, audit, windows: None };
    let make_env = |_: &str| Err(Failure::NoKill);
    let spec = crate::catalog::Catalog::embedded().unwrap().find("prefix-durability").unwrap().clone();
    let job = crate::plan::Job { cell: spec, leg: Some(leg.clone()), kill: crate::plan::KillMode::Syscall, seed: 1 };
    let cell = crate::cells::find("prefix-durability").unwrap();
    let scope = Scope { job: &job, leg: &leg, cell, ctx };
    let d = Driver { scope, census: Some(&census), recorded: &recorded, make_env: &make_env };
    f(&d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::crashstate::{At, Effect};
    use crate::harness::Exit;
    use crate::kill::Ordinal;
    use crate::kill::inject::Injected;
    use crate::kill::syscall::FileKind;
    use crate::pipeline::run::context::Context;

    fn files(db: &[u8], acks: &[u8]) -> Files {
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

    /// A source of `n` units keyed 1..=n that fires at `fire` and cannot
    /// make `broken`, and counts what it made.
    struct Fake {
        fire: u64,
        broken: u64,
        made: std::sync::atomic::AtomicUsize,
    }

    impl Source for Fake {
        type Unit = u64;

        fn key(&self, i: usize) -> u64 {
            i as u64 + 1
        }

        fn make(&self, i: usize) -> Result<u64, Box<Trial>> {
            self.made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let key = self.key(i);
            if key == self.broken {
                return Err(Box::new(Trial::ended(TrialIndex::at(Ordinal(key)), Outcome::Error(Failure::NoKill))));
            }
            Ok(key)
        }

        fn stores(&self, _: &u64) -> Vec<Files> {
            Vec::new()
        }

        fn judge(&self, _: &Driver, key: u64, _: &[Got], _: &mut Passed) -> Vec<Trial> {
            let fire = Finding { violations: vec![Violation::new("x", "y")], power: None, fault: None };
            vec![Trial::ended(
                TrialIndex::at(Ordinal(key)),
                if key == self.fire { Outcome::Fire(fire) } else { Outcome::Pass },
            )]
        }
    }

    /// Runs a fake source of 20 units in waves of 4 on 2 threads: the keys
    /// of its trials, how many units it made and the steps of progress.
    fn drive(fire: u64, broken: u64) -> (Vec<u32>, usize, usize) {
        let steps = Arc::new(Mutex::new(0));
        let heard = Arc::clone(&steps);
        let mut ctx = Context::for_tests(2, None);
        ctx.tally = crate::pipeline::Tally::new(move |_| *heard.lock().unwrap() += 1);
        let source = Fake { fire, broken, made: Default::default() };
        let plan =
            Plan { units: 20, wave: 4, label: "t", count: Count::Units, turn: None, one_log: false, spread: true };
        let trials = with_driver(&ctx, |d| d.run(&source, &plan));
        let steps = *steps.lock().unwrap();
        (trials.iter().map(|t| t.index.get()).collect(), source.made.into_inner(), steps)
    }

    #[test]
    fn the_driver_stops_at_the_first_unit_that_does_not_pass_and_makes_no_later_wave() {
        let (keys, made, steps) = drive(0, 0);
        assert_eq!((keys.len(), made, steps), (20, 20, 20), "every unit, each a step");
        let (keys, made, _) = drive(7, 0);
        assert_eq!(keys, (1..=7).collect::<Vec<u32>>(), "the fire last");
        assert!(made <= 8, "the fire's wave and no later one: {made} made");
        let (keys, _, steps) = drive(0, 6);
        assert_eq!(keys, (1..=6).collect::<Vec<u32>>(), "a unit that could not be made decides too");
        assert_eq!(steps, 5, "judged units are steps; the one not made is not");
    }

    /// A source of one unit holding `store`: a pass when its recovery
    /// succeeded, the recovery's error otherwise.
    struct OneStore(Files);

    impl Source for OneStore {
        type Unit = ();

        fn key(&self, _: usize) -> u64 {
            1
        }

        fn make(&self, _: usize) -> Result<(), Box<Trial>> {
            Ok(())
        }

        fn stores(&self, _: &()) -> Vec<Files> {
            vec![self.0.clone()]
        }

        fn judge(&self, d: &Driver, _: (), got: &[Got], _: &mut Passed) -> Vec<Trial> {
            let outcome = d.recovered(&got[0]).map_or_else(|e| e, |_| Outcome::Pass);
            vec![Trial::ended(TrialIndex::at(Ordinal(1)), outcome)]
        }
    }

    /// The audit's second power sweep waits for the first's turn, then
    /// takes its recovery from the run's: here the child cannot start, so
    /// a sweep that did not wait would recover the store itself and fail.
    #[test]
    fn a_sweep_waits_for_its_turn_then_takes_the_first_sweeps_recoveries() {
        let ctx = Context::for_tests(1, None);
        let store = files(b"page", b"a");
        let turn = Turn::default();
        let plan = Plan {
            units: 1,
            wave: 1,
            label: "t",
            count: Count::Stores,
            turn: Some(&turn),
            one_log: false,
            spread: true,
        };
        let trials = with_driver(&ctx, |d| {
            std::thread::scope(|s| {
                let first = turn.take();
                let second = s.spawn(|| d.run(&OneStore(store.clone()), &plan));
                std::thread::sleep(std::time::Duration::from_millis(300));
                let bytes = ctx.recoveries.bytes(&store, &mut Digests::default());
                ctx.recoveries.put(bytes, &d.setting(), crate::pipeline::run::recoveries::recovered());
                drop(first);
                second.join().unwrap()
            })
        });
        assert_eq!(trials.len(), 1);
        assert_eq!(trials[0].outcome, Outcome::Pass, "{:?}", trials[0].details);
        let said = trials[0].details.last().map(String::as_str).unwrap_or_default();
        assert!(said.starts_with("1 of 1 distinct stores were recovered earlier in this run"), "{said}");
    }

    /// A source of one unit of two stores, listed `[broken, whole]` and
    /// judged the other way round, as a power point reads its states (the
    /// one that lost the least first): each state's outcome, up to the
    /// first that does not pass.
    struct Backwards(Vec<Files>);

    impl Source for Backwards {
        type Unit = ();

        fn key(&self, _: usize) -> u64 {
            1
        }

        fn make(&self, _: usize) -> Result<(), Box<Trial>> {
            Ok(())
        }

        fn stores(&self, _: &()) -> Vec<Files> {
            self.0.clone()
        }

        fn judge(&self, d: &Driver, _: (), got: &[Got], _: &mut Passed) -> Vec<Trial> {
            let mut trials = Vec::new();
            for g in got.iter().rev() {
                let outcome = d.recovered(g).map_or_else(|e| e, |_| Outcome::Pass);
                let bad = !outcome.is_pass();
                trials.push(Trial::ended(TrialIndex::at(Ordinal(1)), outcome));
                if bad {
                    break;
                }
            }
            trials
        }
    }

    /// A `dump` child with the batch form, which logs its arguments to
    /// RUNS and fails, as a store whose body file is gone, when any
    /// database holds the word `broken`; else prints EMPTY per `--db`.
    const BLOB_DUMP: &str = r#"echo "$@" >> RUNS
shift
for a in "$@"; do case "$a" in --*) ;; *) grep -q broken "$a" && { echo 'No such file or directory' >&2; exit 1; };; esac; done
for a in "$@"; do [ "$a" = --db ] && echo 'EMPTY'; done
exit 0
"#;

    /// The blob store of issue 49: its batch's dump fails on the state
    /// that lost its body file, and the fallback, alone and in the batch's
    /// order, stops there, leaving the state after it not run. The verdict
    /// reads that one first: it is recovered alone then and passes, and
    /// the broken state's own failure is the finding, never "not run".
    #[test]
    fn a_state_after_one_that_failed_in_its_batch_is_judged_on_its_own_recovery() {
        let dir = tempfile::tempdir().unwrap();
        let empty = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;
        let script = dir.path().join("child.sh");
        let runs = dir.path().join("runs");
        let text = BLOB_DUMP.replace("RUNS", &runs.display().to_string()).replace("EMPTY", empty);
        std::fs::write(&script, text).unwrap();
        let ready = r#"{"protocol":2,"pid":1,"op":"append","sqlite_version":"3.54.1","journal_mode":"wal","operations":["append","dump","dump-batch"]}"#;
        let mut ctx = Context::for_tests(1, Some(serde_json::from_str(ready).unwrap()));
        let command = crate::harness::ChildCommand {
            program: "sh".into(),
            prefix: vec![script.into()],
            cwd: None,
            env: Vec::new(),
        };
        ctx.child = crate::harness::Launcher::exec(command);
        assert!(ctx.batching().dumps);
        let source = Backwards(vec![files(b"broken", b"a"), files(b"whole", b"a")]);
        let plan =
            Plan { units: 1, wave: 1, label: "t", count: Count::Units, turn: None, one_log: false, spread: true };
        let trials = with_driver(&ctx, |d| d.run(&source, &plan));
        let outcomes: Vec<String> = trials.iter().map(|t| t.outcome.to_string()).collect();
        assert_eq!(trials.len(), 2, "{outcomes:?}");
        assert_eq!(trials[0].outcome, Outcome::Pass, "the later state, recovered alone: {outcomes:?}");
        assert!(matches!(trials[1].outcome, Outcome::Fire(_)), "{outcomes:?}");
        assert!(outcomes[1].contains("failed its `dump`") && outcomes[1].contains("No such file"), "{outcomes:?}");
        let runs = std::fs::read_to_string(&runs).unwrap();
        // The batch, the broken state alone (which stops the fallback),
        // then the whole one's two passes, alone, when the verdict read it.
        assert_eq!(runs.lines().count(), 4, "{runs}");
    }

    #[test]
    fn batches_cover_every_store_about_once_per_thread() {
        assert_eq!(batches(10, 2), [0..5, 5..10]);
        assert_eq!(batches(3, 4), [0..1, 1..2, 2..3]);
        assert_eq!(batches(0, 2), Vec::<Range<usize>>::new());
        assert_eq!(batches(200, 2).len(), 4, "two rounds of two, not 96, 96 and 8");
        assert!(batches(1000, 2).iter().all(|b| b.len() <= MOST_PER_BATCH));
    }

    #[test]
    fn a_pass_is_remembered_by_store_and_acks() {
        let mut memo = Passed::default();
        memo.insert(3, b"{\"i\":0}");
        assert!(memo.contains(3, b"{\"i\":0}"));
        assert!(!memo.contains(3, b"{\"i\":1}"), "other acks: another judgement");
        assert!(!memo.contains(4, b"{\"i\":0}"));
    }

    #[test]
    fn a_cause_names_the_power_loss_inside_the_fault() {
        let power = PowerLoss { point: 9, rule: "lost".into(), later: 0 };
        let injected = Injected::Failed(nix::errno::Errno::EIO);
        let fault = Fault { point: 4, call: "fsync of the wal".into(), injected, exit: Exit::Code(0), then: None };
        let cause = Cause { power: Some(power.clone()), fault: Some(fault.clone()) };
        let fire = Outcome::Fire(Finding { violations: vec![Violation::new("x", "y")], power: None, fault: None });
        let Outcome::Fire(f) = cause.annotate(fire) else { panic!() };
        assert_eq!((f.power, f.fault.map(|f| *f)), (Some(power.clone()), Some(fault.clone())));
        let Outcome::Error(Failure::Fault { error, .. }) = cause.annotate(Outcome::Error(Failure::NoKill)) else {
            panic!()
        };
        assert!(matches!(*error, Failure::PowerLoss { .. }), "{error:?}");
        assert_eq!(Cause::default().annotate(Outcome::Pass), Outcome::Pass);
    }
}
