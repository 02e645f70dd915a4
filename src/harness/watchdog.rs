//! The deadline of a traced child: a thread of its own kills the group once
//! the deadline passes (or the run's interrupt token it was given is
//! raised), so that the tracer can block in `waitpid`, which then returns
//! the kill.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{Cut, Interrupt};

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
    /// Starts the watchdog of group `pgid`: it kills the group once
    /// `deadline` passes or `interrupt` is raised, whichever comes first.
    pub(super) fn start(pgid: Pid, deadline: Duration, interrupt: &Interrupt) -> Watchdog {
        use std::sync::atomic::Ordering;
        let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicU8::new(QUIET));
        let flag = fired.clone();
        let (end, interrupt) = (Instant::now() + deadline, interrupt.clone());
        let thread = std::thread::spawn(move || {
            // Wakes now and then to notice an interrupted run, which ends
            // the traced trial as promptly as an untraced one.
            loop {
                let left = end.saturating_duration_since(Instant::now());
                match cancelled.recv_timeout(left.min(Duration::from_millis(20))) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() >= end || interrupt.is_set() => {
                        // Why it kills, so that the tracer's error says so.
                        let why = if interrupt.is_set() { INTERRUPTED } else { DEADLINE };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Running;

    /// Waits (at most 10 s) until the watchdog has fired.
    fn fired_within(dog: &Watchdog) -> Option<Cut> {
        let end = Instant::now() + Duration::from_secs(10);
        while dog.fired().is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        dog.fired()
    }

    fn sleeper() -> Running {
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", "sleep 30"]);
        Running::spawn(sh, None).unwrap()
    }

    /// A fresh token is not raised: the watchdog stays quiet until the
    /// token is raised by hand (no signal), then kills the group long
    /// before its deadline and says it was the interrupt.
    #[test]
    fn a_token_raised_by_hand_fires_the_watchdog_for_the_interrupt() {
        let (child, interrupt) = (sleeper(), Interrupt::new());
        let mut dog = Watchdog::start(Pid::from_raw(child.pid() as i32), Duration::from_secs(60), &interrupt);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!((dog.fired(), interrupt.is_set()), (None, false), "a fresh token is not raised");
        interrupt.raise(libc::SIGTERM);
        assert_eq!(fired_within(&dog), Some(Cut::Interrupted));
        dog.stop();
        assert!(child.kill_and_reap().exit.is_sigkill(), "the watchdog killed the group");
    }

    /// Another run's token raised does not touch this one: its deadline
    /// is what fires it.
    #[test]
    fn another_tokens_interrupt_leaves_the_deadline_to_fire() {
        let (child, other) = (sleeper(), Interrupt::new());
        other.raise(libc::SIGINT);
        let mine = Interrupt::new();
        let mut dog = Watchdog::start(Pid::from_raw(child.pid() as i32), Duration::from_millis(50), &mine);
        assert_eq!(fired_within(&dog), Some(Cut::Deadline));
        dog.stop();
    }
}
