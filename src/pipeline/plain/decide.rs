//! The plain-path decision on a recorded state that did not pass: a real
//! kill at its point, and where that passes, runs that reach the state
//! again (`crate::pipeline::workload::refind`), decide whether it is a fire
//! (confirmed, the details saying how) or an error naming the
//! non-determinism. The recorded workload's and the recorded race's sweeps
//! both decide here.
//!
//! Crash model: the recorded state's ([`crate::crashstate::state`]); the
//! confirming kill is a real `SIGKILL` at the entry of a counted call.
//! Clause: the cell's; this file only chooses which trial stands for it.

use crate::crashstate::likeness::Likeness;
use crate::kill::syscall::Point;
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::trial::Trial;

/// How many runs seek a recorded fire once the kill at its ordinal passed.
/// Each is a whole traced workload and a recovery, paid only where a
/// recorded state did not pass; a run reaches the state again in most runs
/// of a store that reorders its writes (the likeness by call and acks does
/// not need the same order), so three make a real fire's error rare while
/// a fire that only the recording saw costs three runs, not a sweep.
pub const TRIES: u32 = 3;

/// A run that found the sought state again, and how.
pub struct Refound {
    /// The killed run's trial, judged: its index is the recorded point's.
    pub trial: Trial,
    pub how: Likeness,
    /// Where in that run it was killed.
    pub ordinal: u64,
    /// Which run of [`TRIES`] it was (from 1).
    pub run: u32,
}

/// What the runs that sought a recorded state found.
pub enum Found {
    /// A run reached it, and its kill did not pass.
    Again(Box<Refound>),
    /// No run's kill there failed (or none reached it): how many ran.
    Missed(u32),
    /// A run could not be made or was cut short (a tracing error, the
    /// deadline, an interrupt): its trial, as any trial's.
    Broken(Box<Trial>),
}

impl Refound {
    /// How the fire was found again, as the result's details say it after
    /// "confirmed " ("by a real kill where ...").
    pub fn how(&self, point: u32, sought: &Point) -> String {
        let (ordinal, run) = (self.ordinal, self.run);
        let how = match self.how {
            Likeness::State => format!(
                "where the store's files first held the state of point {point} again (by a hash that leaves out the \
                 ready record's pid and what SQLite draws at random)"
            ),
            Likeness::Write => {
                format!("at the call of point {point} ({}) once the ack journal held what it held there", sought.call())
            }
        };
        format!(
            "by a real kill {how}: point {ordinal} of run {run} of {TRIES}; the kill at point {point} itself \
             passed: this store does not make the same calls on every run"
        )
    }
}

/// A recorded state that did not pass, against a real kill at its point:
/// the real kill's trial when it does not pass either (confirmed); else,
/// for a store whose calls differ from run to run, the first run killed
/// where it reached the state again that does not pass (`refind`, called
/// only then); else an `error` naming the non-determinism, with the
/// recorded state as evidence. The details say how it was confirmed.
pub fn decide(recorded: Trial, real: Trial, at: &Point, refind: impl FnOnce() -> Found) -> Trial {
    let n = recorded.index.get();
    if real.is_bad() && reached(&real) {
        return confirmed(real, &recorded, format!("confirmed by a real kill at point {n}"));
    }
    match refind() {
        Found::Again(r) => {
            let how = format!("confirmed {}", r.how(n, at));
            confirmed(r.trial, &recorded, how)
        }
        Found::Broken(t) => *t,
        Found::Missed(tries) => {
            let mut t = recorded;
            let found = Box::new(std::mem::replace(&mut t.outcome, Outcome::Pass));
            t.outcome = Outcome::Error(Failure::OnlyRecorded { point: n, found, tries });
            t
        }
    }
}

/// Whether a real kill reached its point: its child was stopped there and
/// killed (or ended there, at an end point). One that ended before its
/// point did not reach the recorded state: a store whose calls differ ran a
/// shorter path, which its finding (a store failure: an end before the
/// point) does not make a fire of this state; a harness error stays one.
fn reached(real: &Trial) -> bool {
    real.kill_point.is_some() || !matches!(real.outcome, Outcome::Fire(_))
}

/// A real kill's trial that did not pass, standing for the recorded one,
/// with how it was found and what the recorded state found if it differs.
fn confirmed(mut t: Trial, recorded: &Trial, how: String) -> Trial {
    let n = recorded.index;
    t.details.push(how);
    if recorded.outcome != t.outcome {
        t.details.push(format!("the recorded state at point {n} found: {}", recorded.outcome));
    }
    t
}
