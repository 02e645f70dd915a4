//! The timed crash source of a workload cell: the child runs unhindered
//! until the driver has seen a seeded number of acks, then, after a seeded
//! fraction of an operation's time, its whole group gets `SIGKILL`. A trial
//! whose child's ready record already shows the leg is not honored is
//! skipped at once, without waiting for its window.
//!
//! Crash model: the kill lands wherever the child happens to be, most often
//! between two commits; the only valid end is death by that signal. The
//! trials go through the one driver as [`crate::pipeline::judge::pending`]'s source, their
//! stores recovered in batches.

use std::time::Instant;

use crate::harness::{POLL, Running};
use crate::journal;
use crate::kill::timed::{WaitError, phase_delay, saw, timed_target, wait_for_acks};
use crate::kill::{KillPoint, TrialIndex};
use crate::legaudit::{Audit, refused_at_ready};
use crate::pipeline::judge::pending::Pending;
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Interruption, Outcome, Skip};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::Workload;
use crate::times::Clock;
use crate::trialdir::TrialEnv;

impl Workload<'_> {
    /// The trials `indices` of a timed result, up to the first that does
    /// not pass, through the one driver.
    pub fn timed_trials(&self, window: u64, indices: &[TrialIndex]) -> Vec<Trial> {
        self.trials(None, indices, &|i| self.timed(window, i))
    }

    /// Trial `index` of a timed result: kill once the seeded target of acks
    /// is reached, then read what it left.
    fn timed(&self, window: u64, index: TrialIndex) -> Pending {
        self.ctx.pool.unit(&self.ctx.interrupt, || self.timed_trial(window, index))
    }

    fn timed_trial(&self, window: u64, index: TrialIndex) -> Pending {
        let env = match self.seeded_env(&format!("t{index}"), &[&index.to_string()]) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        let seed = crate::seed::derive(self.job.seed, &[&index.to_string()]);
        let prepared =
            self.kill_timed(&env, window, seed, &mut trial).and_then(|()| prepare(&self.crash(&env, None), &mut trial));
        Pending::prepared(trial, env, prepared)
    }

    fn kill_timed(&self, env: &TrialEnv, window: u64, seed: u64, trial: &mut Trial) -> Result<(), Outcome> {
        let started = Instant::now();
        // The timeline's axis: the driver's looks at the journal, from the spawn.
        let clock = Clock::start();
        let args = self.op_args(env, false);
        let mut child =
            self.ctx.child.spawn(&self.launch(env, &args), self.ctx.deadline, &self.ctx.interrupt).map_err(|e| {
                Outcome::Error(Failure::ChildStart { child: self.ctx.child.display(), why: e.to_string() })
            })?;
        if let Some((audit, synchronous)) = self.refused_at_ready(&mut child, env) {
            let reason = audit.reason.clone();
            (trial.audit, trial.synchronous) = (Some(audit), synchronous);
            child.kill_and_reap().check().map_err(|e| Outcome::Error(Failure::Reap(e)))?;
            return Err(Outcome::Skip(Skip::NotHonored(reason)));
        }
        let target = timed_target(window, seed);
        let left = self.ctx.deadline.saturating_sub(started.elapsed());
        let reached = wait_for_acks(&mut child, &env.acks, target, (left, &self.ctx.interrupt), Some(&clock)).map_err(
            |e| match e {
                WaitError::Exited { exit, acks, stderr_tail } => {
                    self.ended_badly(env, Failure::EndedEarly { exit, acks, stderr: stderr_tail })
                }
                WaitError::Io(e) => Outcome::Error(Failure::AckJournal(e.to_string())),
                WaitError::Interrupted => Outcome::Interrupted(Interruption::WaitingForAcks),
                WaitError::Deadline { acks } => Outcome::Error(Failure::Stalled {
                    acks,
                    target,
                    deadline: self.ctx.deadline,
                    stderr: crate::pipeline::outcome::or_empty(&child.stderr_tail()).to_string(),
                }),
            },
        )?;
        std::thread::sleep(phase_delay(seed, reached.mean_op));
        if !child.is_alive() {
            return Err(Outcome::Error(Failure::DeadAtKill(child.stderr_tail())));
        }
        let seen = journal::Tail::default().poll(&env.acks).map_or(reached.acks, |l| l.saturating_sub(1));
        trial.kill_point = Some(KillPoint { trial: trial.index, after_acks: seen, ..KillPoint::default() });
        saw(&clock, seen);
        clock.with(|t| t.kill_ms = Some(clock.now()));
        let reaped = child.kill_and_reap().check().map_err(|e| Outcome::Error(Failure::Reap(e)));
        clock.times().write(env.dir());
        reaped
    }

    /// Waits for the child's ready record and returns the leg audit (and the
    /// level the child runs at) if the record already shows the leg is not
    /// honored: the leg is then skipped at once, not after its window of
    /// acks. `None` when it agrees, or when the child ended, stalled or wrote
    /// something else first: the timed wait that follows reports those.
    fn refused_at_ready(&self, child: &mut Running, env: &TrialEnv) -> Option<(Audit, Option<String>)> {
        let end = Instant::now() + self.ctx.deadline;
        while Instant::now() < end && !self.ctx.interrupt.is_set() && child.is_alive() {
            let bytes = std::fs::read(&env.acks).unwrap_or_default();
            if bytes.contains(&b'\n') {
                let ready = journal::parse(&bytes).ok()?.ready?;
                return refused_at_ready(&env.db, &ready, self.leg).map(|a| (a, ready.synchronous));
            }
            std::thread::sleep(POLL);
        }
        None
    }
}
