//! The race shape (cell 2): park a handoff, start N claimants, wait until
//! every one is at its barrier, release them, and judge.
//!
//! Crash model: in a free race (kill mode `none`) nothing is killed; all
//! claimants are released at once and the race itself is the probe. Under
//! syscall kills (see [`crate::pipeline::race::sweep`]) racer r0 is traced and killed at
//! the entry of its Nth file-mutating call (its locks die with it), and the
//! barrier releases the racers in an order that decides r0's path whatever
//! the scheduler does: r0 alone first (it wins: its winning claim), or the
//! others first and r0 once they all ended (one of them won: r0's losing
//! claim). A recorded sweep ([`crate::pipeline::race::recorded`]) runs the same
//! orders with r0 recorded to its end, then, for each point, the others
//! alone on the state r0's kill left (r0 gone). Every racer must end WON
//! (0), LOST (10) or, for r0 at its point, killed; any other end is an
//! `error`, never a loss. Each race starts from the handoff parked once
//! ([`crate::pipeline::race::park`]); its racers are started and waited for
//! in [`crate::pipeline::race::racers`].

use std::ffi::OsString;
use std::fs::File;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crashcells_protocol::{EXIT_LOST, EXIT_WON, HANDOFF_SESSION as HANDOFF, Op, OpArgs};

use crate::cells::End;
use crate::crashstate::Log;
use crate::crashstate::record::record_seeing;
use crate::crashstate::walindex::WalIndex;
use crate::dbfiles::sibling;
use crate::harness::{Exit, Launch};
use crate::kill::racer::RacerAt;
use crate::kill::syscall::{Driven, Goal, Targets, drive};
use crate::kill::{KillPoint, TrialIndex};
use crate::pipeline::judge::census::{Census, Filter, trace_outcome};
use crate::pipeline::judge::pending::{MakeTrial, Pending, in_order};
use crate::pipeline::judge::verdict::{Acks, Crash, Ended, conclude, prepare};
use crate::pipeline::outcome::{Failure, Outcome, Since};
use crate::pipeline::race::hold::Hold;
use crate::pipeline::race::preempt::Preempt;
use crate::pipeline::run::context::Scope;
use crate::pipeline::trial::Trial;
use crate::times::{Clock, Release};
use crate::trialdir::TrialEnv;

/// What the racers run: claims of one parked handoff (cell 2), or appends
/// to one session, each writer stopping after this many (cell 6's
/// `co-append`: the store starts empty, nothing is parked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Racing {
    Claims,
    Appends(u64),
}

/// A race cell's job, as a race needs it.
pub struct Race<'a> {
    /// Its job, leg, cell and context (`race.ctx` reads through it).
    pub scope: Scope<'a>,
    pub racers: u32,
    pub racing: Racing,
    /// The handoff parked once for every race of the result: its folder,
    /// or why `park` failed (each race then ends on that).
    pub(super) parked: OnceLock<Result<TrialEnv, Outcome>>,
}

/// How racer r0 takes part: racing freely, traced toward a goal, traced
/// to its end with its calls logged (a recorded sweep's recording), or gone:
/// killed before the race, its crash state already laid in the folder (a
/// recorded sweep's point), the others racing for what it left.
#[derive(Clone, Copy)]
pub(super) enum R0<'h> {
    Free,
    Traced(Filter, Goal),
    Recorded(Filter),
    Gone,
    /// Traced and held at its claim's first write until the others wait
    /// (a controlled schedule, [`crate::pipeline::race::schedule`]).
    Held(Filter, &'h Hold),
    /// Traced and held at each of its drawn lock calls in turn (the
    /// `preemptions` schedules, [`crate::pipeline::race::preempt`]).
    Preempted(Filter, &'h Preempt),
    /// Not traced: killed once its journal holds `target` acks, the others
    /// running on (a writer's timed kill, [`crate::pipeline::race::writers`]).
    Timed {
        target: u64,
        trial: TrialIndex,
    },
}

/// The order in which the barriers release the racers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    /// Every racer at once, on one barrier: a real race.
    Together,
    /// r0 alone; the others once r0 has ended. r0 finds the handoff
    /// pending: its winning claim.
    R0First,
    /// The others; r0 once they all ended. One of them won: r0's losing claim.
    R0Last,
    /// r0 alone, up to its claim's first write, where it is held; then the
    /// others, until each waits for the write lock or has ended; then r0
    /// goes on: every claim's read done before any claim's write.
    ReadsFirst,
    /// r0 alone, up to just after its first commit, where it is held; then
    /// the others, until each has acked or ended; then r0 goes on: the
    /// others' transactions run between two of r0's.
    BetweenTransactions,
    /// r0 alone, held just after its first commit as above; then `turn`
    /// (a fresh process opens the store and dumps it,
    /// [`crate::pipeline::race::opener`]), no other racer; then r0 goes on.
    Opener,
    /// r0 alone, up to the first of its drawn lock calls, where it is held;
    /// then the others, until each waits, acks or has ended; then r0 to its
    /// next drawn call, held the same way, and so on to its end.
    Preemptions,
}

impl Order {
    /// The path this order sends r0 on (`winning-claim`, `losing-claim`),
    /// as a kill's label names it.
    pub(super) fn path(self) -> &'static str {
        match self {
            Order::R0Last => "losing-claim",
            Order::Together
            | Order::R0First
            | Order::ReadsFirst
            | Order::BetweenTransactions
            | Order::Opener
            | Order::Preemptions => "winning-claim",
        }
    }
}

/// Where a race calls its `turn` ([`Race::run_turning`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// r0 about to be released alone, every other racer at its barrier
    /// (r0 first): what the others' opens wrote is on the disk, and r0 is
    /// stopped at its barrier.
    R0Release,
    /// One side of an ordered race has ended and the other is not yet
    /// released; released together, every racer is at its barrier; held,
    /// r0 is held.
    Sides,
}

/// How a traced r0 ended.
enum Traced0 {
    Killed(KillPoint),
    /// Finished its race after passing this many points (and, recorded,
    /// with its calls' log and its `-shm` at each of their stops).
    Exited(Exit, u64, Option<(Log, WalIndex)>),
}

/// What a race left before judging: every racer's end, r0 first.
pub(super) struct Finished {
    pub ends: Vec<End>,
    pub kill_point: Option<KillPoint>,
    /// Points r0 passed, when it was traced and finished on its own.
    pub r0_points: Option<u64>,
    /// r0's calls, when it was recorded.
    pub log: Option<Log>,
    /// r0's `-shm` at each stop of its calls, when it was recorded.
    pub wal_index: Option<WalIndex>,
}

/// A traced r0's holds, as the release drives them: none, one hold
/// (`reads-first`, `between-transactions`, `opener`) or its preemptions.
#[derive(Clone, Copy)]
enum Held<'h> {
    Not,
    Once(&'h Hold),
    Preempted(&'h Preempt),
}

impl Held<'_> {
    /// Lets r0 go from any hold it is at or will reach.
    fn let_go(self) {
        match self {
            Held::Not => {}
            Held::Once(hold) => hold.go(),
            Held::Preempted(preempt) => preempt.let_all_go(),
        }
    }
}

/// The locks the racers wait on: r0's own (unless released together) and
/// the others'. Dropping one releases whoever waits on it.
struct Barriers {
    r0: Option<File>,
    others: Option<File>,
}

impl<'a> std::ops::Deref for Race<'a> {
    type Target = Scope<'a>;

    fn deref(&self) -> &Scope<'a> {
        &self.scope
    }
}

impl<'a> Race<'a> {
    pub fn new(scope: Scope<'a>, racers: u32) -> Race<'a> {
        Race { scope, racers, racing: Racing::Claims, parked: OnceLock::new() }
    }

    /// `writers` processes appending to one session, each `appends` times.
    pub fn writers(scope: Scope<'a>, (writers, appends): (u32, u64)) -> Race<'a> {
        Race { racing: Racing::Appends(appends), ..Race::new(scope, writers) }
    }

    /// The free races `indices` of a result, up to the first that does not
    /// pass, through the one driver ([`crate::pipeline::judge::pending`]'s source).
    pub fn free_races(&self, indices: &[TrialIndex]) -> Vec<Trial> {
        self.trials(None, indices, &|i| self.free(i))
    }

    /// Runs the races `indices` (`run` makes one: a free race, a sweep's
    /// point) through the one driver ([`crate::pipeline::judge::pending`]), `census`
    /// standing for a sweep's points' leg audit. The folder whose config
    /// home recovers them all is the result's (a race has no step).
    pub(super) fn trials(&self, census: Option<&Census>, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        in_order(self.scope, census, self.env("recovery"), indices, run)
    }

    /// Trial `index` of a free race: nothing is killed.
    fn free(&self, index: TrialIndex) -> Pending {
        let env = match self.env(&format!("t{index}")) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        let prepared = self.run(&env, self.racers, R0::Free, Order::Together).and_then(|f| {
            trial.kill_point = f.kill_point.clone();
            prepare(&self.crash(&env, &f, None), &mut trial)
        });
        Pending::prepared(trial, env, prepared)
    }

    pub(super) fn env(&self, label: &str) -> Result<TrialEnv, Failure> {
        self.folder(label)
    }

    /// A finished race judged on its folder's recovery alone; `census`
    /// stands for the leg audit of a sweep's trials.
    pub(super) fn judge(&self, env: &TrialEnv, f: &Finished, census: Option<&Census>, trial: &mut Trial) -> Outcome {
        trial.kill_point = f.kill_point.clone();
        let recover = || self.ctx.recover_alone(env).map_err(Outcome::from);
        conclude(&self.crash(env, f, census), trial, recover)
    }

    /// A finished race, every racer r0 first, as the verdict reads it.
    pub(super) fn crash<'s>(&'s self, env: &'s TrialEnv, f: &Finished, census: Option<&'s Census>) -> Crash<'s> {
        let racer =
            |(r, &end): (usize, &End)| Ended { name: format!("r{r}"), acks: Acks::File(acks_of(env, r as u32)), end };
        let ended = f.ends.iter().enumerate().map(racer).collect();
        Crash { cell: self.cell, leg: self.leg, db: &env.db, ended, seed: 0, census }
    }

    /// Parks, runs `racers` claimants with r0 as asked, released in `order`,
    /// and returns how each ended.
    /// One unit of the run's pool: the park and every claimant, which must
    /// be alive together to race.
    pub(super) fn run(&self, env: &TrialEnv, racers: u32, r0: R0, order: Order) -> Result<Finished, Outcome> {
        self.run_turning(env, racers, r0, order, &|_| ())
    }

    /// [`Race::run`], calling `turn` ([`Turn::Sides`]) when one side of an
    /// ordered race has ended and the other is not yet released (a
    /// recording reads the files there: r0's winning claim ends, the
    /// others' claims end before r0's losing one starts), or, released
    /// together, once every racer is at its barrier (a rebuilt WAL state's
    /// hold on the `-shm` ends there); and, r0 first, as r0 is about to be
    /// released ([`Turn::R0Release`]: a recording reads what the others'
    /// opens wrote).
    pub(super) fn run_turning(
        &self,
        env: &TrialEnv,
        racers: u32,
        r0: R0,
        order: Order,
        turn: &dyn Fn(Turn),
    ) -> Result<Finished, Outcome> {
        self.ctx.pool.unit(&self.ctx.interrupt, || self.race(env, racers, r0, order, turn))
    }

    fn race(
        &self,
        env: &TrialEnv,
        racers: u32,
        r0: R0,
        order: Order,
        turn: &dyn Fn(Turn),
    ) -> Result<Finished, Outcome> {
        // A gone r0's crash state is already in the folder; writers start empty.
        if !matches!(r0, R0::Gone) && self.racing == Racing::Claims {
            self.park(env)?;
        }
        let barriers = Barriers::hold(env, order)?;
        let done = AtomicBool::new(matches!(r0, R0::Gone));
        let r0_done = &done;
        // The timeline's axis: the driver's clock, from the racers' start.
        let clock = &Clock::start();
        let (traced, exits) = std::thread::scope(|s| {
            // ptrace binds r0 to the thread that spawns it, which must keep
            // resuming it while this thread runs the barriers.
            let tracer = match r0 {
                R0::Free | R0::Gone => None,
                R0::Traced(..) | R0::Recorded(_) | R0::Held(..) | R0::Preempted(..) | R0::Timed { .. } => {
                    Some(s.spawn(move || {
                        // r0 is this race's claimant: it works within the race's unit.
                        clock.racer(0, |t| t.started_ms = Some(clock.now()));
                        let end = self.ctx.pool.within(|| self.trace_r0(env, r0, order));
                        clock.racer(0, |t| t.ended_ms = Some(clock.now()));
                        r0_done.store(true, Ordering::SeqCst);
                        end
                    }))
                }
            };
            let apart = !matches!(r0, R0::Free);
            let held = match r0 {
                R0::Held(_, hold) => Held::Once(hold),
                R0::Preempted(_, preempt) => Held::Preempted(preempt),
                _ => Held::Not,
            };
            let exits = self.release(env, racers, barriers, (order, turn), (apart, held), (r0_done, clock));
            // Whatever ended the release, a held r0 must not wait for a go that never comes.
            held.let_go();
            let traced = tracer.map(|t| t.join().unwrap_or(Err(Outcome::Error(Failure::TracerPanicked))));
            (traced, exits)
        });
        let mut finished = Finished { ends: Vec::new(), kill_point: None, r0_points: None, log: None, wal_index: None };
        match traced.transpose()? {
            Some(Traced0::Killed(kp)) => {
                finished.ends.push(End::Killed);
                finished.kill_point = Some(kp);
            }
            Some(Traced0::Exited(exit, counted, recorded)) => {
                finished.ends.push(racer_end(env, 0, exit, self.racing)?);
                finished.r0_points = Some(counted);
                (finished.log, finished.wal_index) = recorded.unzip();
            }
            None if matches!(r0, R0::Gone) => finished.ends.push(End::Killed),
            None => {}
        }
        let first = finished.ends.len() as u32;
        for (r, exit) in (first..).zip(exits?) {
            finished.ends.push(racer_end(env, r, exit, self.racing)?);
        }
        record_ends(env, clock, &finished, self.racing);
        Ok(finished)
    }

    /// Racer `r`'s arguments: its claim (or its appends), on its barrier.
    pub(super) fn racer_args(&self, env: &TrialEnv, r: u32, order: Order) -> Vec<OsString> {
        if let Racing::Appends(appends) = self.racing {
            return self.writer_args(env, r, &barrier_of(env, r, order), Some(appends));
        }
        OpArgs::new(Op::Claim)
            .db(&env.db)
            .acks(&acks_of(env, r))
            .session(HANDOFF)
            .barrier(&barrier_of(env, r, order))
            .claimant(&format!("r{r}"))
            .mutant(self.ctx.mutant())
            .to_args()
    }

    /// Spawns r0 traced and drives it to its goal, or records it to its end.
    fn trace_r0(&self, env: &TrialEnv, r0: R0, order: Order) -> Result<Traced0, Outcome> {
        let (filter, goal) = match r0 {
            R0::Traced(filter, goal) => (filter, Some(goal)),
            R0::Recorded(filter) | R0::Held(filter, _) | R0::Preempted(filter, _) => (filter, None),
            R0::Timed { target, trial } => return self.timed_r0(env, order, target, trial).map(Traced0::Killed),
            R0::Free | R0::Gone => unreachable!("only a traced r0 has a tracer"),
        };
        let stderr = env.path("racer-r0.stderr");
        let args = self.racer_args(env, 0, order);
        let launch = Launch { args: &args, home: &env.home, trial: env.dir(), stdout: None, stderr: Some(&stderr) };
        // r0 waits at its barrier while the others start: its deadline covers their start too.
        let deadline = self.ctx.deadline * 2;
        let spawned = self.ctx.child.spawn_traced(&launch, filter, deadline, &self.ctx.interrupt);
        let mut child = spawned.map_err(|e| trace_outcome(e, self.ctx))?;
        let targets = Targets::new(&env.db, &acks_of(env, 0));
        let held = match r0 {
            R0::Held(_, hold) => Some(hold.drive_held(&mut child, &targets, deadline, &self.ctx.interrupt)),
            R0::Preempted(_, preempt) => Some(preempt.drive(&mut child, &targets, deadline, &self.ctx.interrupt)),
            _ => None,
        };
        if let Some(held) = held {
            let (exit, counted) = held.map_err(|e| trace_outcome(e, self.ctx))?;
            return Ok(Traced0::Exited(exit, counted, None));
        }
        let Some(goal) = goal else {
            // The -shm at each stop: what the racers who outlive a kill there map.
            let (shm, mut wal_index) = (sibling(&env.db, "-shm"), WalIndex::default());
            return match record_seeing(&mut child, &targets, Goal::ToEnd, &mut |_| wal_index.see(&shm)) {
                Ok((Driven::Exited { exit, counted }, log)) => {
                    Ok(Traced0::Exited(exit, counted, Some((log, wal_index))))
                }
                Ok((Driven::At(p), _)) => Err(Outcome::Error(Failure::RecordingStopped(p.ordinal.0))),
                Err(e) => Err(trace_outcome(e, self.ctx)),
            };
        };
        match drive(&mut child, &targets, goal) {
            Ok(Driven::At(p)) => {
                child
                    .kill_and_reap()
                    .check()
                    .map_err(|error| Outcome::Error(Failure::RacerReap { racer: 0, error }))?;
                let mut kp = p.kill_point(TrialIndex::at(p.ordinal), 0);
                // Reaped: its journal is all it wrote. Whether it touched the
                // store is its sweep's to say (`race::sweep`), which sees both sides.
                let journal = std::fs::read(acks_of(env, 0)).unwrap_or_default();
                kp.racer = Some(RacerAt::of(0, order.path(), &journal, kp.call(), false));
                Ok(Traced0::Killed(kp))
            }
            Ok(Driven::Exited { exit, counted }) => Ok(Traced0::Exited(exit, counted, None)),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }

    /// Spawns the free racers (all of them, or all but an r0 `apart`: one
    /// its tracer spawns, or one gone), waits until each is at its barrier,
    /// releases them in `order`, calling `turn` between the two sides of an
    /// ordered race, and waits for the free ones to end. A traced r0 is at
    /// its barrier before the others start, so that its path to the
    /// barrier is its own whatever they do.
    fn release(
        &self,
        env: &TrialEnv,
        racers: u32,
        mut barriers: Barriers,
        (order, turn): (Order, &dyn Fn(Turn)),
        (apart, held): (bool, Held),
        (r0_done, clock): (&AtomicBool, &Clock),
    ) -> Result<Vec<Exit>, Outcome> {
        let first = u32::from(apart);
        let ready = |r: u32| {
            let ready = wrote_ready(env, r) || (r == 0 && apart && r0_done.load(Ordering::SeqCst));
            if ready {
                clock.racer(r, |t| _ = t.ready_ms.get_or_insert_with(|| clock.now()));
            }
            ready
        };
        if apart {
            self.wait_ready(0..1, &ready, &mut [], first)?;
        }
        let mut running = self.spawn_racers(env, first..racers, order, clock)?;
        self.wait_ready(0..racers, &ready, &mut running, first)?;
        let others = (first.max(1)..racers).collect::<Vec<_>>();
        let released = |who: &[u32]| released(clock, who);
        match order {
            Order::Together => {
                turn(Turn::Sides);
                barriers.drop_all();
                released(&(0..racers).collect::<Vec<_>>());
            }
            Order::R0First => {
                turn(Turn::R0Release);
                barriers.r0.take();
                released(&[0]);
                self.wait_r0(r0_done)?;
                turn(Turn::Sides);
                barriers.others.take();
                released(&others);
            }
            Order::R0Last => {
                barriers.others.take();
                released(&others);
            }
            Order::Preemptions => {
                let Held::Preempted(preempt) = held else { return Err(Outcome::Error(Failure::NoHold)) };
                preempt.release_r0(|| barriers.r0.take());
                released(&[0]);
                let acks: Vec<PathBuf> = others.iter().map(|&r| acks_of(env, r)).collect();
                let mut release_others = || {
                    if barriers.others.take().is_some() {
                        released(&others);
                    }
                };
                let waits = (self.ctx.deadline, &self.ctx.interrupt);
                preempt.hold_in_turn((&mut running, &acks), &mut release_others, (r0_done, clock), waits)?;
                // r0 ended before its first point: the others race for what it left.
                release_others();
            }
            Order::ReadsFirst | Order::BetweenTransactions | Order::Opener => {
                let Held::Once(hold) = held else { return Err(Outcome::Error(Failure::NoHold)) };
                hold.release_r0(|| barriers.r0.take());
                released(&[0]);
                hold.wait_held(r0_done, self.ctx.deadline, &self.ctx.interrupt)?;
                let held_from = hold.held_call().map(|_| clock.now());
                if order == Order::Opener && hold.held_call().is_some() {
                    turn(Turn::Sides);
                }
                barriers.others.take();
                released(&others);
                if order == Order::ReadsFirst {
                    hold.wait_others(&mut running, self.ctx.deadline, &self.ctx.interrupt)?;
                } else if order == Order::BetweenTransactions {
                    let acks: Vec<PathBuf> = others.iter().map(|&r| acks_of(env, r)).collect();
                    hold.wait_committed(&mut running, &acks, self.ctx.deadline, &self.ctx.interrupt)?;
                }
                hold.go();
                if let Some(from) = held_from {
                    let to = clock.now();
                    clock.racer(0, |t| t.held_ms.push((from, to)));
                }
            }
        }
        // A held r0 is let go only after the others' release and their wait (or the opener's run).
        let held = matches!(order, Order::ReadsFirst | Order::BetweenTransactions | Order::Opener | Order::Preemptions);
        let since = if held { Since::HeldGo } else { Since::Release };
        let exits = self.wait_all(&mut running, first, (clock, since))?;
        if order == Order::R0Last {
            turn(Turn::Sides);
        }
        // R0Last: r0 goes once the others have ended.
        barriers.drop_all();
        if order == Order::R0Last {
            released(&[0]);
        }
        Ok(exits)
    }
}

impl Barriers {
    /// Creates and locks the barrier files: one for all when released
    /// together, else r0's own and the others'.
    fn hold(env: &TrialEnv, order: Order) -> Result<Barriers, Outcome> {
        let lock = |path: PathBuf| {
            File::create(&path)
                .and_then(|f| f.lock().map(|()| f))
                .map_err(|e| Outcome::Error(Failure::Barrier { path: path.display().to_string(), why: e.to_string() }))
        };
        let others = Some(lock(barrier_of(env, 1, order))?);
        let r0 = if order == Order::Together { None } else { Some(lock(barrier_of(env, 0, order))?) };
        Ok(Barriers { r0, others })
    }

    fn drop_all(&mut self) {
        self.r0.take();
        self.others.take();
    }
}

/// The barrier racer `r` waits on: r0 has its own unless all go together.
pub(super) fn barrier_of(env: &TrialEnv, r: u32, order: Order) -> PathBuf {
    if r == 0 && order != Order::Together { env.path("barrier-r0.lock") } else { env.path("barrier.lock") }
}

/// A barrier's release, on the race's clock: whom it let go.
fn released(clock: &Clock, racers: &[u32]) {
    let at = clock.now();
    let who = match racers {
        [one] => format!("r{one}"),
        [first, .., last] => format!("r{first}–r{last}"),
        [] => return,
    };
    clock.with(|t| t.releases.push(Release { ms: at, who }));
    for &r in racers {
        clock.racer(r, |t| t.released_ms = Some(at));
    }
}

/// Racer `r`'s ack journal.
pub(super) fn acks_of(env: &TrialEnv, r: u32) -> PathBuf {
    env.path(&format!("acks-r{r}.ndjson"))
}

/// Each racer's end and its ack journal's last write, with the race's
/// times, into its folder: the timeline's lanes.
fn record_ends(env: &TrialEnv, clock: &Clock, finished: &Finished, racing: Racing) {
    for (r, end) in (0u32..).zip(&finished.ends) {
        let end = match end {
            End::Killed => "killed".to_string(),
            End::Exited(0) if racing != Racing::Claims => "ended".to_string(),
            End::Exited(EXIT_WON) => "won".to_string(),
            End::Exited(EXIT_LOST) => "lost".to_string(),
            End::Exited(code) => format!("exit {code}"),
        };
        let last_ack = clock.modified(&acks_of(env, r));
        clock.racer(r, |t| (t.end, t.last_ack_ms) = (Some(end), last_ack));
    }
    clock.with(|t| {
        t.kill_ms = finished.kill_point.as_ref().and(t.racers.first().and_then(|r0| r0.ended_ms));
    });
    clock.times().write(env.dir());
}

fn wrote_ready(env: &TrialEnv, r: u32) -> bool {
    std::fs::metadata(acks_of(env, r)).is_ok_and(|m| m.len() > 0)
}

/// A racer that ended on its own must have ended WON or LOST.
/// A claimant that wrote its ready record and then ended neither WON nor
/// LOST is the store's failure (a claim that cannot answer: a deferred
/// transaction's "database is locked", say); one that never wrote it broke
/// the protocol, the harness's error.
/// A writer must have ended 0, after its appends.
fn racer_end(env: &TrialEnv, r: u32, exit: Exit, racing: Racing) -> Result<End, Outcome> {
    let op = match racing {
        Racing::Claims => Op::Claim,
        Racing::Appends(_) => Op::CoAppend,
    };
    match exit {
        Exit::Code(c @ (EXIT_WON | EXIT_LOST)) if op == Op::Claim => Ok(End::Exited(c)),
        Exit::Code(0) => Ok(End::Exited(0)),
        exit => {
            let stderr = crate::harness::stderr_tail(&env.path(&format!("racer-r{r}.stderr")));
            let failure = Failure::RacerEnded { racer: r, exit, stderr };
            Err(if wrote_ready(env, r) { Outcome::store_failure(op, failure) } else { Outcome::Error(failure) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::run::context::Context;

    /// Runs `f` with a race of cell 2 on a WAL leg, its racers' folder in
    /// a work folder of its own.
    fn with_race<T>(racers: u32, f: impl FnOnce(&Race, &TrialEnv) -> T) -> T {
        let work = tempfile::tempdir().unwrap();
        let ctx = Context { work_root: work.path().to_path_buf(), ..Context::for_tests(1, None) };
        let leg = crate::matrix::Leg::new("wal", None, None);
        let spec = crate::catalog::Catalog::embedded().unwrap().find("consume-once").unwrap().clone();
        let job =
            crate::plan::Job { cell: spec, leg: Some(leg.clone()), kill: crate::plan::KillMode::Syscall, seed: 1 };
        let cell = crate::cells::find("consume-once").unwrap();
        let race = Race::new(Scope { job: &job, leg: &leg, cell, ctx: &ctx }, racers);
        let env = race.env("t").unwrap();
        f(&race, &env)
    }

    fn flag(args: &[OsString], name: &str) -> Option<String> {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).map(|v| v.to_string_lossy().into_owned())
    }

    #[test]
    fn only_r0s_losing_claim_is_sent_last() {
        assert_eq!(Order::R0Last.path(), "losing-claim");
        for order in [Order::Together, Order::R0First, Order::ReadsFirst, Order::BetweenTransactions, Order::Opener] {
            assert_eq!(order.path(), "winning-claim", "{order:?}");
        }
    }

    /// r0 waits on a barrier of its own unless all go together, and a
    /// barrier holds its racers until it is dropped.
    #[test]
    fn r0_has_its_own_barrier_unless_all_go_together() {
        with_race(3, |_, env| {
            assert_eq!(barrier_of(env, 0, Order::Together), barrier_of(env, 2, Order::Together));
            assert_ne!(barrier_of(env, 0, Order::R0First), barrier_of(env, 1, Order::R0First));
            assert_eq!(barrier_of(env, 1, Order::R0Last), barrier_of(env, 2, Order::R0Last));
            let together = Barriers::hold(env, Order::Together).unwrap();
            assert!(together.r0.is_none() && together.others.is_some());
            drop(together);
            let mut apart = Barriers::hold(env, Order::R0First).unwrap();
            let waits = |r| File::open(barrier_of(env, r, Order::R0First)).unwrap().try_lock().is_err();
            assert!(waits(0) && waits(1), "both barriers held");
            apart.r0.take();
            assert!(!waits(0) && waits(1), "r0 released alone");
            apart.drop_all();
            assert!(!waits(1));
        });
    }

    /// A claimant's arguments name its journal, its barrier and itself; a
    /// writer's its appends instead of the handoff.
    #[test]
    fn each_racer_claims_on_its_own_journal_and_barrier() {
        with_race(3, |race, env| {
            let args = race.racer_args(env, 2, Order::R0First);
            assert_eq!(args[0], "claim");
            assert_eq!(flag(&args, "--acks"), Some(acks_of(env, 2).display().to_string()));
            assert_eq!(flag(&args, "--barrier"), Some(barrier_of(env, 2, Order::R0First).display().to_string()));
            assert_eq!(flag(&args, "--claimant").as_deref(), Some("r2"));
            assert_eq!(flag(&args, "--session").as_deref(), Some(HANDOFF));
            let r0 = race.racer_args(env, 0, Order::R0First);
            assert_eq!(flag(&r0, "--barrier"), Some(env.path("barrier-r0.lock").display().to_string()));
            let writers = Race::writers(race.scope, (2, 5));
            let args = writers.racer_args(env, 1, Order::Together);
            assert_eq!((args[0].to_str(), flag(&args, "--stop-after").as_deref()), (Some("co-append"), Some("5")));
            assert_eq!(flag(&args, "--writer").as_deref(), Some("r1"));
        });
    }

    /// A finished race reads every racer r0 first, each with its journal.
    #[test]
    fn a_race_is_judged_on_every_racer_r0_first() {
        with_race(3, |race, env| {
            let ends = vec![End::Killed, End::Exited(EXIT_WON), End::Exited(EXIT_LOST)];
            let f = Finished { ends: ends.clone(), kill_point: None, r0_points: None, log: None, wal_index: None };
            let crash = race.crash(env, &f, None);
            let names: Vec<&str> = crash.ended.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(names, ["r0", "r1", "r2"]);
            assert_eq!(crash.ended.iter().map(|e| e.end).collect::<Vec<_>>(), ends);
            assert!(matches!(&crash.ended[1].acks, Acks::File(p) if *p == acks_of(env, 1)));
            assert_eq!((crash.db, crash.seed), (env.db.as_path(), 0));
        });
    }

    /// A claimant ends WON (0) or LOST, a writer 0; any other end is the
    /// store's once the racer wrote its ready record, else the harness's.
    #[test]
    fn a_racer_ends_won_lost_or_by_its_own_fault() {
        with_race(2, |_, env| {
            let claims = |code| racer_end(env, 1, Exit::Code(code), Racing::Claims);
            assert_eq!(claims(EXIT_WON).unwrap(), End::Exited(EXIT_WON));
            assert_eq!(claims(EXIT_LOST).unwrap(), End::Exited(EXIT_LOST));
            let writer = |code| racer_end(env, 1, Exit::Code(code), Racing::Appends(2));
            assert_eq!(writer(0).unwrap(), End::Exited(0));
            let early = writer(EXIT_LOST).unwrap_err();
            assert!(matches!(early, Outcome::Error(Failure::RacerEnded { racer: 1, .. })), "{early:?}");
            std::fs::write(acks_of(env, 1), "{\"ready\":true}\n").unwrap();
            assert!(matches!(claims(3).unwrap_err(), Outcome::Fire(_)), "a ready claimant's failure is the store's");
        });
    }

    /// The timeline's lanes: whom each release let go, and how each
    /// racer ended, in words.
    #[test]
    fn a_race_records_its_releases_and_ends() {
        with_race(3, |_, env| {
            let clock = Clock::start();
            released(&clock, &[1, 2]);
            released(&clock, &[0]);
            released(&clock, &[]);
            let who: Vec<String> = clock.times().releases.into_iter().map(|r| r.who).collect();
            assert_eq!(who, ["r1–r2", "r0"]);
            let ends = vec![End::Killed, End::Exited(EXIT_WON), End::Exited(3)];
            let f = Finished { ends, kill_point: None, r0_points: None, log: None, wal_index: None };
            record_ends(env, &clock, &f, Racing::Claims);
            let ended: Vec<Option<String>> = clock.times().racers.into_iter().map(|r| r.end).collect();
            assert_eq!(ended, [Some("killed".into()), Some("won".into()), Some("exit 3".into())]);
            let f = Finished { ends: vec![End::Exited(0)], ..f };
            record_ends(env, &clock, &f, Racing::Appends(1));
            assert_eq!(clock.times().racers[0].end.as_deref(), Some("ended"), "a writer's 0 is no win");
        });
    }
}
