//! Recorded sweeps: the child runs its workload once, traced and logged
//! ([`crate::crashstate::record`]); every crash state is rebuilt from the
//! log ([`crate::crashstate::state`]) and checked in batches by the one
//! driver ([`crate::pipeline::judge::driver`]), consecutive states that hold one store
//! sharing one recovery; a process-crash state that does not pass is
//! confirmed by a real kill at its point ([`crate::pipeline::workload::point`]) before it is
//! reported.
//!
//! Crash model: as [`crate::pipeline::workload::point`]'s syscall kill: state N is what a
//! `SIGKILL` at the entry of kill point N leaves, i.e. the logged calls
//! before N. Clause: the cell's, judged by [`crate::pipeline::judge::verdict`] like any
//! trial. Trust: the log is only used when, replayed to the end, it agrees
//! with the files the run left on disk (the self-check); otherwise the sweep
//! re-executes the child at every point and says why. A recorded state that
//! fires is reported only once a real kill at its point fires too; one that
//! fires only when recorded is an `error` naming the non-determinism.

use std::ops::Range;
use std::sync::atomic::Ordering;

use crashcells_protocol::JournalMode;

use crate::cells::{CLAIMED_LEVEL, Violation};
use crate::crashstate::level::audit_kept;
use crate::crashstate::likeness::Sought;
use crate::crashstate::record::record;
use crate::crashstate::state::process_states;
use crate::crashstate::{Files, Log, Names, State};
use crate::kill::TrialIndex;
use crate::kill::syscall::{Driven, Goal, sweep_points};
use crate::model::{Crash, Trace};
use crate::pipeline::judge::census::{Census, Filter, preflight, trace_outcome};
use crate::pipeline::judge::driver::{Count, Driver, Got, MOST_PER_BATCH, Passed, Plan, Source};
use crate::pipeline::judge::sweep::Swept;
use crate::pipeline::judge::verdict::conclude;
use crate::pipeline::outcome::{Failure, Finding, Outcome, Site};
use crate::pipeline::plain::confirm::{self, Exec};
use crate::pipeline::plain::decide::{Found, decide};
use crate::pipeline::run::spent::{self, Phase};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::{Workload, ended_well, ended_with};
use crate::recovery::RecoveryError;
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
    /// What the workload's length crossed, on a WAL leg whose cell asks for
    /// a checkpoint (`checkpoint_ops`): for the result's details.
    pub length_note: Option<String>,
    /// Where the store reports a synchronous level its commits did not
    /// keep, in words ([`crate::crashstate::level::audit_kept`]).
    pub claimed_level: Option<String>,
}

/// SQLite's `SQLITE_DEFAULT_WAL_AUTOCHECKPOINT`, in pages: where a store
/// that keeps SQLite's setting checkpoints.
const DEFAULT_CHECKPOINT_PAGES: f64 = 1000.0;

impl Workload<'_> {
    /// The recording every recorded sweep starts from, or how the sweep
    /// ends before its first point: tracing refused here, a recording that
    /// failed, or a leg the child did not honour (a skip). `grow`: the
    /// process-crash sweep's workload grows to cross a checkpoint
    /// ([`Workload::recording`]); power, torn and fault sweeps keep the
    /// catalog's `sweep_ops`, since their cost grows with what is unsynced
    /// (in WAL below `synchronous=FULL`, every frame since the checkpoint)
    /// or, for faults, with every write of the workload.
    pub fn honoured_recording(&self, grow: bool) -> Result<Recording, Box<Swept>> {
        self.ctx.events.phase(crate::model::Phase::Recording);
        let unplanned = |t: Trial| Box::new(Swept::unplanned(t));
        let filter = preflight().map_err(|outcome| unplanned(Trial::ended(TrialIndex::CENSUS, outcome)))?;
        let rec = if grow { self.recording(filter) } else { self.record(filter) };
        let rec = rec.map_err(|trial| unplanned(*trial))?;
        if !rec.census.audit.honored {
            return Err(Box::new(Swept::skipped(rec.census)));
        }
        if let Some(lie) = rec.claimed_level.clone() {
            // Judged from the recording, though no point was planned.
            let trials = vec![claimed_level(rec, lie)];
            return Err(Box::new(Swept { planned: None, trials, recorded: true, distinct: None }));
        }
        Ok(rec)
    }

    /// The recording of the sweep's workload at its settled length: the
    /// catalog's `sweep_ops`, or, on a WAL leg of a cell with
    /// `checkpoint_ops`, as many more operations (a guess, then doubling,
    /// at most `checkpoint_ops`) as the store needs to cross its first
    /// automatic checkpoint and the WAL's restart, at its own settings:
    /// that is where WAL crash bugs live (the WAL-reset bug behind the
    /// resolver's gate is one); its sweep visits the windows of
    /// [`Log::wal_windows`](crate::crashstate::Log::wal_windows). The length
    /// is kept ([`Workload::length`]): the real kills that confirm a fire,
    /// and a `--point` repro, run the same workload.
    pub fn recording(&self, filter: Filter) -> Result<Recording, Box<Trial>> {
        let mut rec = self.record(filter)?;
        let Some(most) = self.checkpoint_ops.filter(|_| rec.census.audit.effective_mode() == Some(JournalMode::Wal))
        else {
            return Ok(rec);
        };
        let mut ops = self.length.load(Ordering::SeqCst);
        while rec.log.wal_restart().is_none() && ops < most {
            // SQLite's default checkpoint (1,000 pages) at the rate this run
            // filled the WAL is the first guess; past it, doubling.
            let guess =
                rec.log.wal_pages_per_op().map_or(0, |rate| (DEFAULT_CHECKPOINT_PAGES / rate).ceil() as u64 + 2);
            ops = guess.max(ops * 2).min(most);
            self.length.store(ops, Ordering::SeqCst);
            rec = self.record(filter)?;
        }
        rec.census.windows = Some(rec.log.wal_windows(self.sweep_acks, rec.census.points));
        rec.length_note = Some(grown_note(ops, rec.log.wal_restart(), &rec.census));
        Ok(rec)
    }

    /// Runs the sweep's workload once, traced, to its own end, logging every
    /// call on the trial's files; then audits the leg and self-checks the log.
    pub fn record(&self, filter: Filter) -> Result<Recording, Box<Trial>> {
        self.ctx.pool.unit(&self.ctx.interrupt, || self.recorded(filter))
    }

    fn recorded(&self, filter: Filter) -> Result<Recording, Box<Trial>> {
        let env = self.env("census").map_err(|f| ended_with(None, Outcome::Error(Failure::census(f))))?;
        let log = match self.record_in(&env, filter) {
            Ok(log) => log,
            Err(o) => return Err(ended_with(Some(env), o.of_census())),
        };
        // The points, and one more: the state the child's own end left.
        let mut census = match self.census_of(&env, log.total() + 1) {
            Ok(c) => c,
            Err(f) => return Err(ended_with(Some(env), Outcome::Error(f))),
        };
        let claimed_level = audit_kept(&mut census.audit, &log, census.ready.synchronous.as_deref());
        let names = Names::new(&env.db, &env.acks, &env.transport);
        let dir = env.db.parent().expect("a trial's database is in its folder");
        let disagrees = self_check(&log, dir, &names);
        Ok(Recording { log, census, env, names, disagrees, filter, length_note: None, claimed_level })
    }

    fn record_in(&self, env: &TrialEnv, filter: Filter) -> Result<Log, Outcome> {
        let mut child = self.spawn_traced(env, filter)?;
        match record(&mut child, &self.targets(env), Goal::ToEnd) {
            Ok((Driven::Exited { exit, counted }, log)) => {
                ended_well(exit, counted, &child.stderr_tail()).map(|_| log).map_err(|f| self.ended_badly(env, f))
            }
            Ok((Driven::At(p), _)) => Err(Outcome::Error(Failure::RecordingStopped(p.ordinal.0))),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }

    /// The driver of the states rebuilt from `rec`.
    pub fn driver<'a>(
        &'a self,
        rec: &'a Recording,
        make_env: &'a (dyn Fn(&str) -> Result<TrialEnv, Failure> + Sync),
    ) -> Driver<'a> {
        Driver { scope: self.scope, census: Some(&rec.census), recorded: &rec.env, make_env }
    }
}

/// A recording whose store reports a synchronous level its commits did not
/// keep: a fire that names the lie, in place of the sweep. Its states would
/// be evidence for a level the store never ran at (the seed's rule), and
/// the claim itself is what a team reads the report by.
fn claimed_level(rec: Recording, lie: String) -> Trial {
    let violations = vec![Violation::new(CLAIMED_LEVEL, lie)];
    let mut t = Trial::ended(TrialIndex::CENSUS, Outcome::Fire(Finding { violations, power: None, fault: None }));
    t.synchronous = rec.census.ready.synchronous.clone();
    t.audit = Some(rec.census.audit);
    t.with_env(rec.env)
}

/// The self-check: the log replayed to its end against the files the run
/// left in `dir`; where they first differ, if they do.
pub fn self_check(log: &Log, dir: &std::path::Path, names: &Names) -> Option<String> {
    Files::after(log.ran()).differs_from_disk(dir, names)
}

/// What a result says when its recorded states were not used.
pub(crate) fn fallback_note(why: &str) -> String {
    format!(
        "recorded states not used: after the run, {why} (the child writes in a way the tracer does not see, \
         e.g. through mmap); every point re-ran the child"
    )
}

/// What a workload grown to cross a checkpoint ran, and which points its
/// sweep visits.
fn grown_note(ops: u64, restart: Option<u64>, census: &Census) -> String {
    let spans: Vec<String> = census.windows.iter().flatten().map(|w| format!("{}-{}", w.start(), w.end())).collect();
    let (spans, total) = (spans.join(", "), census.points);
    match restart {
        Some(restart) => format!(
            "the workload ran {ops} operations, to the store's first automatic checkpoint and the WAL's restart at \
             point {restart}; the sweep visits points {spans} of {total} (the first operations, the checkpoint and \
             the restart, the close): the operations between append to the WAL as the first ones did"
        ),
        None => format!(
            "the workload ran {ops} operations (the catalog's checkpoint_ops) and crossed no automatic checkpoint \
             and WAL restart: the store's wal_autocheckpoint is off or above what they wrote; the sweep visits \
             points {spans} of {total} (the first operations, the close)"
        ),
    }
}

/// The trials of a recorded process-crash sweep of `w`; where the log
/// cannot be trusted, the re-executed sweep's, with the reason.
pub fn process_sweep(w: &Workload, seed: u64) -> Swept {
    let rec = match w.honoured_recording(true) {
        Ok(r) => r,
        Err(ended) => return *ended,
    };
    if let Some(why) = &rec.disagrees {
        let note = fallback_note(why);
        drop(rec);
        let mut swept = w.re_executed(seed);
        if let Some(last) = swept.trials.last_mut() {
            last.details.push(note);
        }
        return swept;
    }
    let points = sweep_points(rec.census.candidates(), None, w.ctx.options.points, seed);
    w.ctx.events.planned(points.len() as u64);
    w.ctx.events.phase(crate::model::Phase::Checking);
    let states = process_states(&rec.log, &points);
    let marks = state_marks(&states);
    let make_env = |l: &str| w.env(l);
    let source = Process { units: units_of(&states), states: &states };
    let driver = w.driver(&rec, &make_env);
    // Waves of about one batch of stores per thread: a fire in the first
    // leaves the later ones unrecovered.
    let wave = MOST_PER_BATCH * w.ctx.jobs.max(1);
    let plan = Plan {
        units: source.units.len(),
        wave,
        label: "b",
        count: Count::Units,
        turn: None,
        one_log: true,
        spread: true,
    };
    let mut trials = driver.run(&source, &plan);
    if let Some(why) = trials.last().and_then(unplaced) {
        // The harness's limit, not the store's: its points re-run the child,
        // whose own folder holds every file its names point to.
        let mut swept = w.re_executed(seed);
        if let Some(last) = swept.trials.last_mut() {
            last.details.push(format!("recorded states not used: {why}; every point re-ran the child"));
        }
        return swept;
    }
    if trials.last().is_some_and(Trial::to_confirm) {
        let recorded = trials.pop().expect("a last trial");
        let n = recorded.index;
        let sought = sought(&states, n);
        let mut decided = spent::timed(Phase::RealKill, || {
            let real = w.kill_at(rec.filter, n.ordinal().0, &rec.census);
            let refind = || w.refind(rec.filter, &sought, n, &rec.census);
            decide(recorded, real, &sought.point, refind)
        });
        on_plain_path(w, &rec, &sought, &mut decided);
        trials.push(decided);
    }
    // A fire only the recording saw has no real kill's calls: the log's.
    if let Some(last) = trials.last_mut().filter(|t| t.is_bad() && t.trace.is_none()) {
        last.trace = Some(Trace::of_log(&rec.log, last.index.ordinal().0, Crash::Kill));
    }
    if let (Some(last), Some(note)) = (trials.last_mut(), &rec.length_note) {
        last.details.push(note.clone());
    }
    let distinct = distinct_states(&marks, trials.last().map_or(0, |t| t.index.ordinal().0));
    Swept { planned: Some(points), trials, recorded: true, distinct: Some(distinct) }
}

/// Why a trial's state could not be recovered where its files were
/// written, if that is how it ended.
fn unplaced(t: &Trial) -> Option<String> {
    match &t.outcome {
        Outcome::Error(Failure::Recovery(e @ RecoveryError::Unplaced { .. })) => Some(e.to_string()),
        _ => None,
    }
}

/// A recorded sweep's process-crash states as a crash source: a unit per
/// run of consecutive states that hold one store (one version of the log:
/// a sync, an ack or a `-shm` write changes no store), recovered once, each
/// state judged with its own acks.
struct Process<'a> {
    states: &'a [State],
    units: Vec<Range<usize>>,
}

impl Source for Process<'_> {
    type Unit = Range<usize>;

    fn key(&self, i: usize) -> u64 {
        self.states[self.units[i].start].point.ordinal.0
    }

    fn make(&self, i: usize) -> Result<Range<usize>, Box<Trial>> {
        Ok(self.units[i].clone())
    }

    fn stores(&self, unit: &Range<usize>) -> Vec<Files> {
        vec![self.states[unit.start].files.clone()]
    }

    /// Each state of the unit, up to the first that does not pass, which
    /// keeps the state as rebuilt as its evidence.
    fn judge(&self, d: &Driver, unit: Range<usize>, got: &[Got], _: &mut Passed) -> Vec<Trial> {
        let mut trials = Vec::new();
        for s in &self.states[unit] {
            let index = TrialIndex::at(s.point.ordinal);
            let mut t = Trial::new(index);
            let outcome = conclude(&d.crash(&s.acks), &mut t, || d.recovered(&got[0]));
            t.kill_point = Some(s.point.kill_point(index, t.acked));
            let mut t = t.conclude(outcome);
            t.details.extend(got[0].note.clone());
            let bad = t.is_bad();
            if bad {
                t.env = d.evidence(s, &format!("p{index}"), "recorded-state.txt", RECORDED_NOTE);
            }
            trials.push(t);
            if bad {
                break;
            }
        }
        trials
    }
}

/// What a recorded state's evidence says of itself.
const RECORDED_NOTE: &str = "this state was rebuilt from the recorded run's log";

/// Consecutive states with one version: one recovery serves them all.
fn units_of(states: &[State]) -> Vec<Range<usize>> {
    let mut units: Vec<Range<usize>> = Vec::new();
    for (i, s) in states.iter().enumerate() {
        match units.last_mut() {
            Some(u) if states[u.start].version == s.version => u.end = i + 1,
            _ => units.push(i..i + 1),
        }
    }
    units
}

/// A fire the real kill confirmed through the fork server, killed again
/// with every operation exec'd ([`crate::pipeline::plain::confirm`]), on the recording's
/// census and length (no census of its own to pay): at its point, and where
/// that passes, where a run reaches its state again ([`crate::pipeline::workload::refind`]).
fn on_plain_path(w: &Workload, rec: &Recording, sought: &Sought, decided: &mut Trial) {
    if !confirm::needed(w.ctx, decided) {
        return;
    }
    let plain = w.ctx.plain();
    let exec = w.on(&plain);
    let n = decided.index;
    // The point itself, and where it passes exec'd, the run that reached
    // its state again: the confirmation then says which run fired.
    let mut again = |_| {
        spent::timed(Phase::Confirm, || {
            let real = exec.kill_at(rec.filter, n.ordinal().0, &rec.census);
            if real.is_bad() {
                return Some(Exec::at_site(real.outcome));
            }
            Some(match exec.refind(rec.filter, sought, n, &rec.census) {
                Found::Again(r) => Exec { found_by: Some(r.how(n.get(), &sought.point)), outcome: r.trial.outcome },
                Found::Broken(t) => Exec::at_site(t.outcome),
                Found::Missed(_) => Exec::at_site(real.outcome),
            })
        })
    };
    let launcher = w.ctx.child.launcher();
    confirm::confirm(decided, (Site::Point(n.get()), &launcher), 1, &mut again);
}

/// The recorded state of point `index`, as a run that seeks it again
/// looks for it.
fn sought(states: &[State], index: TrialIndex) -> Sought {
    let s = states.iter().find(|s| s.point.ordinal == index.ordinal()).expect("the state of a judged point");
    Sought::new(&s.files, &s.point)
}

/// Each state's point and a digest of what a recovery sees in it: the
/// store (its version) and the acks so far. Two states with one digest
/// are the same crash state reached at two points.
fn state_marks(states: &[crate::crashstate::State]) -> Vec<(u64, u64)> {
    use std::hash::{Hash, Hasher};
    let digest = |s: &crate::crashstate::State| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (s.version, s.acks.as_slice()).hash(&mut h);
        h.finish()
    };
    states.iter().map(|s| (s.point.ordinal.0, digest(s))).collect()
}

/// How many distinct crash states there are among the marks up to point
/// `last`.
fn distinct_states(marks: &[(u64, u64)], last: u64) -> u64 {
    let seen: std::collections::HashSet<u64> =
        marks.iter().take_while(|(ordinal, _)| *ordinal <= last).map(|(_, d)| *d).collect();
    seen.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::kill::Ordinal;
    use crate::kill::syscall::Call;
    use crate::kill::syscall::Point;
    use crate::pipeline::outcome::Finding;

    fn trial(n: u32, outcome: Outcome) -> Trial {
        Trial::ended(TrialIndex::nth(n), outcome)
    }

    /// A real kill's trial: its child was stopped at its point and killed.
    fn real(n: u32, outcome: Outcome) -> Trial {
        let mut t = Trial::ended(TrialIndex::nth(n), outcome);
        t.kill_point = Some(at().kill_point(TrialIndex::nth(n), 1));
        t
    }

    fn lost(m: &str) -> Outcome {
        Outcome::Fire(Finding {
            violations: vec![Violation::new("lost-ack", format!("lost {m}"))],
            power: None,
            fault: None,
        })
    }

    fn at() -> Point {
        use crate::kill::syscall::FileKind;
        Point {
            ordinal: Ordinal(7),
            syscall: Call::Sys("pwrite64"),
            file: Some(FileKind::Journal),
            offset: Some(512),
            len: Some(4),
        }
    }

    fn unasked() -> Found {
        panic!("a fire the kill at its point repeats is not sought again")
    }

    #[test]
    fn a_fire_a_real_kill_repeats_is_confirmed_and_reported_as_the_real_kill() {
        let t = decide(trial(7, lost("m1")), real(7, lost("m1")), &at(), unasked);
        assert_eq!(t.outcome, lost("m1"));
        assert_eq!(t.details, ["confirmed by a real kill at point 7"]);
        let t = decide(trial(7, lost("m1")), real(7, lost("m0")), &at(), unasked);
        assert_eq!(t.details[1], "the recorded state at point 7 found: lost m1");
    }

    #[test]
    fn a_fire_the_kill_at_its_point_misses_is_confirmed_where_a_run_reaches_it_again_and_says_how() {
        use crate::crashstate::likeness::Likeness;
        use crate::pipeline::plain::decide::Refound;
        for (how, said) in [
            (Likeness::Write, "at the call of point 7 (pwrite64 journal offset 512 length 4) once the ack journal"),
            (Likeness::State, "where the store's files first held the state of point 7 again (by a hash"),
        ] {
            let again = || Found::Again(Box::new(Refound { trial: trial(7, lost("m0")), how, ordinal: 9, run: 2 }));
            let t = decide(trial(7, lost("m0")), trial(7, Outcome::Pass), &at(), again);
            assert_eq!(t.outcome, lost("m0"));
            assert_eq!(t.details.len(), 1, "{:?}", t.details);
            let d = &t.details[0];
            assert!(d.starts_with(&format!("confirmed by a real kill {said}")), "{d}");
            assert!(d.contains(": point 9 of run 2 of 3; the kill at point 7 itself passed"), "{d}");
        }
        // A real kill whose child ended (exit 0) before its point ran a
        // shorter path: the store failure that makes is not this state's.
        let ended = Outcome::store_failure(
            crashcells_protocol::Op::Append,
            Failure::ChildEnded { exit: crate::harness::Exit::Code(0), counted: 6, before: Some(7), stderr: "".into() },
        );
        let again = || {
            Found::Again(Box::new(Refound { trial: trial(7, lost("m0")), how: Likeness::Write, ordinal: 9, run: 1 }))
        };
        let t = decide(trial(7, lost("m0")), trial(7, ended), &at(), again);
        assert_eq!(t.outcome, lost("m0"));
        // A run that could not be made is that run's trial, as any trial's.
        let broken = || Found::Broken(Box::new(trial(7, Outcome::Error(Failure::NoReady))));
        let t = decide(trial(7, lost("m0")), trial(7, Outcome::Pass), &at(), broken);
        assert_eq!(t.outcome, Outcome::Error(Failure::NoReady));
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
        let point = Point {
            ordinal: Ordinal(0),
            syscall: Call::Sys("pwrite64"),
            file: Some(FileKind::Database),
            offset: None,
            len: None,
        };
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
        let t = decide(trial(7, lost("m1")), trial(7, Outcome::Pass), &at(), || Found::Missed(3));
        let Outcome::Error(Failure::OnlyRecorded { point: 7, found, tries: 3 }) = &t.outcome else {
            panic!("{:?}", t.outcome)
        };
        assert_eq!(**found, lost("m1"));
        let why = t.outcome.to_string();
        assert!(why.starts_with("point 7 fails only when recorded: the recorded state found lost m1"), "{why}");
        assert!(why.contains("nor did 3 runs killed where their files first held that state again"), "{why}");
        assert!(why.contains("does not write the same bytes on every run"), "{why}");
        assert_eq!(t.index, TrialIndex::nth(7));
    }
}
