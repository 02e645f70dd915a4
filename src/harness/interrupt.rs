//! Interrupts: `SIGINT` and `SIGTERM` are recorded, never acted on in the
//! handler; every wait of the harness looks at the record and gives up, so
//! children are killed and reaped by the ordinary paths.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

/// The signal that interrupted the run (`SIGINT` or `SIGTERM`); 0 while none has.
static INTERRUPT: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));
/// Set by the first interrupting signal, so that a second one ends the driver at once.
static INTERRUPTED_ONCE: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Catches `SIGINT` and `SIGTERM`. The handlers only record the signal:
/// every wait of the harness looks at it and gives up at once, so the run's
/// children are killed and reaped by the ordinary paths, evidence is kept,
/// and the driver writes a partial report. A second signal ends the driver
/// at once with `128 + signal`; its children die with it (parent-death signal).
pub fn catch_interrupts() -> std::io::Result<()> {
    use signal_hook::flag;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // Registered first, so that it looks at the flag before the first
        // signal sets it.
        flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&INTERRUPTED_ONCE))?;
        flag::register(sig, Arc::clone(&INTERRUPTED_ONCE))?;
        flag::register_usize(sig, Arc::clone(&INTERRUPT), sig as usize)?;
    }
    Ok(())
}

/// The signal that interrupted the run, if one did.
pub fn interrupted() -> Option<i32> {
    match INTERRUPT.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig as i32),
    }
}
