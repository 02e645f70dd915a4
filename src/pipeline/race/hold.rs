//! The hold under a controlled schedule: one traced process stopped after
//! its release, either at the entry of its first file-mutating call
//! (`reads-first`: held inside its write transaction, until every other
//! process of the schedule waits, asleep in a busy handler, or has ended),
//! or just after it let go of the write lock, between two of its
//! transactions (`between-transactions`, issue 49: held where it keeps no
//! lock a writer waits for, [`crate::kill::locks`], until every other
//! process has acked, so taken and let go of the write lock, or ended).
//!
//! Crash model: nothing is killed; the held call is made whole once the
//! hold lets go. Clause: none of its own: the schedule that uses it judges
//! (cell 2's race, `schedule`). It is not the race's: a cell with two
//! writers can hold writer A at its append's first write while writer B
//! reads its next position.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{Exit, Interrupt, POLL, Running, TraceError, Traced};
use crate::kill::locks::{Event, Tracker, lock_of};
use crate::kill::syscall::{Driven, Goal, Halted, Targets, drive, drive_asking, drive_until, syscall_name};
use crate::pipeline::outcome::{Failure, Interruption, Outcome, R0Wait};

/// The schedules' names, as a result says which one fired.
pub const READS_FIRST: &str = "reads-first";
pub const BETWEEN_TRANSACTIONS: &str = "between-transactions";
/// Cell 6's writer held the same way while a fresh process opens the store
/// ([`crate::pipeline::race::opener`]).
pub const OPENER: &str = "opener";

/// Where the held process is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HoldAt {
    /// At the entry of its first file-mutating call after its release.
    #[default]
    FirstWrite,
    /// At its first call after it let go of the write lock (after its
    /// release) and of every lock a writer waits for.
    AfterCommit,
}

/// Where a drive to the hold left the process: held at a call (in words),
/// or ended; with the points it passed.
enum Reached {
    At(String, u64),
    Ended(Exit, u64),
}

/// What one other process did while the held one was held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Waiting for a lock (asleep in a busy handler) when let go.
    pub waiting: bool,
    pub ended: bool,
    /// Acks its journal gained during the hold.
    pub acked: usize,
}

/// The longest the others are waited for while the held process keeps the
/// write lock: well under the busy timeouts stores set (Python's default
/// and the examples' are 5 s), so that the hold never makes a waiting store
/// give up on the lock (a failure the store did not make).
pub const HOLD_AT_MOST: Duration = Duration::from_millis(2500);

/// One process held at its first write after its release, shared by the
/// thread that traces it and the one that releases the others.
#[derive(Default)]
pub struct Hold {
    kind: HoldAt,
    /// Set just before the held process's barrier is dropped: a write seen
    /// before it was made on the way to the barrier.
    released: AtomicBool,
    /// The call it is held at, once it is.
    at: Mutex<Option<String>>,
    /// Set when it may go on.
    go: AtomicBool,
    /// The released processes not seen waiting (or acking) or ended before the deadline.
    unseen: Mutex<Vec<u32>>,
    /// What each other process (r1 on) did, once the hold let go.
    seen: Mutex<Vec<Seen>>,
    /// The lock calls it made alone, from its release to where it was held
    /// after its first commit: the bound the `preemptions` schedules draw
    /// from ([`crate::pipeline::race::preempt`]).
    solo_locks: AtomicU64,
}

impl Hold {
    /// A hold at the first call after the process's first commit past its release.
    pub fn after_commit() -> Hold {
        Hold { kind: HoldAt::AfterCommit, ..Hold::default() }
    }

    /// The schedule this hold makes.
    pub fn schedule(&self) -> &'static str {
        match self.kind {
            HoldAt::FirstWrite => READS_FIRST,
            HoldAt::AfterCommit => BETWEEN_TRANSACTIONS,
        }
    }

    /// Marks the release, then runs `drop_barrier`.
    pub fn release_r0<T>(&self, drop_barrier: impl FnOnce() -> T) {
        self.released.store(true, Ordering::SeqCst);
        drop_barrier();
    }

    /// Lets the held process go on (idempotent).
    pub fn go(&self) {
        self.go.store(true, Ordering::SeqCst);
    }

    /// The lock calls it made alone, from its release to its hold after
    /// its first commit (0 for a hold at the first write, or none reached).
    pub fn solo_locks(&self) -> u64 {
        self.solo_locks.load(Ordering::SeqCst)
    }

    /// The call the held process was held at, in words, once it was.
    pub fn held_call(&self) -> Option<String> {
        self.held_at()
    }

    fn held_at(&self) -> Option<String> {
        self.at.lock().map(|a| a.clone()).unwrap_or(None)
    }

    /// Drives `child` to its first counted call after the release, holds it
    /// there until [`Hold::go`] (or `deadline`), then to its end: its exit
    /// and how many points it passed.
    pub fn drive_held(
        &self,
        child: &mut Traced,
        targets: &Targets,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<(Exit, u64), TraceError> {
        let (call, counted) = match self.kind {
            HoldAt::FirstWrite => {
                let mut ask = |_, _, _, p: Option<&_>| p.is_some() && self.released.load(Ordering::SeqCst);
                match drive_asking(child, targets, &mut ask)? {
                    Driven::Exited { exit, counted } => return Ok((exit, counted)),
                    Driven::At(p) => (p.call(), p.ordinal.0),
                }
            }
            HoldAt::AfterCommit => match self.drive_to_commit(child, targets)? {
                Reached::Ended(exit, counted) => return Ok((exit, counted)),
                Reached::At(call, counted) => (call, counted),
            },
        };
        if let Ok(mut at) = self.at.lock() {
            *at = Some(call);
        }
        wait_for_go(&|| self.go.load(Ordering::SeqCst), deadline, interrupt);
        child.resume()?;
        match drive(child, targets, Goal::ToEnd)? {
            Driven::Exited { exit, counted: rest } => Ok((exit, counted + rest)),
            Driven::At(q) => Err(TraceError::Io(format!("stopped at {} running to its end", q.call()))),
        }
    }

    /// Drives `child` to its first call, after its release, at which it has
    /// let go of the write lock and holds none a writer waits for: that
    /// call (not run) in words and the points passed; or its end.
    fn drive_to_commit(&self, child: &mut Traced, targets: &Targets) -> Result<Reached, TraceError> {
        let (mut locks, mut committed, mut call) = (Tracker::default(), false, String::new());
        let mut solo = 0;
        let mut ask = |pid, nr, args, p: Option<&crate::kill::syscall::Point>| {
            let lock = lock_of(pid, targets, nr, args);
            solo += u64::from(lock.is_some() && self.released.load(Ordering::SeqCst));
            if committed && locks.quiet() {
                self.solo_locks.store(solo, Ordering::SeqCst);
                call = match (p, lock) {
                    (Some(p), _) => p.call(),
                    (None, Some(l)) => l.call(),
                    (None, None) => syscall_name(nr).unwrap_or("a call").to_string(),
                };
                return true;
            }
            // The locks it takes on its way to the barrier count: its open may leave one held.
            let event = lock.and_then(|l| locks.see(&l));
            committed |= event == Some(Event::ReleasedWrite) && self.released.load(Ordering::SeqCst);
            false
        };
        Ok(match drive_until(child, targets, &mut ask)? {
            Halted::Exited { exit, counted } => Reached::Ended(exit, counted),
            Halted::At { counted } => Reached::At(call, counted),
        })
    }

    /// Waits until the held process is held, or has ended (`done`); gives
    /// up at `deadline`, or once `interrupt` is raised.
    pub fn wait_held(&self, done: &AtomicBool, deadline: Duration, interrupt: &Interrupt) -> Result<(), Outcome> {
        wait_for_hold(&|| self.held_at().is_some(), done, deadline, interrupt).map(drop)
    }

    /// Waits until each of `running` (r1 on) waits for a lock or has ended,
    /// at most [`HOLD_AT_MOST`] (or `deadline`, if shorter). Those not seen
    /// waiting by then are noted, not an error: the schedule then was not
    /// reached for them, and the result says so. An interrupt (`interrupt`
    /// raised) ends the wait as interrupted.
    pub fn wait_others(
        &self,
        running: &mut [Running],
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<(), Outcome> {
        // A process counts as waiting when seen so on two polls in a row: a
        // runtime's threads may all block for a moment between two steps.
        let mut was = vec![false; running.len()];
        self.wait_each(running, (deadline, interrupt), &mut |i, c: &mut Running| {
            let ended = c.try_exit().is_some();
            let now = ended || waiting(c.pid());
            let counted = now && was[i];
            was[i] = now;
            (counted, Seen { waiting: counted && !ended, ended, acked: 0 })
        })
    }

    /// Waits until each of `running` (r1 on) has acked (its journal, of
    /// `acks`, holds an ack: it took and let go of the write lock) or has
    /// ended, at most [`HOLD_AT_MOST`] (or `deadline`, if shorter); the
    /// between-transactions schedule's wait. They were released once r0
    /// was held, so every ack they hold was made during the hold; and r0
    /// keeps no lock they wait for, so none of them waits on it.
    pub fn wait_committed(
        &self,
        running: &mut [Running],
        acks: &[std::path::PathBuf],
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<(), Outcome> {
        let count = |i: usize| acks_in(acks.get(i));
        self.wait_each(running, (deadline, interrupt), &mut |i, c: &mut Running| {
            let ended = c.try_exit().is_some();
            let acked = count(i);
            (ended || acked > 0, Seen { waiting: false, ended, acked })
        })
    }

    /// Polls `done` on each of `running` (its index, its process) until
    /// every one is done or the hold's deadline passes; keeps what each
    /// did and which were not done. An interrupt ends it as interrupted.
    fn wait_each(
        &self,
        running: &mut [Running],
        (deadline, interrupt): (Duration, &Interrupt),
        done: &mut dyn FnMut(usize, &mut Running) -> (bool, Seen),
    ) -> Result<(), Outcome> {
        let end = Instant::now() + deadline.min(HOLD_AT_MOST);
        loop {
            let polled: Vec<(bool, Seen)> = running.iter_mut().enumerate().map(|(i, c)| done(i, c)).collect();
            let unseen: Vec<u32> = (1..).zip(&polled).filter(|(_, (d, _))| !d).map(|(r, _)| r).collect();
            if unseen.is_empty() || Instant::now() >= end {
                if let (Ok(mut u), Ok(mut s)) = (self.unseen.lock(), self.seen.lock()) {
                    *u = unseen;
                    *s = polled.into_iter().map(|(_, seen)| seen).collect();
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
    /// process makes (`claim`, `append`). It says what happened (who waited,
    /// who acked, who ended), never what the schedule meant to force.
    pub fn said(&self, what: &str) -> String {
        let name = self.schedule();
        let unseen = self.unseen.lock().map(|u| u.clone()).unwrap_or_default();
        let seen = self.seen.lock().map(|s| s.clone()).unwrap_or_default();
        let where_ = match self.kind {
            HoldAt::FirstWrite => format!("at its {what}'s first write"),
            HoldAt::AfterCommit => "after its first commit past its barrier".to_string(),
        };
        let Some(at) = self.held_at() else {
            let none = match self.kind {
                HoldAt::FirstWrite => "made no write after its barrier",
                HoldAt::AfterCommit => "let go of no write lock after its barrier (or kept a lock writers wait for)",
            };
            return format!("schedule {name}: r0's {what} {none}, so nothing was held");
        };
        let did = others_did(&seen, what, self.kind);
        if unseen.is_empty() {
            let meant = match self.kind {
                HoldAt::FirstWrite => String::new(),
                HoldAt::AfterCommit => ", r0 between two of its transactions".to_string(),
            };
            format!("schedule {name}: r0 held {where_} ({at}) while {did}{meant}, then let go")
        } else {
            let unseen: Vec<String> = unseen.iter().map(|r| format!("r{r}")).collect();
            let not = match self.kind {
                HoldAt::FirstWrite => "not seen waiting",
                HoldAt::AfterCommit => "neither seen acking nor ended",
            };
            format!(
                "schedule {name}: r0 held {where_} ({at}) while {did}; let go at the deadline with {} {not}: the \
                 schedule was not reached for them",
                unseen.join(", ")
            )
        }
    }
}

/// Waits until a traced process is `held`, or has ended (`done`): whether
/// it is held. Gives up at `deadline`, or once `interrupt` is raised.
pub(super) fn wait_for_hold(
    held: &dyn Fn() -> bool,
    done: &AtomicBool,
    deadline: Duration,
    interrupt: &Interrupt,
) -> Result<bool, Outcome> {
    let end = Instant::now() + deadline;
    loop {
        if held() {
            return Ok(true);
        }
        if done.load(Ordering::SeqCst) {
            return Ok(false);
        }
        if interrupt.is_set() {
            return Err(Outcome::Interrupted(Interruption::WaitingForR0));
        }
        if Instant::now() >= end {
            return Err(Outcome::Error(Failure::R0Deadline { deadline, waited: R0Wait::Held }));
        }
        std::thread::sleep(POLL);
    }
}

/// The held process's side of a hold: waits until it may `go` on, at most
/// `deadline`, or until `interrupt` is raised (it then goes on, to be
/// reaped with the run).
pub(super) fn wait_for_go(go: &dyn Fn() -> bool, deadline: Duration, interrupt: &Interrupt) {
    let end = Instant::now() + deadline;
    while !go() && Instant::now() < end && !interrupt.is_set() {
        std::thread::sleep(POLL);
    }
}

/// The acks an ack journal holds (0 for none, or one not readable yet).
pub(super) fn acks_in(journal: Option<&std::path::PathBuf>) -> usize {
    let bytes = journal.and_then(|p| std::fs::read(p).ok()).unwrap_or_default();
    crate::journal::parse(&bytes).map_or(0, |j| j.acks.len())
}

/// What the other processes did during a hold, grouped: `r1-r5 waited for
/// the write lock and r6, r7 ended`, or `r1 read and wrote (acked 1 append)`.
fn others_did(seen: &[Seen], what: &str, kind: HoldAt) -> String {
    grouped(seen.iter().map(|s| match kind {
        HoldAt::FirstWrite if s.waiting => "waited for the write lock".to_string(),
        HoldAt::FirstWrite if s.ended => "ended".to_string(),
        HoldAt::FirstWrite => "neither waited nor ended".to_string(),
        HoldAt::AfterCommit if s.acked > 0 && what == "claim" => "claimed (its claim acked)".to_string(),
        HoldAt::AfterCommit if s.acked > 0 => {
            let plural = if s.acked == 1 { "" } else { "s" };
            format!("read and wrote (acked {} {what}{plural})", s.acked)
        }
        HoldAt::AfterCommit if s.ended => format!("ended without acking a {what}"),
        HoldAt::AfterCommit => format!("acked no {what}"),
    }))
}

/// Each other process's phrase (r1's first), grouped by phrase in the
/// order first met: `r1-r5 waited for the write lock and r6, r7 ended`.
pub(super) fn grouped(phrases: impl Iterator<Item = String>) -> String {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for (r, phrase) in (1..).zip(phrases) {
        match groups.iter_mut().find(|(p, _)| *p == phrase) {
            Some((_, rs)) => rs.push(r),
            None => groups.push((phrase, vec![r])),
        }
    }
    let named = |rs: &[u32]| match rs {
        [one] => format!("r{one}"),
        [first, .., last] if (last - first) as usize + 1 == rs.len() => format!("r{first}-r{last}"),
        _ => rs.iter().map(|r| format!("r{r}")).collect::<Vec<_>>().join(", "),
    };
    let parts: Vec<String> = groups.iter().map(|(p, rs)| format!("{} {p}", named(rs))).collect();
    if parts.is_empty() { "no other process ran".to_string() } else { parts.join(" and ") }
}

/// Whether process `pid` waits in SQLite's busy handler, which sleeps
/// between its tries for a lock another holds: every thread is blocked
/// (asleep, or parked on a futex or a poll) and one of them sleeps. Every
/// thread, not the main one alone: a Go store's SQLite call runs on a
/// thread of the runtime's choosing. Unreadable (gone, or not ours) is not
/// waiting.
pub(super) fn waiting(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    let mut slept = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("syscall")) else { return false };
        match call_of(&text) {
            Some(Call::Sleep) => slept = true,
            Some(Call::Parked) => {}
            None => return false,
        }
    }
    slept
}

enum Call {
    Sleep,
    Parked,
}

/// What `/proc/PID/task/TID/syscall`'s first field says the thread is
/// blocked in: a sleep, a park (futex, poll, epoll), or neither (running,
/// or any other call).
fn call_of(text: &str) -> Option<Call> {
    let nr = text.split_whitespace().next().and_then(|n| n.parse::<i64>().ok())?;
    if nr == libc::SYS_nanosleep || nr == libc::SYS_clock_nanosleep {
        return Some(Call::Sleep);
    }
    let parked = [
        libc::SYS_futex,
        libc::SYS_epoll_wait,
        libc::SYS_epoll_pwait,
        libc::SYS_poll,
        libc::SYS_ppoll,
        libc::SYS_select,
        libc::SYS_pselect6,
        libc::SYS_rt_sigtimedwait,
    ];
    parked.contains(&nr).then_some(Call::Parked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_waits_a_park_may_and_anything_else_does_not() {
        let line = |nr: i64| format!("{nr} 0x0 0x7ffc 0x0 0x0 0x0 0x0 0x7ffc 0x7f00");
        assert!(matches!(call_of(&line(libc::SYS_clock_nanosleep)), Some(Call::Sleep)));
        assert!(matches!(call_of(&line(libc::SYS_futex)), Some(Call::Parked)));
        assert!(call_of(&line(libc::SYS_read)).is_none());
        assert!(call_of(&line(libc::SYS_flock)).is_none(), "a racer at its barrier is not waiting");
        assert!(call_of("running").is_none());
        assert!(call_of("").is_none());
    }

    #[test]
    fn this_process_running_its_test_is_not_waiting() {
        assert!(!waiting(std::process::id()));
    }

    #[test]
    fn the_schedule_says_who_waited_who_ended_and_who_was_not_seen_waiting() {
        let hold = Hold::default();
        assert!(hold.said("claim").contains("made no write"));
        *hold.at.lock().unwrap() = Some("pwrite64 journal".into());
        let waited = Seen { waiting: true, ..Seen::default() };
        let ended = Seen { ended: true, ..Seen::default() };
        *hold.seen.lock().unwrap() = vec![waited, waited, waited, waited, waited, ended, ended];
        assert_eq!(
            hold.said("claim"),
            "schedule reads-first: r0 held at its claim's first write (pwrite64 journal) while r1-r5 waited for \
             the write lock and r6-r7 ended, then let go"
        );
        *hold.unseen.lock().unwrap() = vec![3, 5];
        assert!(hold.said("claim").contains("with r3, r5 not seen waiting"));
    }

    #[test]
    fn between_transactions_says_what_the_others_did_while_r0_was_held() {
        let hold = Hold::after_commit();
        assert!(hold.said("append").starts_with("schedule between-transactions: r0's append let go of no write"));
        *hold.at.lock().unwrap() = Some("fcntl database read lock at 1073741824 length 1".into());
        *hold.seen.lock().unwrap() = vec![Seen { acked: 1, ..Seen::default() }];
        assert_eq!(
            hold.said("append"),
            "schedule between-transactions: r0 held after its first commit past its barrier (fcntl database read \
             lock at 1073741824 length 1) while r1 read and wrote (acked 1 append), r0 between two of its \
             transactions, then let go"
        );
        *hold.seen.lock().unwrap() = vec![Seen::default()];
        *hold.unseen.lock().unwrap() = vec![1];
        assert!(hold.said("append").contains("r1 acked no append; let go at the deadline with r1 neither"));
    }

    /// A fresh token leaves the wait for the held process to its deadline;
    /// the run's token raised by hand (no signal) ends it at once, as
    /// interrupted, however long its deadline.
    #[test]
    fn a_hold_whose_run_is_interrupted_stops_waiting_at_once() {
        let (hold, done, interrupt) = (Hold::default(), AtomicBool::new(false), Interrupt::new());
        let waited = hold.wait_held(&done, Duration::from_millis(30), &interrupt);
        assert!(matches!(waited, Err(Outcome::Error(Failure::R0Deadline { .. }))), "{waited:?}");
        interrupt.raise(libc::SIGINT);
        let started = Instant::now();
        let waited = hold.wait_held(&done, Duration::from_secs(60), &interrupt);
        assert!(matches!(waited, Err(Outcome::Interrupted(Interruption::WaitingForR0))), "{waited:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
