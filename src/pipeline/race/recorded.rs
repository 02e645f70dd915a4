//! Cell 2's syscall sweep from recordings: racer r0's path is recorded once
//! per role (its winning claim, its losing claim: see [`crate::pipeline::race::sweep`]'s
//! `Claim`), each point's crash state is rebuilt from the recording, and the
//! surviving racers are released against it; the one driver
//! ([`crate::pipeline::judge::driver`]) recovers and judges the states, deduplicated by the
//! store's bytes and shared through the run's recoveries. Cell 6's writers
//! ([`crate::pipeline::race::writers`]) are swept the same way on their one
//! path: writer r0 recorded alone from the empty folder while the other
//! writers wait at their barrier, connected, as on a winning claim; each
//! state rebuilt and the others appending on it.
//!
//! Crash model: as [`crate::pipeline::race::sweep`]'s, state N is what a `SIGKILL` of r0
//! at the entry of its Nth file-mutating call leaves: the parked store (on
//! the winning claim) or the store as the other claimants left it (on the
//! losing claim) with r0's logged calls before N applied. On the winning
//! claim the others then race for what r0 left: the catalog's
//! `sweep_racers` less r0, spawned on the rebuilt state and released
//! together; on the losing claim they had ended before r0 went, and the
//! recording's ends and ack journals stand for them. In WAL the others
//! find the `-shm` as r0 left it at its stop, still held, as their open
//! connections held it ([`crate::crashstate::walindex`]). Clause: the
//! race's, at most one racer wins and the handoff is claimed exactly once.
//!
//! Trust: each recording is checked against the disk where its r0 ended
//! (the winning claim before the others went, the losing claim at the end);
//! a log that disagrees sends the sweep back to re-running the race at every
//! point, saying why. A state that does not pass is confirmed by a real kill
//! of r0 at its point; one only the recording fails is an `error` naming the
//! non-determinism, never a fire. For the writers, whose real kill has no
//! claim to race for, the sweep instead re-runs every point, saying why: the
//! recording's verdict is never one the real kills do not reach.

use std::sync::Mutex;

use crashcells_protocol::JournalMode;

use crate::cells::End;
use crate::crashstate::log::Effect;
use crate::crashstate::state::states_from;
use crate::crashstate::walindex::{DmsHold, Unindexed, WalIndex, lay_and_hold, snapshot, unindexed};
use crate::crashstate::{Files, Log, Names, State};
use crate::dbfiles::sibling;
use crate::kill::KillPoint;
use crate::kill::racer::RacerAt;
use crate::kill::syscall::FileKind;
use crate::kill::syscall::sweep_points;
use crate::kill::{Ordinal, TrialIndex};
use crate::legaudit::audit_leg;
use crate::model::Trace;
use crate::pipeline::judge::census::{Census, Filter, preflight};
use crate::pipeline::judge::coverage::{self, Coverage};
use crate::pipeline::judge::driver::{Count, Driver, Got, MOST_PER_BATCH, Passed, Plan, Source};
use crate::pipeline::judge::sweep::Swept;
use crate::pipeline::judge::verdict::{Acks, Crash, Ended, conclude};
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::plain::confirm;
use crate::pipeline::plain::decide::{Found, decide};
use crate::pipeline::race::job::{Finished, Order, R0, Race, Racing, Turn, acks_of};
use crate::pipeline::race::sweep::{Claim, RaceSweep, Split, killed_on, ready_of};
use crate::pipeline::race::writers_sweep::{WritersSweep, appending, writers_sweep};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::ended_with;
use crate::pipeline::workload::recorded::fallback_note;
use crate::recovery::RecoveryError;
use crate::trialdir::TrialEnv;

/// One of r0's paths, recorded: r0's log, the files it started from, the
/// other racers' ends and ack journals, and where the log and the disk
/// disagree, if they do.
struct Recorded {
    claim: Claim,
    log: Log,
    base: Files,
    /// The others' ends and journals, r1 first (the losing claim's stand
    /// for every state of it).
    others: Vec<(End, Vec<u8>)>,
    disagrees: Option<String>,
    env: TrialEnv,
    /// r0's `-shm` at each stop, and at its end.
    wal_index: WalIndex,
    /// r0's point that writes its ready record: a kill after it leaves the
    /// others connected (they open the store once r0 is at its barrier),
    /// a kill at it or before leaves them to open the store after r0 died.
    ready: Option<u64>,
}

impl Recorded {
    /// The `-shm` the others find connected at r0's point `at`: on the
    /// winning claim, after r0's ready record.
    fn connected_shm(&self, at: u64) -> Option<&[u8]> {
        match (self.claim, self.ready) {
            (Claim::Winning, Some(ready)) if at > ready => self.wal_index.at(at),
            _ => None,
        }
    }
}

/// The names of r0's files in a race's folder.
fn r0_names(env: &TrialEnv) -> Names {
    Names::new(&env.db, &acks_of(env, 0), &env.transport)
}

/// The syscall result's trials from recordings of `race` (its racers the
/// catalog's `sweep_racers`), and what they covered; where a recording
/// cannot stand for the states (a WAL store the wal-index model cannot
/// follow, a log that disagrees with the
/// disk), the re-executed sweep's. `full` is the race with every racer of
/// the plain races: the re-executed sweep runs it (as `--replay off` and a
/// `--point` repro do), and so do the real kills that confirm a recorded
/// fire. Not `race`: a racy claim's fire, found among two survivors, was
/// then missed by the one exec'd race that confirms it (3 of 4 seeds on
/// the reference store; with every racer, it repeats).
pub fn run(race: &Race, full: &Race) -> (Vec<Trial>, Option<Coverage>) {
    let rec = match recordings(race) {
        Ok(Ok(rec)) => rec,
        Ok(Err(why)) => return re_executed(full, &why),
        Err(ended) => return (ended.trials, None),
    };
    if let Some(why) = rec.disagrees() {
        let note = fallback_note(why);
        drop(rec);
        return re_executed(full, &note);
    }
    let swept = match sweep(race, full, &rec) {
        Ok(swept) => swept,
        Err(why) => {
            drop(rec);
            return re_executed(full, &why);
        }
    };
    let coverage = coverage::of(&swept, &paths(race, rec.split()));
    (swept.trials, coverage)
}

/// The re-executed sweep of `full` (the race's, or the writers'), its last
/// trial saying why.
fn re_executed(full: &Race, why: &str) -> (Vec<Trial>, Option<Coverage>) {
    let (mut trials, coverage) = match full.racing {
        Racing::Claims => RaceSweep::run(full),
        Racing::Appends(_) => writers_sweep(full),
    };
    if let Some(last) = trials.last_mut() {
        last.details.push(why.to_string());
    }
    (trials, coverage)
}

/// Why a WAL store's race is re-executed where the wal-index model cannot
/// stand for it: see [`wal_model`].
pub fn wal_note(why: &str) -> String {
    format!("recorded states not used: the store ran in WAL, and {why}; every point re-ran the race")
}

/// Both of r0's paths recorded, with the census they make and the filter
/// they were recorded with (the real kill that confirms a fire uses it).
pub(super) struct Recordings {
    win: Recorded,
    lose: Option<Recorded>,
    pub(super) census: Census,
    pub(super) filter: Filter,
}

impl Recordings {
    /// Where a recording disagrees with the disk, if one does.
    pub(super) fn disagrees(&self) -> Option<&String> {
        self.win.disagrees.as_ref().or(self.lose.as_ref().and_then(|l| l.disagrees.as_ref()))
    }

    /// The winning claim's points after r0's ready record: a kill there
    /// leaves the others connected, with the `-shm` r0 left.
    pub(super) fn connected(&self) -> Vec<u64> {
        self.win.ready.map_or(Vec::new(), |ready| (ready + 1..=self.win.log.total()).collect())
    }

    /// How many of r0's points each path has.
    pub(super) fn split(&self) -> Split {
        Split { winning: self.win.log.total(), losing: self.lose.as_ref().map_or(0, |l| l.log.total()) }
    }
}

/// The sweep's paths, for the coverage of a result: r0's two claims; the
/// writers have one path, which the report does not name (as re-executed).
fn paths(race: &Race, split: Split) -> Vec<crate::pipeline::judge::coverage::Path> {
    match race.racing {
        Racing::Claims => split.paths(),
        Racing::Appends(_) => Vec::new(),
    }
}

/// Real kills of r0 at a sweep's points: in races on the point's path
/// (cell 2), or with the other writers appending on what it left (cell 6).
pub(super) enum RealKills<'a> {
    Race(RaceSweep<'a>),
    Writers(WritersSweep<'a>),
}

impl<'a> RealKills<'a> {
    pub(super) fn of(full: &'a Race<'a>, split: Split) -> RealKills<'a> {
        match full.racing {
            Racing::Claims => RealKills::Race(RaceSweep::with_split(full, split)),
            Racing::Appends(_) => RealKills::Writers(WritersSweep::new(full)),
        }
    }

    /// One real kill at sweep point `n`, judged on its own recovery.
    pub(super) fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        match self {
            RealKills::Race(sweep) => sweep.kill_at(filter, n, census),
            RealKills::Writers(sweep) => sweep.kill_at(filter, n, census),
        }
    }
}

/// Both recordings and the census they make, or why recordings cannot
/// stand for the states, or how the sweep ended before its first point
/// (tracing refused, a recording that failed, a leg the winning claim
/// shows was not honored).
///
/// In WAL the racers that outlive r0 hold the store open, with the
/// wal-index in the `-shm` as r0 left it through `mmap`: a commit r0 wrote
/// to the WAL but had not yet indexed is invisible to them. The winning
/// recording read the `-shm` at each stop, and a state is raced over with
/// it laid and its dead-man's-switch held ([`crate::crashstate::walindex`]);
/// where that model cannot stand ([`wal_model`]) the sweep is re-executed.
/// With a rollback journal a survivor and a fresh connection alike find
/// r0's hot journal and roll it back.
pub(super) fn recordings(race: &Race) -> Result<Result<Recordings, String>, Box<Swept>> {
    race.ctx.events.phase(crate::model::Phase::Recording);
    let unplanned = |t: Trial| Box::new(Swept::unplanned(t));
    let filter = preflight().map_err(|o| unplanned(Trial::ended(TrialIndex::CENSUS, o)))?;
    let win = record(race, filter, Claim::Winning).map_err(|t| unplanned(*t))?;
    let ready = ready_of(&win.env, 0).map_err(|f| unplanned(*ended_with(None, Outcome::Error(f))))?;
    if audit_leg(&win.env.db, &ready, race.leg).effective_mode() == Some(JournalMode::Wal)
        && let Err(why) = wal_model(&win)
    {
        return Ok(Err(wal_note(&why)));
    }
    // With r0 alone there is no other racer to win first; a writer has one path.
    let lose = if race.racers > 1 && race.racing == Racing::Claims {
        Some(record(race, filter, Claim::Losing).map_err(|t| unplanned(*t))?)
    } else {
        None
    };
    let points = win.log.total() + lose.as_ref().map_or(0, |l| l.log.total());
    let audit = audit_leg(&win.env.db, &ready, race.leg);
    // A writer's sweep visits its appends, as re-executed (`race::writers`).
    let windows = match race.racing {
        Racing::Claims => None,
        Racing::Appends(_) => Some(vec![appending(&win.log.points, points)]),
    };
    let census = Census { points, ready, audit, windows };
    if !census.audit.honored {
        return Err(Box::new(Swept::skipped(census)));
    }
    Ok(Ok(Recordings { win, lose, census, filter }))
}

/// Whether the winning recording holds what the wal-index model needs: the
/// point of r0's ready record, and the `-shm` at every stop after it and at
/// its end (a store whose index is not a `-shm`, `locking_mode=EXCLUSIVE`'s
/// heap memory say, has none, and its racers could not share it).
fn wal_model(win: &Recorded) -> Result<(), String> {
    let ready = win.ready.ok_or("the recording shows no write of r0's ready record")?;
    let total = win.log.total();
    if win.wal_index.stops() != total {
        return Err(format!("the -shm was read at {} of r0's {total} stops", win.wal_index.stops()));
    }
    match (ready + 1..=total + 1).find(|&n| win.wal_index.at(n).is_none()) {
        Some(n) => Err(format!("there was no -shm to read at r0's point {n}, after the others had connected")),
        None => Ok(()),
    }
}

/// Runs the race in `claim`'s order with r0 recorded to its end: the files
/// it started from and where it ended are read at the race's turn (the
/// winning claim's end, before the others go; the losing claim's start,
/// once the others ended).
fn record(race: &Race, filter: Filter, claim: Claim) -> Result<Recorded, Box<Trial>> {
    let census_error = |env: Option<TrialEnv>, f: Failure| ended_with(env, Outcome::Error(Failure::census(f)));
    let parked = start_of(race).map_err(|o| ended_with(None, o.of_census()))?;
    let env = race.env(&format!("record-{}", claim.name())).map_err(|f| census_error(None, f))?;
    let (at_turn, at_release) = (Mutex::new(None), Mutex::new(None));
    let shm = sibling(&env.db, "-shm");
    let turn = |t: Turn| match t {
        // What the others' opens wrote while r0 waited at its barrier.
        Turn::R0Release => *at_release.lock().expect("no turn panics") = Some(store_of(&env)),
        // The -shm at the turn is where the winning claim's r0 ended: what the others then map.
        Turn::Sides => {
            *at_turn.lock().expect("no turn panics") =
                Some((Files::from_disk(env.dir(), &r0_names(&env)), snapshot(&shm)))
        }
    };
    let finished = match race.run_turning(&env, race.racers, R0::Recorded(filter), claim.order(), &turn) {
        Ok(f) => f,
        Err(o) => return Err(ended_with(Some(env), o.of_census())),
    };
    let (turned, at_end) = at_turn.into_inner().expect("no turn panics").unwrap_or_default();
    let mut wal_index = finished.wal_index.unwrap_or_default();
    wal_index.ended(at_end);
    let mut log = match (finished.log, finished.ends.first()) {
        (Some(log), Some(&End::Exited(code))) if code == claim.exit() => log,
        (_, _) => {
            let f = Failure::R0OffPath { path: claim.phrase(), ends: finished.ends };
            return Err(census_error(Some(env), f));
        }
    };
    let ready = log.points.iter().position(|p| p.file == Some(FileKind::Acks)).map(|i| i as u64 + 1);
    let released = at_release.into_inner().expect("no turn panics");
    if let (Claim::Winning, Some(Some(released)), Some(ready)) = (claim, released, ready) {
        others_opened(&mut log, &parked, ready, &released);
    }
    let (base, ended) = match claim {
        Claim::Winning => (parked, turned),
        Claim::Losing => (turned.without_acks(), Files::from_disk(env.dir(), &r0_names(&env))),
    };
    let disagrees =
        states_from(base.clone(), &log, &[log.total() + 1]).pop().and_then(|s| s.files.differs_from(&ended));
    let others = (1..race.racers)
        .zip(finished.ends.into_iter().skip(1))
        .map(|(r, end)| (end, std::fs::read(acks_of(&env, r)).unwrap_or_default()))
        .collect();
    Ok(Recorded { claim, log, base, others, disagrees, env, wal_index, ready })
}

/// The store on the disk in `env`, its ack journal aside; `None` if it
/// cannot be read (the recording's self-check then says where it differs).
fn store_of(env: &TrialEnv) -> Option<Files> {
    Files::read_store(env.dir(), &r0_names(env)).ok()
}

/// Puts into r0's `log`, just after its ready record (point `ready`), what
/// the other racers' opens wrote to the store while r0 waited at its
/// barrier (`released`: the store read as r0 was released): a store whose
/// open writes (Hermes's upserts its session row) is modelled as the disk
/// had it, so its states are recorded, not re-executed. r0 writes nothing
/// to the store between its ready record and its barrier, and the others
/// nothing after their ready records until r0 has ended.
fn others_opened(log: &mut Log, base: &Files, ready: u64, released: &Files) {
    let Some(&at) = log.at.get(ready as usize - 1) else { return };
    let mut model = base.clone();
    log.events[..=at].iter().for_each(|e| model.apply(&e.effect));
    let effects = model.without_acks().effects_to(released);
    log.insert_uncounted(at + 1, effects);
}

/// The store every race of `race` starts from: the parked handoff, or
/// (cell 6's writers) the empty folder.
fn start_of(race: &Race) -> Result<Files, Outcome> {
    match race.racing {
        Racing::Claims => race.parked_store(),
        Racing::Appends(_) => Ok(Files::default()),
    }
}

/// The recorded sweep: each planned point's state rebuilt, raced over (on
/// the winning claim) and judged by the one driver; a state that does not
/// pass confirmed by a real kill. A writers' state that only the recording
/// fails is `Err`, why the sweep re-runs every point: the writers' fast
/// path never decides a verdict its real kills do not reach.
fn sweep(race: &Race, full: &Race, rec: &Recordings) -> Result<Swept, String> {
    let (ctx, census, split) = (race.ctx, &rec.census, rec.split());
    let (win, lose) = (&rec.win, rec.lose.as_ref());
    let points = sweep_points(census.candidates(), None, ctx.options.points, race.job.seed);
    ctx.events.planned(points.len() as u64);
    ctx.events.phase(crate::model::Phase::Checking);
    let (mut trials, distinct, unindexed) = judged(race, rec, &points);
    if confirm_unindexed(full, rec, &unindexed, &mut trials) {
        return Ok(Swept { planned: Some(points), trials, recorded: true, distinct: Some(distinct) });
    }
    if let Some(recorded) = trials.pop_if(|t| t.to_confirm()) {
        let n = recorded.index.ordinal().0;
        let (claim, at) = split.locate(n);
        let log = if claim == Claim::Winning { &win.log } else { &lose.expect("a losing point has its recording").log };
        let (real, races) = real_kills(full, split, rec, n);
        // The real kills were the tries: a race has no run to seek the state in.
        let mut decided = decide(recorded, real, &log.point(at), || Found::Missed(races));
        if let Outcome::Error(Failure::OnlyRecorded { point, found, .. }) = decided.outcome {
            if race.racing != Racing::Claims {
                return Err(not_reached(point, &found, races));
            }
            decided.outcome = Outcome::Error(Failure::OnlyRecordedRace { point, found, races });
        }
        decided.trace.get_or_insert_with(|| Trace::of_log(log, at, crate::model::Crash::Kill));
        trials.push(decided);
    }
    Ok(Swept { planned: Some(points), trials, recorded: true, distinct: Some(distinct) })
}

/// Why a writers' sweep re-runs every point: the state rebuilt at `point`
/// found `found`, and `races` real kills there did not.
fn not_reached(point: u32, found: &Outcome, races: u32) -> String {
    let kills = if races == 1 { "a real kill".to_string() } else { format!("{races} real kills") };
    format!(
        "recorded states not used: the state rebuilt at point {point} found {found}, and {kills} there did not; \
         every point re-ran the writers"
    )
}

/// A real kill at each passing point whose state had an unindexed commit
/// dropped ([`without_unindexed`]): there the others' timing can bring the
/// commit back, a world the rebuilt state does not race, so its pass stands
/// beside a real kill's. The first real fire ends the trials, as its
/// point's verdict (true); a real kill that passed is said on the trial.
fn confirm_unindexed(full: &Race, rec: &Recordings, unindexed: &[u64], trials: &mut Vec<Trial>) -> bool {
    let real = RealKills::of(full, rec.split());
    for &n in unindexed {
        let Some(i) = trials.iter().position(|t| t.index.ordinal().0 == n && !t.is_bad()) else { continue };
        let mut killed = real.kill_at(rec.filter, n, &rec.census);
        if matches!(killed.outcome, Outcome::Fire(_)) {
            killed.details.push(format!(
                "the state rebuilt with r0's unindexed commit dropped passed at point {n}, and this real kill \
                 fired: the others' timing decides what that commit leaves"
            ));
            trials.truncate(i);
            trials.push(killed);
            return true;
        }
        let real = if killed.is_bad() { "ended in an error" } else { "passed too" };
        trials[i].details.push(format!("a real kill at point {n}, where the others' timing decides, {real}"));
    }
    false
}

/// The states of sweep points `points` rebuilt, raced over (on the winning
/// claim) and judged by the one driver, up to the first that does not
/// pass; how many distinct crash states they judged; and the points whose
/// state had an unindexed commit dropped ([`without_unindexed`]).
pub(super) fn judged(race: &Race, rec: &Recordings, points: &[u64]) -> (Vec<Trial>, u64, Vec<u64>) {
    let (ctx, census) = (race.ctx, &rec.census);
    let source = Points::new(race, rec.split(), &rec.win, rec.lose.as_ref(), points);
    let make_env = |l: &str| race.env(l);
    let driver = Driver { scope: race.scope, census: Some(census), recorded: &rec.win.env, make_env: &make_env };
    let wave = MOST_PER_BATCH * ctx.jobs.max(1);
    let plan =
        Plan { units: points.len(), wave, label: "b", count: Count::Units, turn: None, one_log: false, spread: true };
    let trials = driver.run(&source, &plan);
    let last = trials.last().map_or(0, |t| t.index.ordinal().0);
    let unindexed = source.states.iter().filter(|(.., lag)| lag.is_some()).map(|(n, ..)| *n).collect();
    (trials, source.distinct_up_to(last), unindexed)
}

/// Real kills of r0 at sweep point `n`, in races of every racer, up to the
/// first that does not pass: what the survivors do is the scheduler's, so
/// a fire of theirs (two winners of a racy claim) gets the tries a timed
/// kill's fire gets ([`confirm::tries`]), counted from the points it took
/// to find; a state's own fire repeats at the first.
fn real_kills(full: &Race, split: Split, rec: &Recordings, n: u64) -> (Trial, u32) {
    let sweep = RealKills::of(full, split);
    let tries = confirm::tries(crate::killmode::KillMode::Timed, true, TrialIndex::at(Ordinal(n)));
    let (mut real, mut races) = (sweep.kill_at(rec.filter, n, &rec.census), 1);
    while !real.is_bad() && races < tries {
        real = sweep.kill_at(rec.filter, n, &rec.census);
        races += 1;
    }
    if real.is_bad() && races > 1 {
        real.details.push(format!("the real kill at point {n} fired in race {races} of at most {tries}"));
    }
    (real, races)
}

/// The planned points' states, as the driver's crash source.
struct Points<'a> {
    race: &'a Race<'a>,
    split: Split,
    states: Vec<PointState<'a>>,
}

/// A point's sweep number, path and state, the `-shm` the others find
/// connected (a winning WAL state after r0's ready record), and the commit
/// dropped from the state's WAL that the `-shm` left out.
type PointState<'a> = (u64, &'a Recorded, State, Option<&'a [u8]>, Option<Unindexed>);

/// One point made: its place among the states, and on the winning claim
/// the race the others ran over it (its folder, their ends); the store to
/// recover.
struct Made {
    i: usize,
    raced: Option<(TrialEnv, Finished)>,
    store: Files,
}

impl<'a> Points<'a> {
    fn new(race: &'a Race<'a>, split: Split, win: &'a Recorded, lose: Option<&'a Recorded>, points: &[u64]) -> Self {
        let mut states = Vec::with_capacity(points.len());
        for rec in std::iter::once(win).chain(lose) {
            let mine: Vec<(u64, u64)> = points
                .iter()
                .map(|&n| (n, split.locate(n)))
                .filter(|(_, (c, _))| *c == rec.claim)
                .map(|(n, (_, at))| (n, at))
                .collect();
            let ats: Vec<u64> = mine.iter().map(|(_, at)| *at).collect();
            let built = states_from(rec.base.clone(), &rec.log, &ats);
            let made = |(&(n, at), s): (&(u64, u64), State)| {
                let shm = rec.connected_shm(at);
                let (s, lag) = without_unindexed(s, shm);
                (n, rec, s, shm, lag)
            };
            states.extend(mine.iter().zip(built).map(made));
        }
        Points { race, split, states }
    }

    /// How many distinct crash states r0's kill left at the points up to
    /// `last`: its path, the store and its acks.
    fn distinct_up_to(&self, last: u64) -> u64 {
        use std::hash::{Hash, Hasher};
        let digest = |(claim, s, shm): (Claim, &State, Option<&[u8]>)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (claim.name(), s.files.store_hash(), s.acks.as_slice(), shm).hash(&mut h);
            h.finish()
        };
        let seen: std::collections::HashSet<u64> = self
            .states
            .iter()
            .filter(|(n, ..)| *n <= last)
            .map(|(_, r, s, shm, _)| digest((r.claim, s, *shm)))
            .collect();
        seen.len() as u64
    }

    /// Lays the state in a race's folder (with `shm`, the -shm the others
    /// find connected, under the hold their connections kept on it) and
    /// releases the surviving racers against it; the store they left.
    fn raced(&self, n: u64, state: &State, shm: Option<&[u8]>) -> Result<(TrialEnv, Finished, Files), Box<Trial>> {
        let index = TrialIndex::at(Ordinal(n));
        let race = self.race;
        let env = race.env(&format!("p{n}")).map_err(|f| Box::new(Trial::ended(index, Outcome::Error(f))))?;
        let names = r0_names(&env);
        let laid = state.files.write_to(env.dir(), &names).and_then(|_| held(&env, shm));
        let hold = match laid {
            Ok(hold) => hold,
            Err(e) => {
                let failed = Trial::ended(index, Outcome::Error(Failure::WritingState(e.to_string())));
                return Err(Box::new(failed.with_env(env)));
            }
        };
        // The others hold the -shm once at their barrier (their open mapped it), as
        // they did when r0 died; SQLite's close sees a hold kept longer and would
        // not checkpoint.
        let hold = Mutex::new(hold);
        let at_barrier = |_: Turn| drop(hold.lock().expect("no turn panics").take());
        let ran = race.run_turning(&env, race.racers, R0::Gone, Order::Together, &at_barrier);
        drop(hold);
        match ran {
            Ok(f) => match Files::read_store(env.dir(), &names) {
                Ok(store) => Ok((env, f, store)),
                // As a killed trial's store that cannot be read in (`pending`).
                Err(e) => {
                    let outcome = Outcome::from(RecoveryError::Copy { pass: 1, why: e.to_string() });
                    Err(Box::new(Trial::ended(index, outcome).with_env(env)))
                }
            },
            Err(o) => Err(Box::new(self.described(Trial::ended(index, o), n).with_env(env))),
        }
    }

    /// A trial's first detail: where on which path r0 was killed.
    fn described(&self, mut t: Trial, n: u64) -> Trial {
        let (claim, at) = self.split.locate(n);
        let of = if claim == Claim::Winning { self.split.winning } else { self.split.losing };
        let stage = t.kill_point.as_ref().and_then(|k| k.racer.as_ref()).map(|r| r.stage);
        let killed = match self.race.racing {
            Racing::Claims => killed_on(claim, stage, (at, of, n)),
            Racing::Appends(_) => crate::pipeline::race::writers_sweep::said(n, of, true),
        };
        t.details.insert(0, format!("{killed}; its state rebuilt from the recording"));
        t
    }

    /// A losing-claim state that does not pass, as evidence: the state's
    /// files, r0's journal and the others'.
    fn evidence(&self, i: usize) -> Option<TrialEnv> {
        let (n, recorded, state, ..) = &self.states[i];
        let env = self.race.env(&format!("p{n}")).ok()?;
        state.files.write_to(env.dir(), &r0_names(&env)).ok()?;
        for (r, (_, acks)) in (1u32..).zip(&recorded.others) {
            std::fs::write(acks_of(&env, r), acks).ok()?;
        }
        std::fs::write(env.path("recorded-state.txt"), "this state was rebuilt from the recorded race's log\n").ok()?;
        Some(env)
    }
}

impl Source for Points<'_> {
    type Unit = Made;

    fn key(&self, i: usize) -> u64 {
        self.states[i].0
    }

    fn make(&self, i: usize) -> Result<Made, Box<Trial>> {
        let (n, recorded, state, shm, _) = &self.states[i];
        if recorded.claim == Claim::Losing {
            return Ok(Made { i, raced: None, store: state.files.clone().without_acks() });
        }
        let (env, finished, store) = self.raced(*n, state, *shm)?;
        Ok(Made { i, raced: Some((env, finished)), store })
    }

    fn stores(&self, made: &Made) -> Vec<Files> {
        vec![made.store.clone()]
    }

    fn judge(&self, d: &Driver, made: Made, got: &[Got], _: &mut Passed) -> Vec<Trial> {
        let (n, recorded, state, _, lag) = &self.states[made.i];
        let index = TrialIndex::at(Ordinal(*n));
        let mut t = Trial::new(index);
        t.kill_point = Some(killed_at(recorded, state, index, self.race.racing == Racing::Claims));
        let outcome = match &made.raced {
            Some((env, f)) => conclude(&self.race.crash(env, f, d.census), &mut t, || d.recovered(&got[0])),
            None => conclude(&left(d, recorded, state), &mut t, || d.recovered(&got[0])),
        };
        let mut t = self.described(t.conclude(outcome), *n);
        t.details.extend(lag.map(dropped_note));
        t.details.extend(got[0].note.clone());
        if t.is_bad() {
            t.env = match made.raced {
                Some((env, _)) => Some(env),
                None => self.evidence(made.i),
            };
        }
        vec![t]
    }
}

/// `state` with the commit its WAL holds past the connected others' `-shm`
/// (`shm`) dropped, and what was dropped. Such a commit was whole on disk
/// when r0 died but not yet indexed (SQLite syncs the WAL between the two
/// under `synchronous=FULL`): the others never see it, and whether it is
/// lost is their timing. The last of them to close alone checkpoints the
/// index it trusts and deletes the WAL, losing the commit; two closing at
/// once both skip that checkpoint, and the next recovery brings it back.
/// The rebuilt state is the first (the commit lost, a claim's half gone):
/// deterministic, where racing over the whole WAL left the verdict to the
/// scheduler. The other is a real kill's to find ([`confirm_unindexed`]).
fn without_unindexed(mut state: State, shm: Option<&[u8]>) -> (State, Option<Unindexed>) {
    let lag = shm.zip(state.files.get(FileKind::Wal)).and_then(|(shm, wal)| unindexed(shm, &wal));
    if let Some(lag) = lag {
        state.files.apply(&Effect::Truncate { file: FileKind::Wal, len: lag.indexed_len });
        state.version = state.files.version();
    }
    (state, lag)
}

/// What a trial says of the commit [`without_unindexed`] dropped.
fn dropped_note(lag: Unindexed) -> String {
    format!(
        "r0's WAL held a commit to frame {} that its -shm indexed only to frame {}: raced with that commit \
         dropped, as the others' last close checkpoints it away",
        lag.committed, lag.indexed
    )
}

/// The -shm `shm` laid in `env`'s folder and held as the others'
/// connections held it; nothing to lay where they were not connected.
fn held(env: &TrialEnv, shm: Option<&[u8]>) -> std::io::Result<Option<DmsHold>> {
    shm.map(|bytes| lay_and_hold(&sibling(&env.db, "-shm"), bytes)).transpose()
}

/// The kill point of `state`, sweep point `index`: where r0 was, from the
/// journal the state holds, and (`weighed`: a claim) whether it left the
/// store as its path's recording started from it (the parked store, or what
/// the others left). A writer's real kill is not weighed, nor is its state.
fn killed_at(recorded: &Recorded, state: &State, index: TrialIndex, weighed: bool) -> KillPoint {
    let mut kp = state.point.kill_point(index, 0);
    let untouched =
        weighed && recorded.base.clone().without_acks().differs_from(&state.files.clone().without_acks()).is_none();
    kp.racer = Some(RacerAt::of(0, recorded.claim.name(), &state.acks, kp.call(), untouched));
    kp
}

/// A losing-claim state as the verdict reads it: r0 killed with the
/// state's journal, the others as the recording's race ended them.
fn left<'s>(d: &'s Driver, recorded: &'s Recorded, state: &'s State) -> Crash<'s> {
    let mut ended = vec![Ended { name: "r0".into(), acks: Acks::Bytes(&state.acks), end: End::Killed }];
    for (r, (end, acks)) in (1..).zip(&recorded.others) {
        ended.push(Ended { name: format!("r{r}"), acks: Acks::Bytes(acks), end: *end });
    }
    Crash { cell: d.cell, leg: d.leg, db: &recorded.env.db, ended, seed: 0, census: d.census }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writers' state only the recording fails sends the sweep back to
    /// real kills at every point, and says which point and what it found.
    #[test]
    fn a_writers_state_the_real_kills_do_not_reach_says_where_and_what() {
        let said = not_reached(7, &Outcome::Pass, 1);
        assert!(said.starts_with("recorded states not used: the state rebuilt at point 7 found"), "{said}");
        assert!(said.contains("and a real kill there did not; every point re-ran the writers"), "{said}");
        assert!(not_reached(7, &Outcome::Pass, 3).contains("and 3 real kills there did not"));
    }
}
