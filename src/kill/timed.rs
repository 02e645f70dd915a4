//! Timed kills: watch the child's ack journal and kill its group once the
//! trial's seeded number of acks is reached (the seed's method: it rarely
//! lands inside a commit, but it exercises long, realistic runs).
//!
//! Crash model: the child runs unhindered until the driver sees `target` acks,
//! then the whole group gets `SIGKILL`; the child may have completed more
//! operations (and acks) in the meantime, which the journal shows.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{Exit, Interrupt, POLL, Running};
use crate::journal::Tail;
use crate::times::Clock;

/// Why a wait for acks ended without reaching its target.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The child ended before the window was reached.
    #[error("child ended early ({exit}) after {acks} acks; stderr: {stderr_tail}")]
    Exited { exit: Exit, acks: u64, stderr_tail: String },
    /// The deadline passed; the child may be stalled.
    #[error("{acks} acks within the deadline")]
    Deadline { acks: u64 },
    #[error("ack journal: {0}")]
    Io(#[from] std::io::Error),
    /// The run was interrupted (its token raised: `SIGINT`/`SIGTERM`, or by
    /// hand) while waiting.
    #[error("interrupted while waiting for acks")]
    Interrupted,
}

/// The number of acks a timed trial waits for: the window plus a seeded
/// extra of up to half the window, so trials land at different points.
pub fn timed_target(window: u64, trial_seed: u64) -> u64 {
    window + fastrand::Rng::with_seed(trial_seed).u64(0..=window / 2)
}

/// Where within one operation's time a timed kill lands, as a seeded
/// fraction. The driver sees an ack a little after it was written, so
/// killing at once would land near the start of the next operation every
/// time; a uniformly drawn delay of up to one operation's mean duration
/// spreads kills over every phase of the operation instead.
pub fn phase_delay(trial_seed: u64, mean_op: Duration) -> Duration {
    let mut rng = fastrand::Rng::with_seed(trial_seed ^ 0x9e37_79b9_7f4a_7c15);
    mean_op.mul_f64(rng.f64())
}

/// The window is reached: how many acks, and the mean time per operation.
#[derive(Clone, Copy, Debug)]
pub struct Reached {
    pub acks: u64,
    pub mean_op: Duration,
}

/// Waits until `journal` holds `target` acks (lines after the ready line).
/// Fails at once if the child exits or `interrupt` (the run's) is raised,
/// and at `deadline` if it stops making progress.
pub fn wait_for_acks(
    child: &mut Running,
    journal: &Path,
    target: u64,
    (deadline, interrupt): (Duration, &Interrupt),
    clock: Option<&Clock>,
) -> Result<Reached, WaitError> {
    let end = Instant::now() + deadline;
    let mut tail = Tail::default();
    let mut first_ack: Option<(Instant, u64)> = None;
    loop {
        let lines = tail.poll(journal)?;
        let acks = lines.saturating_sub(1);
        if let Some(clock) = clock {
            saw(clock, acks);
        }
        if acks > 0 && first_ack.is_none() {
            first_ack = Some((Instant::now(), acks));
        }
        if acks >= target {
            let mean_op =
                first_ack.filter(|&(_, n)| acks > n).map_or(Duration::ZERO, |(t, n)| t.elapsed() / (acks - n) as u32);
            return Ok(Reached { acks, mean_op });
        }
        if let Some(exit) = child.try_exit() {
            let tail = child.stderr_tail();
            let stderr_tail = if tail.is_empty() { "(empty)".to_string() } else { tail };
            return Err(WaitError::Exited { exit, acks, stderr_tail });
        }
        if interrupt.is_set() {
            return Err(WaitError::Interrupted);
        }
        if Instant::now() >= end {
            return Err(WaitError::Deadline { acks });
        }
        std::thread::sleep(pause(first_ack, acks, target));
    }
}

/// A look at the journal on the trial's clock, when it found more acks
/// than the look before (the timeline's axis: acks against time).
pub fn saw(clock: &Clock, acks: u64) {
    let at = clock.now();
    clock.with(|t| {
        if t.seen.last().is_none_or(|&(_, n)| n < acks) {
            t.seen.push((at, acks));
        }
    });
}

/// How long to wait before looking at the journal again: half the time the
/// missing acks should take at the rate seen so far, so that the driver
/// looks a handful of times per trial instead of every [`POLL`] (each look
/// is an open, a read and a `waitpid`: at 5,000 a second they cost a timed
/// trial more than its child), and never overshoots the target by more than
/// a [`POLL`]. Before the first ack, a few polls' worth; never over 50 ms, so
/// that the deadline and interrupts are seen promptly.
fn pause(first_ack: Option<(Instant, u64)>, acks: u64, target: u64) -> Duration {
    let estimate = match first_ack {
        Some((t, n)) if acks > n => {
            let missing = target.saturating_sub(acks).min(u64::from(u32::MAX)) as u32;
            t.elapsed() / (acks - n) as u32 * missing / 2
        }
        _ => POLL * 5,
    };
    estimate.clamp(POLL, Duration::from_millis(50))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_shrinks_as_the_target_nears_and_stays_bounded() {
        let start = Instant::now() - Duration::from_millis(10);
        let far = pause(Some((start, 1)), 11, 1_000);
        let near = pause(Some((start, 1)), 11, 12);
        assert!(far > near, "{far:?} {near:?}");
        assert!(near < Duration::from_millis(1), "one ack away: about half an ack's time: {near:?}");
        assert!(far <= Duration::from_millis(50));
        assert_eq!(pause(None, 0, 100), POLL * 5);
    }

    #[test]
    fn target_is_within_the_window_and_seeded() {
        for seed in 0..100 {
            let t = timed_target(200, seed);
            assert!((200..=300).contains(&t));
            assert_eq!(t, timed_target(200, seed));
        }
    }
}
