//! The deadline of a traced child: a thread of its own kills the group once
//! the deadline passes (or the run is interrupted), so that the tracer can
//! block in `waitpid`, which then returns the kill.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{Cut, interrupted};

/// What `fired` holds: nothing yet, the deadline, or an interrupt.
const QUIET: u8 = 0;
const DEADLINE: u8 = 1;
const INTERRUPTED: u8 = 2;

/// Kills a group once a deadline passes, from a thread of its own, so that
/// the tracer can block in `waitpid` (a blocked wait then returns the kill).
#[derive(Debug)]
pub(super) struct Watchdog {
    cancel: Option<std::sync::mpsc::Sender<()>>,
    fired: std::sync::Arc<std::sync::atomic::AtomicU8>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub(super) fn start(pgid: Pid, deadline: Duration) -> Watchdog {
        use std::sync::atomic::Ordering;
        let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(QUIET));
        let flag = fired.clone();
        let end = Instant::now() + deadline;
        let thread = std::thread::spawn(move || {
            // Wakes now and then to notice an interrupted run, which ends
            // the traced trial as promptly as an untraced one.
            loop {
                let left = end.saturating_duration_since(Instant::now());
                match cancelled.recv_timeout(left.min(Duration::from_millis(20))) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                        if Instant::now() >= end || interrupted().is_some() =>
                    {
                        // Why it kills, so that the tracer's error says so.
                        let why = if interrupted().is_some() { INTERRUPTED } else { DEADLINE };
                        flag.store(why, Ordering::SeqCst);
                        let _ = killpg(pgid, Signal::SIGKILL);
                        return;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        });
        Watchdog { cancel: Some(cancel), fired, thread: Some(thread) }
    }

    /// Why the watchdog killed the group, if it did.
    pub(super) fn fired(&self) -> Option<Cut> {
        match self.fired.load(std::sync::atomic::Ordering::SeqCst) {
            DEADLINE => Some(Cut::Deadline),
            INTERRUPTED => Some(Cut::Interrupted),
            _ => None,
        }
    }

    /// Stops the watchdog before the child is reaped, so that it can never
    /// kill a group whose id was reused.
    pub(super) fn stop(&mut self) {
        self.cancel.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
