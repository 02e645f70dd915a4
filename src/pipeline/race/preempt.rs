//! The `preemptions` schedules (issue 49, item 1): r0 preempted at a
//! bounded number (2, then 3) of its lock calls, each drawn from the
//! result's seed, as PCT draws its priority change points: a race that
//! needs r0 stopped at two or three places in order (after its second
//! commit, say, not its first) is found with a probability per depth the
//! seed, not the scheduler, decides, and is found again from the seed.
//!
//! Crash model: nothing is killed. r0 is released alone and traced at its
//! lock calls on the store's files (`fcntl` `F_SETLK`/`F_SETLKW`/`F_OFD_*`
//! on the database, its journal, the `-shm`: [`crate::kill::locks`]),
//! numbered from its release. At each drawn number it is held at the
//! call's entry (the call not yet run) while the others run: released at
//! the first hold, each then runs until it waits for a lock (asleep in a
//! busy handler, seen twice), has acked once more than when the hold began,
//! or has ended, at most [`HOLD_AT_MOST`]; then r0 goes on to its next
//! point, and at the last to its end. The points are drawn from
//! `1..=bound`, where the bound is what r0 does alone, deterministically:
//! the lock calls it made from its release to its first commit (the
//! `between-transactions` hold counts them) times the operations it makes;
//! a point past r0's last lock call is never reached, and the schedule
//! says so.
//!
//! Clause: the race's own (cell 2: one claim wins; cell 6: every acked
//! append survives once, in order), judged as every schedule's is. A
//! schedule's words say where r0 was held and what each other process did
//! meanwhile, never what the draw meant to force.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{Exit, Interrupt, Running, TraceError, Traced};
use crate::kill::locks::lock_of;
use crate::kill::syscall::{Halted, Targets, drive_until};
use crate::pipeline::outcome::{Interruption, Outcome};
use crate::pipeline::race::hold::{HOLD_AT_MOST, acks_in, grouped, wait_for_go, wait_for_hold, waiting};
use crate::times::Clock;

/// The schedules' names, by depth: a result names the one that fired.
pub const PREEMPTIONS_2: &str = "preemptions-2";
pub const PREEMPTIONS_3: &str = "preemptions-3";

/// The depths explored, in turn: PCT's bugs of depth d need d - 1 ordering
/// constraints; one hold forces one (the single-hold schedules), two and
/// three force the next.
pub const DEPTHS: [usize; 2] = [2, 3];

/// The schedule of `depth`'s name.
pub fn name(depth: usize) -> &'static str {
    if depth <= 2 { PREEMPTIONS_2 } else { PREEMPTIONS_3 }
}

/// `depth` distinct lock-call numbers of `1..=bound`, ascending, drawn
/// with `seed`: the same seed draws the same points (fewer when the bound
/// has fewer).
pub fn draw(seed: u64, depth: usize, bound: u64) -> Vec<u64> {
    let mut all: Vec<u64> = (1..=bound).collect();
    fastrand::Rng::with_seed(seed).shuffle(&mut all);
    all.truncate(depth);
    all.sort_unstable();
    all
}

/// What one other process did while r0 was held at one point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Did {
    pub waiting: bool,
    pub ended: bool,
    /// Acks it made during the hold.
    pub acked: usize,
}

/// One hold reached: the call r0 was held at (in words), what the others
/// did, and which of them were not seen settled by the deadline.
#[derive(Clone, Debug, Default)]
struct Reached {
    call: String,
    did: Vec<Did>,
    unseen: Vec<u32>,
}

/// r0's preemptions, shared by the thread that traces it and the one that
/// releases the others.
pub struct Preempt {
    depth: usize,
    points: Vec<u64>,
    bound: u64,
    /// Set just before r0's barrier is dropped: lock calls before it are
    /// its open's, not the race's.
    released: AtomicBool,
    /// The holds reached so far, in order.
    reached: Mutex<Vec<Reached>>,
    /// How many holds have been let go.
    gone: AtomicUsize,
    /// r0's lock calls after its release, once it ended.
    locks: AtomicU64,
}

impl Preempt {
    /// `depth` preemptions drawn with `seed` from `1..=bound` ([`draw`]).
    pub fn drawn(seed: u64, depth: usize, bound: u64) -> Preempt {
        Preempt::new(depth, draw(seed, depth, bound), bound)
    }

    /// A schedule of `depth` at `points` (ascending lock-call numbers of `1..=bound`).
    fn new(depth: usize, points: Vec<u64>, bound: u64) -> Preempt {
        Preempt {
            depth,
            points,
            bound,
            released: AtomicBool::new(false),
            reached: Mutex::new(Vec::new()),
            gone: AtomicUsize::new(0),
            locks: AtomicU64::new(0),
        }
    }

    pub fn schedule(&self) -> &'static str {
        name(self.depth)
    }

    /// Marks the release, then runs `drop_barrier`.
    pub fn release_r0<T>(&self, drop_barrier: impl FnOnce() -> T) {
        self.released.store(true, Ordering::SeqCst);
        drop_barrier();
    }

    fn reached_count(&self) -> usize {
        self.reached.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Lets hold `i` (and every one before it) go.
    pub fn let_go(&self, i: usize) {
        self.gone.fetch_max(i + 1, Ordering::SeqCst);
    }

    /// Lets every hold go: whatever ended the release, r0 must not wait
    /// for a go that never comes.
    pub fn let_all_go(&self) {
        self.gone.store(usize::MAX, Ordering::SeqCst);
    }

    /// Drives r0 (stopped before its barrier) through its points: at each
    /// one, held until [`Preempt::let_go`] (or `deadline`); then to its
    /// end. Its exit and the kill points it passed.
    pub fn drive(
        &self,
        child: &mut Traced,
        targets: &Targets,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<(Exit, u64), TraceError> {
        let (mut locks, mut counted) = (0u64, 0u64);
        for (i, &point) in self.points.iter().enumerate() {
            let mut call = String::new();
            let mut ask = |pid, nr, args, _: Option<&crate::kill::syscall::Point>| {
                let Some(lock) = lock_of(pid, targets, nr, args).filter(|_| self.released.load(Ordering::SeqCst))
                else {
                    return false;
                };
                locks += 1;
                call = lock.call();
                locks == point
            };
            match drive_until(child, targets, &mut ask)? {
                Halted::Exited { exit, counted: more } => {
                    self.locks.store(locks, Ordering::SeqCst);
                    return Ok((exit, counted + more));
                }
                Halted::At { counted: more } => counted += more,
            }
            if let Ok(mut r) = self.reached.lock() {
                r.push(Reached { call, ..Reached::default() });
            }
            wait_for_go(&|| self.gone.load(Ordering::SeqCst) > i, deadline, interrupt);
            child.resume()?;
        }
        // To its end, its lock calls still counted: the words say how many it made.
        let mut ask = |pid, nr, args, _: Option<&crate::kill::syscall::Point>| {
            locks += u64::from(lock_of(pid, targets, nr, args).is_some());
            false
        };
        match drive_until(child, targets, &mut ask)? {
            Halted::Exited { exit, counted: more } => {
                self.locks.store(locks, Ordering::SeqCst);
                Ok((exit, counted + more))
            }
            Halted::At { .. } => Err(TraceError::Io("stopped running to its end".to_string())),
        }
    }

    /// Waits until r0 is held at its hold `i`, or has ended (`done`):
    /// whether it is held. Gives up at `deadline`, or once `interrupt` is raised.
    pub fn wait_held(
        &self,
        i: usize,
        done: &AtomicBool,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<bool, Outcome> {
        wait_for_hold(&|| self.reached_count() > i, done, deadline, interrupt)
    }

    /// Waits, during hold `i`, until each of `running` (r1 on, their ack
    /// journals `acks`) waits for a lock (seen so on two polls in a row),
    /// has acked once more than when the hold began, or has ended; at most
    /// [`HOLD_AT_MOST`] (or `deadline`, if shorter). Keeps what each did.
    pub fn wait_settled(
        &self,
        i: usize,
        running: &mut [Running],
        acks: &[PathBuf],
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<(), Outcome> {
        let count = |r: usize| acks_in(acks.get(r));
        let before: Vec<usize> = (0..running.len()).map(count).collect();
        let mut was = vec![false; running.len()];
        let end = Instant::now() + deadline.min(HOLD_AT_MOST);
        loop {
            let mut did = Vec::with_capacity(running.len());
            for (r, child) in running.iter_mut().enumerate() {
                let ended = child.try_exit().is_some();
                let now = !ended && waiting(child.pid());
                let acked = count(r).saturating_sub(before[r]);
                did.push(Did { waiting: now && was[r], ended, acked });
                was[r] = now;
            }
            let unseen: Vec<u32> =
                (1..).zip(&did).filter(|(_, d)| !(d.waiting || d.ended || d.acked > 0)).map(|(r, _)| r).collect();
            if unseen.is_empty() || Instant::now() >= end {
                if let Some(hold) = self.reached.lock().ok().as_mut().and_then(|r| r.get_mut(i)) {
                    (hold.did, hold.unseen) = (did, unseen);
                }
                return Ok(());
            }
            if interrupt.is_set() {
                return Err(Outcome::Interrupted(Interruption::AtBarrier));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What the schedule did, for the trial's details; `what` is what each
    /// process makes (`claim`, `append`).
    pub fn said(&self, what: &str) -> String {
        let points: Vec<String> = self.points.iter().map(u64::to_string).collect();
        let drawn = format!(
            "schedule {}: r0 to be held at its lock calls {} (drawn from 1-{})",
            self.schedule(),
            points.join(", "),
            self.bound
        );
        let reached = self.reached.lock().map(|r| r.clone()).unwrap_or_default();
        let locks = self.locks.load(Ordering::SeqCst);
        let mut parts: Vec<String> = reached
            .iter()
            .zip(&self.points)
            .map(|(hold, point)| {
                let mut part = format!("at {point} ({}) while {}", hold.call, others_did(&hold.did, what));
                if !hold.unseen.is_empty() {
                    let unseen: Vec<String> = hold.unseen.iter().map(|r| format!("r{r}")).collect();
                    part.push_str(&format!(", let go at the deadline with {} still running", unseen.join(", ")));
                }
                part
            })
            .collect();
        if reached.is_empty() {
            return format!("{drawn}: it made {locks} lock calls after its barrier, so nothing was held");
        }
        if reached.len() < self.points.len() {
            let missed: Vec<String> = self.points[reached.len()..].iter().map(u64::to_string).collect();
            parts.push(format!("not at {} (it made {locks} lock calls after its barrier)", missed.join(", ")));
        }
        format!("{drawn}: held {}; then let go", parts.join("; "))
    }
}

impl Preempt {
    /// The release of a `preemptions` schedule, r0 released: at each of
    /// its holds, the others released (the first time, `release_others`)
    /// and waited for until each settles, then r0 let go; each hold a box
    /// on r0's lane of the timeline. Ends when r0 ended or passed its last
    /// point; every wait bounded by `deadline` and cut short by `interrupt`.
    pub fn hold_in_turn(
        &self,
        (running, acks): (&mut [Running], &[PathBuf]),
        release_others: &mut dyn FnMut(),
        (r0_done, clock): (&AtomicBool, &Clock),
        (deadline, interrupt): (Duration, &Interrupt),
    ) -> Result<(), Outcome> {
        for i in 0..self.points.len() {
            if !self.wait_held(i, r0_done, deadline, interrupt)? {
                break;
            }
            let from = clock.now();
            release_others();
            self.wait_settled(i, running, acks, deadline, interrupt)?;
            self.let_go(i);
            let to = clock.now();
            clock.racer(0, |t| t.held_ms.push((from, to)));
        }
        Ok(())
    }
}

/// What the others did during one hold, grouped: `r1 waited for a lock
/// and r2 acked 1 append`.
fn others_did(did: &[Did], what: &str) -> String {
    grouped(did.iter().map(|d| match d {
        Did { acked: 1.., .. } if what == "claim" => "claimed".to_string(),
        Did { acked: n @ 1.., .. } => format!("acked {n} {what}{}", if *n == 1 { "" } else { "s" }),
        Did { waiting: true, .. } => "waited for a lock".to_string(),
        Did { ended: true, .. } => "ended".to_string(),
        _ => "neither waited, acked nor ended".to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draw_is_the_seeds_distinct_ascending_and_within_its_bound() {
        let a = draw(7, 3, 40);
        assert_eq!(a, draw(7, 3, 40), "the same seed draws the same points");
        assert_eq!(a.len(), 3);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|p| (1..=40).contains(p)));
        assert_ne!((1..20).map(|s| draw(s, 2, 40)).collect::<std::collections::HashSet<_>>().len(), 1);
        assert_eq!(draw(7, 3, 2), [1, 2], "a bound smaller than the depth draws every point");
        assert!(draw(7, 2, 0).is_empty());
        assert_eq!((name(2), name(3)), (PREEMPTIONS_2, PREEMPTIONS_3));
    }

    #[test]
    fn the_words_say_where_r0_was_held_what_the_others_did_and_what_was_not_reached() {
        let p = Preempt::new(2, vec![3, 9], 12);
        assert_eq!(
            p.said("append"),
            "schedule preemptions-2: r0 to be held at its lock calls 3, 9 (drawn from 1-12): it made 0 lock calls \
             after its barrier, so nothing was held"
        );
        let waited = Did { waiting: true, ..Did::default() };
        p.reached.lock().unwrap().push(Reached {
            call: "fcntl database write lock at 1073741825 length 1".into(),
            did: vec![waited],
            unseen: vec![],
        });
        p.locks.store(7, Ordering::SeqCst);
        assert_eq!(
            p.said("append"),
            "schedule preemptions-2: r0 to be held at its lock calls 3, 9 (drawn from 1-12): held at 3 (fcntl \
             database write lock at 1073741825 length 1) while r1 waited for a lock; not at 9 (it made 7 lock \
             calls after its barrier); then let go"
        );
        p.reached.lock().unwrap().push(Reached {
            call: "fcntl -shm unlock at 120 length 1".into(),
            did: vec![Did { acked: 2, ..Did::default() }, Did::default()],
            unseen: vec![2],
        });
        let said = p.said("append");
        assert!(
            said.contains("at 9 (fcntl -shm unlock at 120 length 1) while r1 acked 2 appends and r2 neither"),
            "{said}"
        );
        assert!(said.contains("let go at the deadline with r2 still running"), "{said}");
    }

    #[test]
    fn a_hold_is_let_go_in_turn_and_all_at_once() {
        let p = Preempt::new(2, vec![1, 2], 4);
        p.let_go(0);
        assert_eq!(p.gone.load(Ordering::SeqCst), 1);
        p.let_go(0);
        assert_eq!(p.gone.load(Ordering::SeqCst), 1, "idempotent");
        p.let_all_go();
        assert!(p.gone.load(Ordering::SeqCst) > 2);
    }

    #[test]
    fn a_wait_for_a_hold_ends_when_r0_has_ended_or_the_run_is_interrupted() {
        let p = Preempt::new(2, vec![1], 1);
        let (done, interrupt) = (AtomicBool::new(true), Interrupt::new());
        assert!(matches!(p.wait_held(0, &done, Duration::from_secs(5), &interrupt), Ok(false)));
        done.store(false, Ordering::SeqCst);
        interrupt.raise(libc::SIGINT);
        let waited = p.wait_held(0, &done, Duration::from_secs(60), &interrupt);
        assert!(matches!(waited, Err(Outcome::Interrupted(Interruption::WaitingForR0))), "{waited:?}");
    }
}
