//! The deadline of a traced child: a thread of its own kills the group once
//! the deadline passes (or the run is interrupted), so that the tracer can
//! block in `waitpid`, which then returns the kill.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::interrupted;

/// Kills a group once a deadline passes, from a thread of its own, so that
/// the tracer can block in `waitpid` (a blocked wait then returns the kill).
#[derive(Debug)]
pub(super) struct Watchdog {
    cancel: Option<std::sync::mpsc::Sender<()>>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    pub(super) fn start(pgid: Pid, deadline: Duration) -> Watchdog {
        use std::sync::atomic::Ordering;
        let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
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
                        flag.store(true, Ordering::SeqCst);
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

    pub(super) fn fired(&self) -> bool {
        self.fired.load(std::sync::atomic::Ordering::SeqCst)
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
