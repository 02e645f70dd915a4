//! Interrupts: `SIGINT` and `SIGTERM` are recorded, never acted on in the
//! handler; every wait of the harness looks at the record and gives up, so
//! children are killed and reaped by the ordinary paths.
//!
//! A second interrupt ends the driver at once, but only a second one a
//! person sends: `timeout`, CI runners and a terminal's Ctrl-C signal a
//! whole process group, so the driver may see the same interrupt several
//! times within the same instant (once for itself, once through the group).
//! Signals within [`BURST`] of the first count as that first one.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The signal that interrupted the run (`SIGINT` or `SIGTERM`); 0 while none has.
static INTERRUPT: AtomicUsize = AtomicUsize::new(0);
/// When the first interrupting signal came, in nanoseconds of the monotonic
/// clock (plus one, so that 0 means "none yet").
static FIRST_AT: AtomicU64 = AtomicU64::new(0);

/// Signals that come this soon after the first are the same interrupt
/// delivered more than once (to the driver and to its group), not a person
/// pressing Ctrl-C again.
pub const BURST: Duration = Duration::from_millis(500);

/// Catches `SIGINT` and `SIGTERM`. The handlers only record the signal:
/// every wait of the harness looks at it and gives up at once, so the run's
/// children are killed and reaped by the ordinary paths, evidence is kept,
/// and the driver writes a partial report. A second signal, later than
/// [`BURST`] after the first, ends the driver at once with `128 + signal`;
/// its children die with it (parent-death signal).
pub fn catch_interrupts() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only reads the monotonic clock (clock_gettime
        // is async-signal-safe), touches atomics and may call `_exit`.
        unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }?;
    }
    Ok(())
}

/// The handler: records the first signal; ends the process on a later one.
fn on_signal(sig: i32) {
    let now = monotonic_ns().saturating_add(1);
    match FIRST_AT.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => INTERRUPT.store(sig as usize, Ordering::SeqCst),
        Err(first) if abandons(first, now) => signal_hook::low_level::exit(128 + sig),
        Err(_) => {}
    }
}

/// Whether a signal at `now` ends the driver, the first having come at
/// `first` (both in nanoseconds): only once the burst is over.
fn abandons(first: u64, now: u64) -> bool {
    now.saturating_sub(first) > BURST.as_nanos() as u64
}

/// The monotonic clock in nanoseconds, read the async-signal-safe way.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the struct it is given, nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The signal that interrupted the run, if one did.
pub fn interrupted() -> Option<i32> {
    match INTERRUPT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_within_the_burst_are_one_interrupt_and_a_later_one_abandons() {
        let first = 10_000_000_000;
        assert!(!abandons(first, first), "the same instant");
        assert!(!abandons(first, first + 1_000_000), "a millisecond later: the group's copy");
        assert!(!abandons(first, first + BURST.as_nanos() as u64));
        assert!(abandons(first, first + BURST.as_nanos() as u64 + 1), "a person's second Ctrl-C");
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = monotonic_ns();
        std::thread::sleep(Duration::from_millis(2));
        assert!(monotonic_ns() > a);
    }
}
