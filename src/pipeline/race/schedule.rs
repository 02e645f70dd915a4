//! Controlled schedules for a race (issue 40, item 1; issue 49): a claim
//! that checks and then acts outside one transaction, an append that reads
//! in one transaction and writes in the next, or an open that repairs
//! beside a live writer is seen by construction, not when the scheduler
//! happens to overlap the processes.
//!
//! Crash model: nothing is killed. Under syscall tracing r0 is released
//! alone and stopped at the entry of its first file-mutating call after its
//! barrier, the first write of its claim: its read is done, its write not
//! begun, and (SQLite) it holds the write lock. The others are then
//! released and run until each one waits for that lock (stopped in a
//! sleep: the busy handler's) or has ended; only then does r0 go on. So
//! every claim's read comes before any claim's write (`reads-first`): a
//! store that reads `pending` and writes `running` without the predicate
//! lets every racer win, whatever the machine's load.
//!
//! `between-transactions` (issue 49) holds r0 instead just after its first
//! commit past its barrier: at its first call once it has let go of the
//! write lock and of every lock a writer waits for (its lock calls are
//! traced, [`crate::kill::locks`]). The others then run until each has
//! acked (it took the write lock and let go of it) or ended. A store that
//! reads in one transaction and writes what it read in the next is seen:
//! the others' writes land between r0's two transactions. The `opener`
//! schedule ([`crate::pipeline::race::opener`]) holds a writer the same
//! way while a fresh process opens the store and dumps it. Last, the
//! `preemptions` schedules ([`crate::pipeline::race::preempt`]) hold r0 at
//! 2, then 3, of its lock calls drawn from the seed, their bound the lock
//! calls the between-transactions hold counted.
//!
//! Clause: the race's own (cell 2): at most one racer wins, the handoff is
//! claimed exactly once. The free races stay beside this schedule: they
//! sample contention as a whole.
//!
//! The hold itself is not the race's (`race::hold`): a cell with two
//! writers can use it too.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::kill::TrialIndex;
use crate::kill::syscall::lock_trap_set;
use crate::pipeline::judge::census::{Filter, preflight};
use crate::pipeline::judge::coverage::Coverage;
use crate::pipeline::judge::pending::Pending;
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::race::hold::Hold;
use crate::pipeline::race::job::{Order, R0, Race, Racing};
use crate::pipeline::race::preempt::{DEPTHS, Preempt, name};
use crate::pipeline::trial::Trial;

/// One controlled schedule of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Schedule {
    ReadsFirst,
    BetweenTransactions,
    /// A fresh process opens the store beside the held writer (cell 6 only).
    Opener,
    /// r0 held at this many lock calls drawn from the seed
    /// ([`crate::pipeline::race::preempt`]).
    Preemptions(usize),
}

impl Race<'_> {
    /// The race's controlled schedules, each a trial judged as a free race
    /// is, in turn up to the first that does not pass: `reads-first`, then
    /// `between-transactions`, then (writers) `opener`, then
    /// `preemptions-2` and `preemptions-3`, each as trial 0 (a sweep's
    /// points start at 1); and what each schedule's hold did, as data for
    /// [`noted`].
    pub fn scheduled(&self) -> (Vec<Trial>, Vec<String>) {
        let mut schedules = vec![Schedule::ReadsFirst, Schedule::BetweenTransactions];
        if matches!(self.racing, Racing::Appends(_)) {
            schedules.push(Schedule::Opener);
        }
        schedules.extend(DEPTHS.map(Schedule::Preemptions));
        let (mut said, mut last) = (Vec::new(), Vec::new());
        // The preemptions' bound: what r0 does alone, as the between-transactions hold counted it.
        let solo = AtomicU64::new(0);
        for schedule in schedules {
            if matches!(schedule, Schedule::Preemptions(_)) && solo.load(Ordering::SeqCst) == 0 {
                // Nothing to draw from: r0 never let go of the write lock
                // alone (the between-transactions words say so).
                break;
            }
            let words = Mutex::new(Vec::new());
            let trials = self.trials(None, &[TrialIndex::CENSUS], &|i| self.schedule(schedule, i, (&words, &solo)));
            said.extend(words.into_inner().unwrap_or_default());
            let bad = trials.iter().any(Trial::is_bad);
            last = trials;
            if bad {
                break;
            }
        }
        (last, said)
    }

    fn schedule(
        &self,
        schedule: Schedule,
        index: TrialIndex,
        (said, solo): (&Mutex<Vec<String>>, &AtomicU64),
    ) -> Pending {
        // Only a hold between transactions needs the lock calls.
        let filter = match schedule {
            Schedule::ReadsFirst => preflight(),
            _ => preflight().and_then(|_| lock_trap_set().map_err(|why| Outcome::Error(Failure::Filter(why)))),
        };
        match (schedule, filter) {
            (_, Err(o)) => Pending::ended(Trial::ended(index, o)),
            (Schedule::Opener, Ok(filter)) => self.opener(filter, index, said),
            (Schedule::Preemptions(depth), Ok(filter)) => {
                self.preemptions(filter, index, (depth, solo.load(Ordering::SeqCst)), said)
            }
            (_, Ok(filter)) => {
                let pending = self.held(schedule, filter, index, said);
                if let Some(locks) = pending.1 {
                    solo.store(locks, Ordering::SeqCst);
                }
                pending.0
            }
        }
    }

    /// `reads-first` or `between-transactions`: r0 held, the others released.
    /// With the lock calls r0 made alone to its hold, when held between transactions.
    fn held(
        &self,
        schedule: Schedule,
        filter: Filter,
        index: TrialIndex,
        said: &Mutex<Vec<String>>,
    ) -> (Pending, Option<u64>) {
        let (hold, order) = match schedule {
            Schedule::ReadsFirst => (Hold::default(), Order::ReadsFirst),
            _ => (Hold::after_commit(), Order::BetweenTransactions),
        };
        let env = match self.env(hold.schedule()) {
            Ok(env) => env,
            Err(f) => return (Pending::ended(Trial::ended(index, Outcome::Error(f))), None),
        };
        let mut trial = Trial::new(index);
        trial.schedule = Some(hold.schedule());
        let raced = self.run(&env, self.racers, R0::Held(filter, &hold), order);
        let held = hold.said(self.what());
        said.lock().expect("no schedule panics holding its words").push(held.clone());
        trial.details.push(held);
        let prepared = raced.and_then(|f| prepare(&self.crash(&env, &f, None), &mut trial));
        let solo = (order == Order::BetweenTransactions).then(|| hold.solo_locks());
        (Pending::prepared(trial, env, prepared), solo)
    }

    /// A `preemptions` schedule of `depth`: r0 held at `depth` of its lock
    /// calls drawn from the seed over `solo` (what it does alone to its
    /// first commit) times the operations it makes.
    fn preemptions(
        &self,
        filter: Filter,
        index: TrialIndex,
        (depth, solo): (usize, u64),
        said: &Mutex<Vec<String>>,
    ) -> Pending {
        let ops = match self.racing {
            Racing::Claims => 1,
            Racing::Appends(n) => n.max(1),
        };
        let bound = solo.saturating_mul(ops);
        let seed = crate::seed::derive(self.job.seed, &[name(depth)]);
        let preempt = Preempt::drawn(seed, depth, bound);
        let env = match self.env(preempt.schedule()) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        trial.schedule = Some(preempt.schedule());
        // A claim's race is preempted among as few racers as its recorded
        // sweep races: two others to run at each hold, at a third of the cost.
        let racers = match self.racing {
            Racing::Claims => self.racers.min(self.job.cell.params.sweep_racers()),
            Racing::Appends(_) => self.racers,
        };
        let raced = self.run(&env, racers, R0::Preempted(filter, &preempt), Order::Preemptions);
        let words = preempt.said(self.what());
        said.lock().expect("no schedule panics holding its words").push(words.clone());
        trial.details.push(words);
        let prepared = raced.and_then(|f| prepare(&self.crash(&env, &f, None), &mut trial));
        Pending::prepared(trial, env, prepared)
    }

    /// What each racer makes, in a schedule's words.
    pub(super) fn what(&self) -> &'static str {
        if self.racing == Racing::Claims { "claim" } else { "append" }
    }
}

/// A sweep's trials after schedules that passed: a passing result says, in
/// its details, which schedules it passed too (`said`, as each schedule
/// made it: no detail is looked for by its text).
pub fn noted(
    said: &[String],
    (mut trials, coverage): (Vec<Trial>, Option<Coverage>),
) -> (Vec<Trial>, Option<Coverage>) {
    if let Some(last) = trials.last_mut().filter(|t| !t.is_bad()) {
        last.details.extend(said.iter().map(|d| format!("passed {d}")));
    }
    (trials, coverage)
}
