//! The clock of a result's confirmations and refires: each is timed where
//! it runs, in the job's own thread, and the result takes the sum
//! ([`crate::model::Spent`]). Why a thread's own tally: they run deep
//! inside the crash sources (a recorded fire's real kill, the exec'd
//! confirmation, the refires), and a job runs on one thread from its first
//! trial to its result, so no handle has to be threaded through them.

use std::cell::Cell;
use std::time::Instant;

use crate::model::Spent;

/// What a confirmation or a refire is, for the tally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    RealKill,
    Confirm,
    SweepConfirm,
    Refire,
}

thread_local! {
    static TALLY: Cell<Spent> = Cell::new(Spent::default());
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, adding its time to `phase` in this thread's tally; inside
/// another timed phase (the exec'd sweep's own real kill) it adds nothing,
/// so that no second is counted twice.
pub fn timed<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let depth = DEPTH.with(|d| d.replace(d.get() + 1));
    let got = f();
    DEPTH.with(|d| d.set(depth));
    if depth > 0 {
        return got;
    }
    let ms = start.elapsed().as_millis() as u64;
    TALLY.with(|t| {
        let mut s = t.get();
        match phase {
            Phase::RealKill => s.real_kill_ms += ms,
            Phase::Confirm => {
                s.confirm_ms += ms;
                s.confirm_runs += 1;
            }
            Phase::SweepConfirm => s.sweep_confirm_ms += ms,
            Phase::Refire => s.refire_ms += ms,
        }
        t.set(s);
    });
    got
}

/// This thread's tally since the last take, emptied: a job takes it at its
/// start (whatever an earlier job on the thread left) and at its end.
pub fn take() -> Spent {
    TALLY.with(|t| t.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_phase_adds_to_its_own_figure_and_a_take_empties_the_tally() {
        take();
        let got = timed(Phase::Confirm, || 7);
        timed(Phase::Confirm, || std::thread::sleep(std::time::Duration::from_millis(5)));
        timed(Phase::Refire, || ());
        assert_eq!(got, 7);
        let spent = take();
        assert_eq!(spent.confirm_runs, 2, "one per confirming run");
        assert!(spent.confirm_ms >= 5, "{spent:?}");
        assert_eq!((spent.real_kill_ms, spent.sweep_confirm_ms), (0, 0));
        assert!(take().is_none(), "taken: empty");
        timed(Phase::SweepConfirm, || timed(Phase::RealKill, || ()));
        let spent = take();
        assert_eq!(spent.real_kill_ms, 0, "a nested phase is its outer one's time");
        std::thread::spawn(|| timed(Phase::RealKill, || ())).join().unwrap();
        assert!(take().is_none(), "another thread's tally is its own");
    }
}
