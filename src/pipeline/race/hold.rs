//! The hold under a controlled schedule: one traced process stopped at the
//! entry of its first file-mutating call after its release, and held there
//! until every other process of the schedule waits (asleep in a busy
//! handler) or has ended.
//!
//! Crash model: nothing is killed; the held call is made whole once the
//! hold lets go. Clause: none of its own: the schedule that uses it judges
//! (cell 2's race, `schedule`). It is not the race's: a cell with two
//! writers can hold writer A at its append's first write while writer B
//! reads its next position.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{Exit, POLL, Running, TraceError, Traced, interrupted};
use crate::kill::syscall::{Driven, Goal, Targets, drive, drive_asking};
use crate::pipeline::outcome::{Failure, Interruption, Outcome, R0Wait};

/// The schedule's name, as a result says which one fired.
pub const READS_FIRST: &str = "reads-first";

/// The longest the others are waited for while the held process keeps the
/// write lock: well under the busy timeouts stores set (Python's default
/// and the examples' are 5 s), so that the hold never makes a waiting store
/// give up on the lock (a failure the store did not make).
pub const HOLD_AT_MOST: Duration = Duration::from_millis(2500);

/// One process held at its first write after its release, shared by the
/// thread that traces it and the one that releases the others.
#[derive(Default)]
pub struct Hold {
    /// Set just before the held process's barrier is dropped: a write seen
    /// before it was made on the way to the barrier.
    released: AtomicBool,
    /// The call it is held at, once it is.
    at: Mutex<Option<String>>,
    /// Set when it may go on.
    go: AtomicBool,
    /// The released processes not seen waiting or ended before the deadline.
    unseen: Mutex<Vec<u32>>,
}

impl Hold {
    /// Marks the release, then runs `drop_barrier`.
    pub fn release_r0<T>(&self, drop_barrier: impl FnOnce() -> T) {
        self.released.store(true, Ordering::SeqCst);
        drop_barrier();
    }

    /// Lets the held process go on (idempotent).
    pub fn go(&self) {
        self.go.store(true, Ordering::SeqCst);
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
    ) -> Result<(Exit, u64), TraceError> {
        let mut ask = |_, _, _, p: Option<&_>| p.is_some() && self.released.load(Ordering::SeqCst);
        let p = match drive_asking(child, targets, &mut ask)? {
            Driven::Exited { exit, counted } => return Ok((exit, counted)),
            Driven::At(p) => p,
        };
        if let Ok(mut at) = self.at.lock() {
            *at = Some(p.call());
        }
        let end = Instant::now() + deadline;
        while !self.go.load(Ordering::SeqCst) && Instant::now() < end && interrupted().is_none() {
            std::thread::sleep(POLL);
        }
        child.resume()?;
        match drive(child, targets, Goal::ToEnd)? {
            Driven::Exited { exit, counted } => Ok((exit, p.ordinal.0 + counted)),
            Driven::At(q) => Err(TraceError::Io(format!("stopped at {} running to its end", q.call()))),
        }
    }

    /// Waits until the held process is held, or has ended (`done`).
    pub fn wait_held(&self, done: &AtomicBool, deadline: Duration) -> Result<(), Outcome> {
        let end = Instant::now() + deadline;
        while self.held_at().is_none() && !done.load(Ordering::SeqCst) {
            if interrupted().is_some() {
                return Err(Outcome::Interrupted(Interruption::WaitingForR0));
            }
            if Instant::now() >= end {
                return Err(Outcome::Error(Failure::R0Deadline { deadline, waited: R0Wait::Held }));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// Waits until each of `running` (r1 on) waits for a lock or has ended,
    /// at most [`HOLD_AT_MOST`] (or `deadline`, if shorter). Those not seen
    /// waiting by then are noted, not an error: the schedule then was not
    /// reached for them, and the result says so.
    pub fn wait_others(&self, running: &mut [Running], deadline: Duration) -> Result<(), Outcome> {
        let end = Instant::now() + deadline.min(HOLD_AT_MOST);
        // A process counts as waiting when seen so on two polls in a row: a
        // runtime's threads may all block for a moment between two steps.
        let mut seen = vec![false; running.len()];
        loop {
            let unseen: Vec<u32> = (1..)
                .zip(running.iter_mut().zip(seen.iter_mut()))
                .filter_map(|(r, (c, was))| {
                    let now = c.try_exit().is_some() || waiting(c.pid());
                    let counted = now && *was;
                    *was = now;
                    (!counted).then_some(r)
                })
                .collect();
            if unseen.is_empty() || Instant::now() >= end {
                if let Ok(mut u) = self.unseen.lock() {
                    *u = unseen;
                }
                return Ok(());
            }
            if interrupted().is_some() {
                return Err(Outcome::Interrupted(Interruption::AtBarrier));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What the schedule did, for the trial's details; `what` is what each
    /// process makes (`claim`, `append`).
    pub fn said(&self, racers: u32, what: &str) -> String {
        let unseen = self.unseen.lock().map(|u| u.clone()).unwrap_or_default();
        let Some(at) = self.held_at() else {
            return format!("schedule {READS_FIRST}: r0's {what} made no write after its barrier, so nothing was held");
        };
        let others = if racers > 2 { format!("r1-r{}", racers - 1) } else { "r1".into() };
        if unseen.is_empty() {
            format!(
                "schedule {READS_FIRST}: r0 held at its {what}'s first write ({at}) until {others} each waited for \
                 the write lock or had ended, then let go: every {what} read before any {what} wrote"
            )
        } else {
            let unseen: Vec<String> = unseen.iter().map(|r| format!("r{r}")).collect();
            format!(
                "schedule {READS_FIRST}: r0 held at its {what}'s first write ({at}), let go at the deadline with {} \
                 not seen waiting: the schedule was not reached for them",
                unseen.join(", ")
            )
        }
    }
}

/// Whether process `pid` waits in SQLite's busy handler, which sleeps
/// between its tries for a lock another holds: every thread is blocked
/// (asleep, or parked on a futex or a poll) and one of them sleeps. Every
/// thread, not the main one alone: a Go store's SQLite call runs on a
/// thread of the runtime's choosing. Unreadable (gone, or not ours) is not
/// waiting.
fn waiting(pid: u32) -> bool {
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
    fn the_schedule_says_who_was_not_seen_waiting() {
        let hold = Hold::default();
        assert!(hold.said(8, "claim").contains("made no write"));
        *hold.at.lock().unwrap() = Some("pwrite64 journal".into());
        assert!(hold.said(8, "claim").contains("until r1-r7 each waited"));
        *hold.unseen.lock().unwrap() = vec![3, 5];
        assert!(hold.said(8, "claim").contains("with r3, r5 not seen waiting"));
    }
}
