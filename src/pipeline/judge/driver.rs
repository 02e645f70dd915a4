//! The one driver of crash states, rebuilt or left in a trial's folder: a
//! crash source ([`Source`]) yields units of work in ascending order of
//! their kill points (or trial indices) and says
//! how to judge one and how to annotate its finding ([`Cause`]); the driver
//! owns the rest, written once: the waves of units made over `--jobs`
//! threads up to the first that does not pass
//! ([`crate::pipeline::run::parallel::until_first_bad`]), the sweep's
//! recoveries ([`crate::pipeline::judge::recover`]: its stores deduplicated
//! by their bytes so that each distinct store is recovered once per sweep,
//! the run's recoveries asked first, the batches), which it asks through a
//! [`Recoverer`] it builds, the memo of states already judged to pass ([`Passed`]), the
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

use std::collections::HashSet;
use std::ops::Range;

use crate::cells::End;
use crate::crashstate::power::AtPoint;
use crate::crashstate::{Files, Names, State};
use crate::kill::TrialIndex;
use crate::pipeline::judge::census::Census;
use crate::pipeline::judge::recover::{Recoverer, Recovering, SweepStores, Turn};
use crate::pipeline::judge::verdict::{Acks, Crash, Ended, conclude};
use crate::pipeline::outcome::{Failure, Fault, Finding, Interruption, Outcome, PowerLoss};
use crate::pipeline::run::context::Scope;
use crate::pipeline::run::parallel::until_first_bad;
use crate::pipeline::trial::Trial;
use crate::recovery::Recovered;
use crate::trialdir::TrialEnv;

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

/// What a source reads of the sweep's recoveries (each store's, and the
/// batch size its waves are made of), named beside the rest of the driver.
pub use crate::pipeline::judge::recover::{Got, MOST_PER_BATCH};
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

impl Plan<'_> {
    /// What of this plan the sweep's recoveries read.
    fn recovering(&self) -> Recovering<'_> {
        Recovering { label: self.label, per_store: self.count == Count::Stores, turn: self.turn, spread: self.spread }
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
/// What the sweep's stores, their recoveries and its passes are so far.
#[derive(Default)]
struct Ran {
    stores: SweepStores,
    passed: Passed,
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
            ran.stores = SweepStores::of_one_log();
        }
        let mut start = 0;
        while start < plan.units {
            let end = (start + plan.wave.max(1)).min(plan.units);
            if self.wave(source, start..end, plan, &mut ran, &mut trials)
                || interrupted_after(&mut trials, &self.ctx.interrupt, |next| source.interrupted(next))
            {
                break;
            }
            start = end;
        }
        if let Some(last) = trials.last_mut().filter(|_| ran.stores.hits() > 0) {
            let recovered = ran.stores.recovered_count();
            last.details.push(format!(
                "{} of {recovered} distinct stores were recovered earlier in this run, byte for byte under this \
                 leg's settings: their recoveries came from the run's cache",
                ran.stores.hits()
            ));
        }
        trials
    }

    /// One wave: true when a unit did not pass (it decides the sweep).
    fn wave<S: Source>(&self, s: &S, range: Range<usize>, plan: &Plan, ran: &mut Ran, trials: &mut Vec<Trial>) -> bool {
        let key = |i: usize| s.key(range.start + i);
        let made = until_first_bad(range.len(), self.ctx.jobs, &self.ctx.interrupt, &key, &|i| {
            let unit = s.make(range.start + i);
            if plan.count == Count::Made {
                self.ctx.events.done();
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
        self.recoverer().recover_new(&mut ran.stores, &ids, &plan.recovering());
        for (unit, ids) in units.into_iter().zip(ids) {
            let got: Vec<Got> = ids.iter().map(|&id| ran.stores.got(id)).collect();
            for t in s.judge(self, unit, &got, &mut ran.passed) {
                if plan.count == Count::Units {
                    self.ctx.events.done();
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

    /// The sweep's recoveries, asked by this driver: its job and recorded
    /// folder, which is all they need of it.
    pub fn recoverer(&self) -> Recoverer<'_> {
        Recoverer { scope: self.scope, recorded: self.recorded }
    }

    /// Store `g`'s recovery, as a verdict takes it ([`Recoverer::recovered`]:
    /// one its batch did not run is recovered alone first).
    pub fn recovered<'g>(&self, g: &'g Got) -> Result<&'g Recovered, Outcome> {
        self.recoverer().recovered(g)
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
/// An interrupted run (`interrupt` raised) may have skipped units: its
/// last trial (`cut`, told the index after the last so far) says so,
/// rather than a pass standing for states nobody checked. True if it did.
fn interrupted_after(
    trials: &mut Vec<Trial>,
    interrupt: &crate::harness::Interrupt,
    cut: impl FnOnce(Option<TrialIndex>) -> Trial,
) -> bool {
    if !interrupt.is_set() {
        return false;
    }
    trials.push(cut(trials.last().map(|t| t.index.next())));
    true
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
    use crate::harness::Exit;
    use crate::kill::Ordinal;
    use crate::kill::inject::Injected;
    use crate::pipeline::judge::recover::tests::files;
    use crate::pipeline::run::context::Context;
    use crate::pipeline::run::recoveries::Digests;
    use std::sync::{Arc, Mutex};

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
        /// Counts the events it hears.
        struct Heard(Mutex<usize>);
        impl crate::model::Listener for Heard {
            fn on(&self, _: &crate::model::Event) -> Result<(), String> {
                *self.0.lock().unwrap() += 1;
                Ok(())
            }
        }
        let heard = Arc::new(Heard(Mutex::new(0)));
        let mut ctx = Context::for_tests(2, None);
        ctx.events = crate::model::Events::of(0, heard.clone());
        let source = Fake { fire, broken, made: Default::default() };
        let plan =
            Plan { units: 20, wave: 4, label: "t", count: Count::Units, turn: None, one_log: false, spread: true };
        let trials = with_driver(&ctx, |d| d.run(&source, &plan));
        let steps = *heard.0.lock().unwrap();
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
                ctx.recoveries.put(bytes, &d.recoverer().setting(), crate::pipeline::run::recoveries::recovered());
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
