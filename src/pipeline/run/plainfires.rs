//! The run's syscall results, by cell and leg, as each ends: whether it
//! fired on the plain path (every operation exec'd) and where. A timed
//! fire found through the fork server needs the plain path's word before
//! it is reported ([`crate::pipeline::plain::confirm`]): exec'd timed
//! trials, and where they miss (a kill's instant does not carry over),
//! the exec'd syscall sweep of its cell and leg. When the run's own
//! syscall result of that cell and leg already fired at a point and an
//! exec'd kill there fired too, that sweep would fire: the timed fire is
//! confirmed by it, and neither is paid again (issue 42: on Hermes, a
//! timed outbox fire spent a minute on exec'd trials and a second sweep).
//!
//! Only a fire is taken: a syscall result that passed, erred or fired
//! only through the fork server leaves the timed fire to its own exec'd
//! runs, as before. A timed job waits for a syscall result that is under
//! way (another thread runs it), never for one not begun: with one
//! thread, the timed job comes first and would wait for ever.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::harness::Interrupt;
use crate::pipeline::outcome::Outcome;

/// Bounds every wait for a result under way, so that an interrupt is seen.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// A syscall result's fire on the plain path: its point and outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct PlainFire {
    pub point: u32,
    pub outcome: Outcome,
}

/// The run's syscall results by (cell, leg); clones share them.
#[derive(Clone, Debug, Default)]
pub struct PlainFires(Arc<Inner>);

/// Each begun result's slot, by (cell, leg): `None` while it runs, then
/// its plain-path fire or none.
type Slots = HashMap<(String, String), Option<Option<PlainFire>>>;

#[derive(Debug, Default)]
struct Inner {
    slots: Mutex<Slots>,
    changed: Condvar,
}

/// A syscall result under way; it says how it ended once ([`Begun::ended`]),
/// or, dropped unsaid (an early return, a panic), that it gave no fire.
pub struct Begun {
    fires: PlainFires,
    key: (String, String),
    said: bool,
}

impl PlainFires {
    /// The syscall result of `cell` on `leg` has begun.
    pub fn begun(&self, cell: &str, leg: &str) -> Begun {
        let key = (cell.to_string(), leg.to_string());
        self.0.slots.lock().expect("no thread panics holding the slots").insert(key.clone(), None);
        Begun { fires: self.clone(), key, said: false }
    }

    /// The plain-path fire of the syscall result of `cell` on `leg`: at once
    /// if it ended, after waiting (at most `bound`) if it is under way;
    /// `None` if it was not begun, gave no plain-path fire, the bound
    /// passed or the run was interrupted (`interrupt` raised).
    pub fn fire(&self, cell: &str, leg: &str, bound: Duration, interrupt: &Interrupt) -> Option<PlainFire> {
        let key = (cell.to_string(), leg.to_string());
        let start = Instant::now();
        let mut slots = self.0.slots.lock().expect("no thread panics holding the slots");
        loop {
            match slots.get(&key)? {
                Some(ended) => return ended.clone(),
                None if start.elapsed() >= bound || interrupt.is_set() => return None,
                None => slots = self.0.changed.wait_timeout(slots, LOOK_AGAIN).expect("no thread panics").0,
            }
        }
    }

    fn end(&self, key: &(String, String), fire: Option<PlainFire>) {
        self.0.slots.lock().expect("no thread panics holding the slots").insert(key.clone(), Some(fire));
        self.0.changed.notify_all();
    }
}

impl Begun {
    /// The result ended; `fire` if it fired on the plain path.
    pub fn ended(mut self, fire: Option<PlainFire>) {
        self.said = true;
        self.fires.end(&self.key, fire);
    }
}

impl Drop for Begun {
    fn drop(&mut self) {
        if !self.said {
            self.fires.end(&self.key, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Violation;
    use crate::pipeline::outcome::Finding;

    fn fire(point: u32) -> PlainFire {
        let found = Finding { violations: vec![Violation::new("orphan", "c1 ended")], power: None, fault: None };
        PlainFire { point, outcome: Outcome::Fire(found) }
    }

    #[test]
    fn a_result_not_begun_is_not_waited_for() {
        let fires = PlainFires::default();
        assert_eq!(fires.fire("rotation-atomicity", "wal", Duration::from_secs(3600), &Interrupt::new()), None);
    }

    #[test]
    fn a_result_under_way_is_waited_for_and_its_fire_taken() {
        let fires = PlainFires::default();
        let begun = fires.begun("rotation-atomicity", "wal");
        let waiter = {
            let fires = fires.clone();
            std::thread::spawn(move || {
                fires.fire("rotation-atomicity", "wal", Duration::from_secs(60), &Interrupt::new())
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        begun.ended(Some(fire(349)));
        assert_eq!(waiter.join().unwrap(), Some(fire(349)));
        assert_eq!(
            fires.fire("rotation-atomicity", "default", Duration::ZERO, &Interrupt::new()),
            None,
            "another leg's is its own"
        );
    }

    #[test]
    fn a_result_that_ends_unsaid_or_out_of_time_gives_no_fire() {
        let fires = PlainFires::default();
        let begun = fires.begun("outbox-exactly-once", "wal");
        assert_eq!(
            fires.fire("outbox-exactly-once", "wal", Duration::from_millis(60), &Interrupt::new()),
            None,
            "the bound passed"
        );
        drop(begun);
        assert_eq!(
            fires.fire("outbox-exactly-once", "wal", Duration::from_secs(60), &Interrupt::new()),
            None,
            "ended, no fire said"
        );
    }
}
