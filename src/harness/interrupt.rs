//! Interrupts as a token ([`Interrupt`]): the run owns one and passes it
//! down (the pipeline's `Context`, then every wait of the harness by
//! reference), and each wait looks at the token it was given and gives up,
//! so children are killed and reaped by the ordinary paths. Nothing polls
//! a global: a test or a library caller makes a token of its own and
//! interrupts one run by hand ([`Interrupt::raise`]), without a signal.
//!
//! `SIGINT` and `SIGTERM` reach a run through the one process-wide token
//! that [`catch_interrupts`] binds to the signal handler (a handler may
//! touch only statics) and hands back for the run's `Context`. The handler
//! records the signal, never acts on it: it raises that token.
//!
//! A second interrupt ends the driver at once, but only a second one a
//! person sends: `timeout`, CI runners and a terminal's Ctrl-C signal a
//! whole process group, so the driver may see the same interrupt several
//! times within the same instant (once for itself, once through the group).
//! Signals within [`BURST`] of the first count as that first one.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Whether a run was interrupted, and by which signal: cheap to clone,
/// every clone the same token. A fresh token is not raised; once raised,
/// it stays so, with its first signal.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicI32>);

impl Interrupt {
    /// A token of its own, not raised: what a run gets unless its caller
    /// hands it another (the CLI hands it the process's, [`catch_interrupts`]).
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Interrupts every wait that holds this token, as `sig` (`SIGINT`,
    /// `SIGTERM`) would; the first signal raised is the one kept. Only
    /// touches an atomic: the signal handler calls it.
    pub fn raise(&self, sig: i32) {
        let _ = self.0.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// The signal that interrupted the run, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// Whether the run was interrupted.
    pub fn is_set(&self) -> bool {
        self.signal().is_some()
    }
}

/// The process's token: the one the signal handler raises. Set before the
/// handler is registered, so the handler always finds it (reading a set
/// `OnceLock` is one atomic load, async-signal-safe).
static PROCESS: OnceLock<Interrupt> = OnceLock::new();

/// The code a second signal ends the driver with, given by the caller of
/// [`catch_interrupts`] before any handler is registered.
static EXIT_CODE: OnceLock<fn(i32) -> i32> = OnceLock::new();

/// When the first interrupting signal came, in nanoseconds of the monotonic
/// clock (plus one, so that 0 means "none yet").
static FIRST_AT: AtomicU64 = AtomicU64::new(0);

/// Signals that come this soon after the first are the same interrupt
/// delivered more than once (to the driver and to its group), not a person
/// pressing Ctrl-C again.
pub const BURST: Duration = Duration::from_millis(500);

/// Catches `SIGINT` and `SIGTERM` and returns the token they raise, for
/// the run to pass down. The handlers only record the signal: every wait
/// given the token gives up at once, so the run's children are killed and
/// reaped by the ordinary paths, evidence is kept, and the driver writes a
/// partial report. A second signal, later than [`BURST`] after the first,
/// ends the driver at once with the code `exit_code` gives that signal
/// (the caller's: the exit codes are the model's, `model::ExitCode`); its
/// children die with it (parent-death signal).
pub fn catch_interrupts(exit_code: fn(i32) -> i32) -> std::io::Result<Interrupt> {
    let token = PROCESS.get_or_init(Interrupt::new).clone();
    EXIT_CODE.get_or_init(|| exit_code);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only reads the monotonic clock (clock_gettime
        // is async-signal-safe), touches atomics (the process's token, set
        // above) and may call `_exit`.
        unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }?;
    }
    Ok(token)
}

/// The handler: raises the process's token on the first signal; ends the
/// process on a later one.
fn on_signal(sig: i32) {
    let now = monotonic_ns().saturating_add(1);
    match FIRST_AT.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            if let Some(token) = PROCESS.get() {
                token.raise(sig);
            }
        }
        Err(first) if abandons(first, now) => {
            if let Some(code) = EXIT_CODE.get() {
                signal_hook::low_level::exit(code(sig));
            }
        }
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

    /// A fresh token is not raised; raised by hand, every clone says so,
    /// with the first signal; another token is not touched.
    #[test]
    fn a_token_raised_by_hand_is_seen_by_its_clones_only_with_its_first_signal() {
        let (token, other) = (Interrupt::new(), Interrupt::new());
        let clone = token.clone();
        assert_eq!((token.signal(), token.is_set()), (None, false), "a fresh token is not raised");
        token.raise(libc::SIGTERM);
        token.raise(libc::SIGINT);
        assert_eq!((clone.signal(), clone.is_set()), (Some(libc::SIGTERM), true));
        assert!(!other.is_set(), "one run's interrupt is not another's");
    }
}
