//! A race's racers as processes: started on their barriers, waited for
//! until each has written its ready record (at its barrier), and until each
//! has ended, every wait bounded by the run's deadline and cut short by
//! its interrupt.
//!
//! Crash model: none here: these waits only watch; the kills are the
//! traced r0's ([`crate::pipeline::race::job`]). A racer that ends before
//! its barrier, or outlives the deadline, is the harness's error or the
//! store's, by whether it wrote its ready record.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::job::{Order, Race};
use crate::harness::{Exit, Launch, POLL, Running};
use crate::pipeline::outcome::{Failure, Interruption, Outcome, R0Wait, Since};
use crate::times::Clock;
use crate::trialdir::TrialEnv;

impl Race<'_> {
    /// Starts the racers of `racers`, each on its barrier, on the race's clock.
    pub(super) fn spawn_racers(
        &self,
        env: &TrialEnv,
        racers: std::ops::Range<u32>,
        order: Order,
        clock: &Clock,
    ) -> Result<Vec<Running>, Outcome> {
        let mut running = Vec::new();
        for r in racers {
            clock.racer(r, |t| t.started_ms = Some(clock.now()));
            let stderr = env.path(&format!("racer-r{r}.stderr"));
            let args = self.racer_args(env, r, order);
            let launch = Launch { args: &args, home: &env.home, trial: env.dir(), stdout: None, stderr: Some(&stderr) };
            let child = self
                .ctx
                .child
                .spawn(&launch, self.ctx.deadline, &self.ctx.interrupt)
                .map_err(|e| Outcome::Error(Failure::RacerStart { racer: r, why: e.to_string() }))?;
            running.push(child);
        }
        Ok(running)
    }

    /// Waits for the free racers, numbered from `first`, to end: looks at
    /// each in turn, so that the time each is seen to end is its own (the
    /// timeline's lanes), not that of the racer waited on before it.
    pub(super) fn wait_all(
        &self,
        running: &mut [Running],
        first: u32,
        (clock, since): (&Clock, Since),
    ) -> Result<Vec<Exit>, Outcome> {
        let end = Instant::now() + self.ctx.deadline;
        let mut exits: Vec<Option<Exit>> = vec![None; running.len()];
        loop {
            for ((r, child), exit) in (first..).zip(running.iter_mut()).zip(exits.iter_mut()) {
                if exit.is_none() {
                    *exit = child.try_exit();
                    if exit.is_some() {
                        clock.racer(r, |t| t.ended_ms = Some(clock.now()));
                    }
                }
            }
            let Some(r) = exits.iter().position(Option::is_none).map(|i| first + i as u32) else {
                return Ok(exits.into_iter().flatten().collect());
            };
            if self.ctx.interrupt.is_set() {
                return Err(Outcome::Interrupted(Interruption::Racer(r)));
            }
            if Instant::now() >= end {
                return Err(Outcome::Error(Failure::RacerDeadline { racer: r, deadline: self.ctx.deadline, since }));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the traced r0 has ended (killed at its point, or finished).
    pub(super) fn wait_r0(&self, r0_done: &AtomicBool) -> Result<(), Outcome> {
        let end = Instant::now() + self.ctx.deadline;
        while !r0_done.load(Ordering::SeqCst) {
            if self.ctx.interrupt.is_set() {
                return Err(Outcome::Interrupted(Interruption::WaitingForR0));
            }
            if Instant::now() >= end {
                return Err(Outcome::Error(Failure::R0Deadline { deadline: self.ctx.deadline, waited: R0Wait::End }));
            }
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    /// Waits until every racer of `all` has written its ready record (it is
    /// then at its barrier, or about to block on it).
    pub(super) fn wait_ready(
        &self,
        all: std::ops::Range<u32>,
        ready: &dyn Fn(u32) -> bool,
        running: &mut [Running],
        first: u32,
    ) -> Result<(), Outcome> {
        // Every claimant of a race starts at once, and so may every race
        // the pool runs beside it: they share one deadline, scaled with the
        // child's measured start (Context::scaled_deadline).
        let deadline = self.ctx.deadline;
        let end = Instant::now() + deadline;
        loop {
            let pending: Vec<u32> = all.clone().filter(|&r| !ready(r)).collect();
            if pending.is_empty() {
                return Ok(());
            }
            for (r, child) in (first..).zip(running.iter_mut()) {
                if let Some(exit) = child.try_exit() {
                    let stderr = child.stderr_tail();
                    return Err(Outcome::Error(Failure::RacerBeforeBarrier { racer: r, exit, stderr }));
                }
            }
            if self.ctx.interrupt.is_set() {
                return Err(Outcome::Interrupted(Interruption::AtBarrier));
            }
            if Instant::now() >= end {
                let (at_once, start, path) = (self.ctx.at_once(), self.ctx.start, self.ctx.start_path());
                return Err(Outcome::Error(Failure::RacersNotReady { pending, deadline, at_once, start, path }));
            }
            std::thread::sleep(POLL);
        }
    }
}
