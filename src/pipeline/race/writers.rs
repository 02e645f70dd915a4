//! Cell 6's crash sources: writers that append to one session at once
//! (`co-append`), one of them killed while the others run on.
//!
//! Crash model: a process crash of writer r0 only. Timed: every writer is
//! released together and r0's group gets `SIGKILL` once its journal holds a
//! seeded number of acks; the others append on to their `--stop-after`.
//! Syscall: r0 is released alone, stopped at the entry of its Nth
//! file-mutating call and killed there; the others are then released and
//! append on top of what its kill left (a hot journal they must roll back).
//! The reads-first schedule ([`crate::pipeline::race::schedule`]) comes
//! before the sweep. The sweep's states come from one recording of r0
//! ([`crate::pipeline::race::recorded`]); re-executed (this module's
//! [`crate::pipeline::race::writers_sweep`]) under `--replay off`, for a `--point` repro, to
//! confirm a recorded fire, and wherever the recording cannot stand.
//!
//! Clause: the cell's (`cells::writers`): every acknowledged append of
//! every writer survives exactly once, in its writer's order, at unique
//! and contiguous positions.

use std::ffi::OsString;
use std::path::Path;

use crashcells_protocol::{Op, OpArgs};

use crate::cells::WritersShape;
use crate::harness::Launch;
use crate::journal;
use crate::kill::timed::{WaitError, timed_target, wait_for_acks};
use crate::kill::{KillPoint, TrialIndex};
use crate::pipeline::judge::coverage::Coverage;
use crate::pipeline::judge::pending::Pending;
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::pipeline::race::job::{Order, R0, Race, acks_of, barrier_of};
use crate::pipeline::race::schedule::noted;
use crate::pipeline::race::writers_sweep::writers_sweep;
use crate::pipeline::run::context::Scope;
use crate::pipeline::trial::Trial;
use crate::trialdir::TrialEnv;

/// A writers' job under its kill mode: timed trials of `appends` appends
/// each; under syscall kills the reads-first schedule, then (unless it
/// fired) the sweep, both of `sweep_appends` appends each. The writers take
/// no other mode (`crate::cells::WritersShape`'s `takes`: the dispatch
/// skips the others).
pub fn shaped(
    scope: Scope<'_>,
    shape: WritersShape,
    timed: &[TrialIndex],
    re_execute: bool,
) -> (Vec<Trial>, Option<Coverage>) {
    let WritersShape { writers, appends, window, sweep_appends } = shape;
    if scope.job.kill.is_timed() {
        return (Race::writers(scope, (writers, appends)).timed_writers(window, timed), None);
    }
    let short = Race::writers(scope, (writers, sweep_appends));
    let (scheduled, said) = short.scheduled();
    if scheduled.iter().any(Trial::is_bad) {
        return (scheduled, None);
    }
    if re_execute {
        return noted(&said, writers_sweep(&short));
    }
    // r0 recorded once, the other writers run on each state rebuilt from it.
    noted(&said, crate::pipeline::race::recorded::run(&short, &short))
}

impl Race<'_> {
    /// Writer `r`'s arguments: its appends to `main`, on `barrier`, ending
    /// after `stop` of them (or when killed).
    pub(super) fn writer_args(&self, env: &TrialEnv, r: u32, barrier: &Path, stop: Option<u64>) -> Vec<OsString> {
        let args =
            OpArgs::new(Op::CoAppend).db(&env.db).acks(&acks_of(env, r)).writer(&format!("r{r}")).barrier(barrier);
        match stop {
            Some(n) => args.stop_after(n),
            None => args,
        }
        .mutant(self.ctx.mutant())
        .to_args()
    }

    /// The timed trials `indices` of a writers' result, up to the first
    /// that does not pass, through the one driver.
    pub fn timed_writers(&self, window: u64, indices: &[TrialIndex]) -> Vec<Trial> {
        self.trials(None, indices, &|i| self.timed_writer(window, i))
    }

    /// Trial `index`: every writer released together, r0 killed at its
    /// seeded target of acks.
    fn timed_writer(&self, window: u64, index: TrialIndex) -> Pending {
        let env = match self.env(&format!("t{index}")) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let mut trial = Trial::new(index);
        let target = timed_target(window, crate::seed::derive(self.job.seed, &[&index.to_string()]));
        let raced = self.run(&env, self.racers, R0::Timed { target, trial: index }, Order::Together);
        let prepared = raced.and_then(|f| {
            trial.kill_point = f.kill_point.clone();
            trial.details.push(format!("r0 killed once it had acked {target} appends or more, the others running on"));
            prepare(&self.crash(&env, &f, None), &mut trial)
        });
        Pending::prepared(trial, env, prepared)
    }

    /// Spawns r0 untraced (on its tracer's thread, as a traced r0 is) and
    /// kills its group once its journal holds `target` acks.
    pub(super) fn timed_r0(
        &self,
        env: &TrialEnv,
        order: Order,
        target: u64,
        trial: TrialIndex,
    ) -> Result<KillPoint, Outcome> {
        // Until killed, as a timed workload runs: a stop would race the kill.
        let barrier = barrier_of(env, 0, order);
        let (stderr, args, acks) =
            (env.path("racer-r0.stderr"), self.writer_args(env, 0, &barrier, None), acks_of(env, 0));
        let launch = Launch { args: &args, home: &env.home, trial: env.dir(), stdout: None, stderr: Some(&stderr) };
        // r0 waits at its barrier while the others start: its deadline covers their start too.
        let deadline = self.ctx.deadline * 2;
        let mut child = self
            .ctx
            .child
            .spawn(&launch, deadline, &self.ctx.interrupt)
            .map_err(|e| Outcome::Error(Failure::RacerStart { racer: 0, why: e.to_string() }))?;
        let reached =
            wait_for_acks(&mut child, &acks, target, (deadline, &self.ctx.interrupt), None).map_err(|e| match e {
                WaitError::Exited { exit, acks: n, stderr_tail } => {
                    let failure = Failure::EndedEarly { exit, acks: n, stderr: stderr_tail };
                    let ready = journal::parse(&std::fs::read(&acks).unwrap_or_default()).ok().and_then(|j| j.ready);
                    if ready.is_some() {
                        Outcome::store_failure(Op::CoAppend, failure)
                    } else {
                        Outcome::Error(failure)
                    }
                }
                WaitError::Io(e) => Outcome::Error(Failure::AckJournal(e.to_string())),
                WaitError::Interrupted => Outcome::Interrupted(Interruption::WaitingForAcks),
                WaitError::Deadline { acks: n } => {
                    Outcome::Error(Failure::Stalled { acks: n, target, deadline, stderr: child.stderr_tail() })
                }
            });
        let seen = journal::Tail::default().poll(&acks).map_or(0, |l| l.saturating_sub(1));
        let reaped =
            child.kill_and_reap().check().map_err(|error| Outcome::Error(Failure::RacerReap { racer: 0, error }));
        let reached = reached?;
        reaped?;
        Ok(KillPoint { trial, after_acks: seen.max(reached.acks), ..KillPoint::default() })
    }
}
