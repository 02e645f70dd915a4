//! The run's one pool of child work: never more than `--jobs` units working
//! at once, across every result. A unit is one child's run (a timed trial,
//! a traced run to a kill point, a recording), one recovery (a pass, or a
//! batch's passes), or one race (its park and all its claimants: they must
//! be alive together to race, so they count as one unit started together).
//!
//! Why: results run `--jobs` at a time and each spreads its trials, points
//! and batches over `--jobs` threads; without one pool, up to `--jobs`²
//! children ran at once, and on a loaded machine a race's claimants or a
//! slow interpreter's start overran their deadlines (errors where the store
//! deserved verdicts). Threads may still be many; children working at once
//! are not.
//!
//! A unit's own steps may start more children (a killed trial's recovery;
//! a race's traced r0, on a thread of its own): a thread that holds a unit
//! runs them within it ([`Pool::unit`] is reentrant per thread, and
//! [`Pool::within`] lends the unit to a thread the unit started), so that a
//! unit never waits for a second one and no two units can wait on each
//! other.

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::harness::Interrupt;

/// Bounds every wait for a free unit, so that an interrupted run is seen.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

thread_local! {
    /// How many units this thread is inside of (held or lent).
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// The run's pool; clones share it.
#[derive(Clone, Debug)]
pub struct Pool(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    size: usize,
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Pool {
    /// A pool of `size` units (at least one).
    pub fn new(size: usize) -> Pool {
        Pool(Arc::new(Inner { size: size.max(1), busy: Mutex::new(0), freed: Condvar::new() }))
    }

    /// How many units may work at once.
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// Runs `work` as one unit: once a unit is free (at once on a thread
    /// already inside one). An interrupted run (`interrupt` raised) does
    /// not wait for a free unit: the work runs, and sees the interrupt
    /// itself.
    pub fn unit<T>(&self, interrupt: &Interrupt, work: impl FnOnce() -> T) -> T {
        if INSIDE.with(Cell::get) > 0 {
            return within(work);
        }
        self.take(interrupt);
        let _held = Held(self);
        within(work)
    }

    /// Runs `work` on this thread inside a unit another thread holds (a
    /// thread the unit itself started, such as a race's tracer of r0).
    pub fn within<T>(&self, work: impl FnOnce() -> T) -> T {
        within(work)
    }

    fn take(&self, interrupt: &Interrupt) {
        let mut busy = self.0.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy >= self.0.size && !interrupt.is_set() {
            busy = self.0.freed.wait_timeout(busy, LOOK_AGAIN).unwrap_or_else(|p| p.into_inner()).0;
        }
        *busy += 1;
    }

    fn give(&self) {
        let mut busy = self.0.busy.lock().unwrap_or_else(|p| p.into_inner());
        *busy = busy.saturating_sub(1);
        self.0.freed.notify_one();
    }
}

/// Marks the thread as inside a unit while `work` runs.
fn within<T>(work: impl FnOnce() -> T) -> T {
    INSIDE.with(|c| c.set(c.get() + 1));
    let _out = Leave;
    work()
}

/// Gives the unit back, even when the work panicked.
struct Held<'p>(&'p Pool);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.give();
    }
}

/// Leaves the unit when the work is done, even when it panicked.
struct Leave;

impl Drop for Leave {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn no_more_units_than_the_pool_holds_work_at_once_and_a_unit_may_nest() {
        let pool = Pool::new(2);
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    pool.unit(&Interrupt::new(), || {
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        // A unit's own step (a recovery) does not wait for a second unit.
                        pool.unit(&Interrupt::new(), || std::thread::sleep(Duration::from_millis(20)));
                        now.fetch_sub(1, Ordering::SeqCst);
                    })
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_thread_a_unit_started_works_within_it() {
        let pool = Pool::new(1);
        pool.unit(&Interrupt::new(), || {
            std::thread::scope(|s| {
                // Without `within` this would wait for the one unit held above.
                s.spawn(|| pool.within(|| pool.unit(&Interrupt::new(), || 7))).join().unwrap()
            })
        });
    }

    /// A run whose token is raised by hand (no signal) stops waiting for a
    /// free unit: its work runs, and sees the interrupt itself.
    #[test]
    fn an_interrupted_run_does_not_wait_for_a_free_unit() {
        let (pool, interrupt) = (Pool::new(1), Interrupt::new());
        let (held, is_held) = std::sync::mpsc::channel::<()>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let holder = pool.clone();
            s.spawn(move || {
                holder.unit(&Interrupt::new(), || {
                    held.send(()).unwrap();
                    let _ = released.recv_timeout(Duration::from_secs(30));
                })
            });
            is_held.recv().unwrap();
            let raiser = interrupt.clone();
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                raiser.raise(libc::SIGINT);
            });
            let started = std::time::Instant::now();
            assert_eq!(pool.unit(&interrupt, || 7), 7);
            assert!(started.elapsed() < Duration::from_secs(10), "waited {:?}", started.elapsed());
            release.send(()).unwrap();
        });
    }
}
