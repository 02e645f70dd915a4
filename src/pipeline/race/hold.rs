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
use crate::pipeline::outcome::{Failure, Interruption, Outcome};

/// The schedule's name, as a result says which one fired.
pub const READS_FIRST: &str = "reads-first";

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
            Driven::Exited { exit, counted } => Ok((exit, p.ordinal + counted)),
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
                return Err(Outcome::Error(Failure::R0Deadline(deadline)));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// Waits until each of `running` (r1 on) waits for a lock or has ended.
    /// Those still running at `deadline` are noted, not an error: the
    /// schedule then was not reached, and the result says so.
    pub fn wait_others(&self, running: &mut [Running], deadline: Duration) -> Result<(), Outcome> {
        let end = Instant::now() + deadline;
        loop {
            let unseen: Vec<u32> = (1..)
                .zip(running.iter_mut())
                .filter_map(|(r, c)| (c.try_exit().is_none() && !waiting(c.pid())).then_some(r))
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

    /// What the schedule did, for the trial's details.
    pub fn said(&self, racers: u32) -> String {
        let unseen = self.unseen.lock().map(|u| u.clone()).unwrap_or_default();
        let Some(at) = self.held_at() else {
            return format!("schedule {READS_FIRST}: r0's claim made no write after its barrier, so nothing was held");
        };
        let others = if racers > 2 { format!("r1-r{}", racers - 1) } else { "r1".into() };
        if unseen.is_empty() {
            format!(
                "schedule {READS_FIRST}: r0 held at its claim's first write ({at}) until {others} each waited for \
                 the write lock or had ended, then let go: every claim read before any claim wrote"
            )
        } else {
            let unseen: Vec<String> = unseen.iter().map(|r| format!("r{r}")).collect();
            format!(
                "schedule {READS_FIRST}: r0 held at its claim's first write ({at}), let go at the deadline with {} \
                 not seen waiting: the schedule was not reached for them",
                unseen.join(", ")
            )
        }
    }
}

/// Whether process `pid` is stopped in a sleep: SQLite's busy handler
/// sleeps between its tries for a lock another holds. Unreadable (gone, or
/// not ours) is not waiting.
fn waiting(pid: u32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/syscall")) else { return false };
    sleeping(&text)
}

/// `/proc/PID/syscall`'s first field names a sleep.
fn sleeping(text: &str) -> bool {
    let nr = text.split_whitespace().next().and_then(|n| n.parse::<i64>().ok());
    nr.is_some_and(|nr| nr == libc::SYS_nanosleep || nr == libc::SYS_clock_nanosleep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_waiting_and_anything_else_is_not() {
        assert!(sleeping(&format!("{} 0x0 0x7ffc 0x0 0x0 0x0 0x0 0x7ffc 0x7f00", libc::SYS_clock_nanosleep)));
        assert!(!sleeping(&format!("{} 0x3 0x7ffc 0x1000 0x0 0x0 0x0 0x7ffc 0x7f00", libc::SYS_read)));
        assert!(!sleeping("running"));
        assert!(!sleeping(""));
    }

    #[test]
    fn the_schedule_says_who_was_not_seen_waiting() {
        let hold = Hold::default();
        assert!(hold.said(8).contains("made no write"));
        *hold.at.lock().unwrap() = Some("pwrite64 journal".into());
        assert!(hold.said(8).contains("until r1-r7 each waited"));
        *hold.unseen.lock().unwrap() = vec![3, 5];
        assert!(hold.said(8).contains("with r3, r5 not seen waiting"));
    }
}
