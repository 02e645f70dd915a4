//! Crash sources of a workload cell (one child that runs its operation
//! until killed): a timed kill, a kill at syscall point N, and the census
//! that counts a workload's points. A timed trial whose child's ready record
//! already shows the leg is not honored is skipped at once, without waiting
//! for its window.
//!
//! Crash model: timed, the child runs unhindered until the driver has seen a
//! seeded number of acks, then, after a seeded fraction of an operation's
//! time, its whole group gets `SIGKILL`. At a syscall point, the child is
//! stopped at the entry of its Nth file-mutating call on the store's files
//! or the ack journal and killed there: the call never runs. Either way the
//! only valid end is death by that signal. A syscall workload runs with
//! `--stop-after` to its own end (the census counts every point, the close
//! of the store included: in WAL, the last connection's checkpoint).

use std::time::Instant;

use crashcells_protocol::{Op, OpArgs};

use super::pending::Pending;
use super::sweep::{Census, Filter, Sweepable, trace_outcome};
use super::verdict::{Ended, conclude, prepare};
use super::{Context, Outcome, Trial};
use crate::cells::{Cell, End};
use crate::harness::{POLL, Running, Traced, interrupted};
use crate::journal;
use crate::kill::KillPoint;
use crate::kill::syscall::{Driven, FileKind, Goal, Point, Targets, drive};
use crate::kill::timed::{WaitError, phase_delay, timed_target, wait_for_acks};
use crate::legaudit::{Audit, audit_leg, refused_at_ready};
use crate::matrix::Leg;
use crate::plan::Job;
use crate::trialdir::TrialEnv;

/// A workload cell's job, as its crash sources need it.
pub struct Workload<'a> {
    pub job: &'a Job,
    pub leg: &'a Leg,
    pub cell: &'a dyn Cell,
    pub ctx: &'a Context,
    pub op: Op,
    /// A sweep's workload: this many operations (`--stop-after`), then the
    /// child ends on its own; every point on the way is a crash state.
    pub sweep_acks: u64,
    /// The step each recovery pass runs before `dump`, if any.
    pub recovery: Option<Op>,
}

impl Sweepable for Workload<'_> {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        self.count_points(filter)
    }

    fn at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        self.kill_at(filter, n, census)
    }
}

impl Workload<'_> {
    /// A private folder for a sweep's trial `label`: every trial of a sweep
    /// runs the same seeded workload as its census, so a kill point means the
    /// same call in each.
    pub(super) fn env(&self, label: &str) -> Result<TrialEnv, Outcome> {
        self.seeded_env(label, &[])
    }

    /// A private folder for trial `label`, whose workload is seeded with
    /// the seed derived from `parts`.
    fn seeded_env(&self, label: &str, parts: &[&str]) -> Result<TrialEnv, Outcome> {
        let label = format!("{}-{}-{label}", self.job.cell.id, self.leg.name);
        let mut env = TrialEnv::new(&self.ctx.work_root, self.leg, &label)
            .map_err(|e| Outcome::Error(format!("trial folder: {e}")))?;
        env.seed = crate::seed::derive(self.job.seed, &[parts, &["workload"]].concat());
        env.recovery_step = self.recovery.map(|op| OpArgs::new(op).mutant(self.ctx.mutant()));
        Ok(env)
    }

    /// The workload's arguments in `env`, with the flags its operation takes.
    fn args(&self, env: &TrialEnv) -> OpArgs {
        let mut args = OpArgs::new(self.op).db(&env.db).acks(&env.acks).mutant(self.ctx.mutant());
        if self.op.seeded() {
            args = args.seed(env.seed);
        }
        if self.op.uses_transport() {
            args = args.transport(&env.transport);
        }
        args
    }

    /// The child's command for the workload in `env`: run until killed.
    fn command(&self, env: &TrialEnv) -> std::process::Command {
        self.ctx.child.command(&self.args(env).to_args(), &env.home)
    }

    /// A sweep's command: the workload's operations, then the child's own end.
    pub(super) fn sweep_command(&self, env: &TrialEnv) -> std::process::Command {
        self.ctx.child.command(&self.args(env).stop_after(self.sweep_acks).to_args(), &env.home)
    }

    /// The files whose calls are kill points: the store's, the ack journal,
    /// and the transport of a workload that sends.
    pub(super) fn targets(&self, env: &TrialEnv) -> Targets {
        Targets::new(&env.db, &env.acks).with(&env.transport, FileKind::Transport)
    }

    /// Trial `index` of a timed result: kill once the seeded target of acks
    /// is reached, then read what it left; its recovery and judgement are
    /// [`super::pending`]'s, batched with the result's other trials.
    pub fn timed(&self, window: u64, index: u32) -> Pending {
        let env = match self.seeded_env(&format!("t{index}"), &[&index.to_string()]) {
            Ok(env) => env,
            Err(outcome) => return Pending::ended(Trial::ended(index, outcome)),
        };
        let mut trial = Trial::new(index);
        let seed = crate::seed::derive(self.job.seed, &[&index.to_string()]);
        let prepared = self.kill_timed(&env, window, seed, &mut trial).and_then(|()| {
            let ended = [Ended { name: "child".into(), journal: env.acks.clone(), end: End::Killed }];
            prepare(self.cell, self.leg, &env, &ended, None, &mut trial)
        });
        Pending::prepared(trial, env, prepared)
    }

    fn kill_timed(&self, env: &TrialEnv, window: u64, seed: u64, trial: &mut Trial) -> Result<(), Outcome> {
        let started = Instant::now();
        let mut child = Running::spawn(self.command(env), Some(&env.stderr))
            .map_err(|e| Outcome::Error(format!("could not start the child `{}`: {e}", self.ctx.child.display())))?;
        if let Some((audit, synchronous)) = self.refused_at_ready(&mut child, env) {
            let reason = audit.reason.clone();
            (trial.audit, trial.synchronous) = (Some(audit), synchronous);
            child.kill_and_reap().check().map_err(|e| Outcome::Error(e.to_string()))?;
            return Err(Outcome::Skip(reason));
        }
        let target = timed_target(window, seed);
        let left = self.ctx.deadline.saturating_sub(started.elapsed());
        let reached = wait_for_acks(&mut child, &env.acks, target, left).map_err(|e| match e {
            e @ (WaitError::Exited { .. } | WaitError::Io(_)) => Outcome::Error(e.to_string()),
            WaitError::Interrupted => Outcome::Interrupted("waiting for acks".into()),
            WaitError::Deadline { acks } => Outcome::Error(format!(
                "child stalled: {acks} of {target} acks within the {:?} deadline; child killed; stderr: {}",
                self.ctx.deadline,
                or_empty(&child.stderr_tail())
            )),
        })?;
        std::thread::sleep(phase_delay(seed, reached.mean_op));
        if !child.is_alive() {
            return Err(Outcome::Error(format!("child was not alive at the kill ({})", child.stderr_tail())));
        }
        let seen = journal::Tail::default().poll(&env.acks).map_or(reached.acks, |l| l.saturating_sub(1));
        trial.kill_point = Some(KillPoint { trial: trial.index, after_acks: seen, ..KillPoint::default() });
        child.kill_and_reap().check().map_err(|e| Outcome::Error(e.to_string()))
    }

    /// Waits for the child's ready record and returns the leg audit (and the
    /// level the child runs at) if the record already shows the leg is not
    /// honored: the leg is then skipped at once, not after its window of
    /// acks. `None` when it agrees, or when the child ended, stalled or wrote
    /// something else first: the timed wait that follows reports those.
    fn refused_at_ready(&self, child: &mut Running, env: &TrialEnv) -> Option<(Audit, Option<String>)> {
        let end = Instant::now() + self.ctx.deadline;
        while Instant::now() < end && interrupted().is_none() && child.is_alive() {
            let bytes = std::fs::read(&env.acks).unwrap_or_default();
            if bytes.contains(&b'\n') {
                let ready = journal::parse(&bytes).ok()?.ready?;
                return refused_at_ready(&env.db, &ready, self.leg).map(|a| (a, ready.synchronous));
            }
            std::thread::sleep(POLL);
        }
        None
    }

    /// The killed child's files to a verdict.
    fn judge(&self, env: &TrialEnv, census: Option<&Census>, trial: &mut Trial) -> Outcome {
        let ended = [Ended { name: "child".into(), journal: env.acks.clone(), end: End::Killed }];
        conclude(self.cell, self.leg, self.ctx, env, &ended, census, trial)
    }

    /// Runs the workload traced to its end, counting its points (and one
    /// more: the state its own end left), and audits the leg.
    fn count_points(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        let fail = |env: Option<TrialEnv>, o: Outcome| {
            let t = Trial::ended(0, o);
            Box::new(match env {
                Some(env) => t.with_env(env),
                None => t,
            })
        };
        let env = self.env("census").map_err(|o| fail(None, o))?;
        let total = match self.traced_to_end(&env, filter) {
            Ok(total) => total + 1,
            Err(o) => return Err(fail(Some(env), census_outcome(o))),
        };
        match self.census_of(&env, total) {
            Ok(census) => Ok(census),
            Err(o) => Err(fail(Some(env), o)),
        }
    }

    /// What a census learns from a run to the end that passed `total`
    /// points: the child's ready record and the leg audit of its files.
    pub(super) fn census_of(&self, env: &TrialEnv, total: u64) -> Result<Census, Outcome> {
        let bytes = std::fs::read(&env.acks).unwrap_or_default();
        match journal::parse(&bytes).map(|j| j.ready) {
            Ok(Some(ready)) => Ok(Census { points: total, audit: audit_leg(&env.db, &ready, self.leg), ready }),
            Ok(None) => Err(Outcome::Error("census: the child wrote no ready record".into())),
            Err(e) => Err(Outcome::Error(format!("census: {e}"))),
        }
    }

    /// Runs the sweep's workload traced to its own end; its points.
    fn traced_to_end(&self, env: &TrialEnv, filter: Filter) -> Result<u64, Outcome> {
        let mut child = Traced::spawn(self.sweep_command(env), Some(&env.stderr), filter, self.ctx.deadline)
            .map_err(|e| trace_outcome(e, self.ctx))?;
        match drive(&mut child, &self.targets(env), Goal::ToEnd) {
            Ok(Driven::Exited { exit, counted }) => ended_well(exit, counted, &child.stderr_tail()),
            Ok(Driven::At(p)) => Err(Outcome::Error(format!("the census stopped at point {}", p.ordinal))),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }

    /// One trial of a sweep: kill at point `n`, then judge like any killed trial.
    pub(super) fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        let index = u32::try_from(n).unwrap_or(u32::MAX);
        let env = match self.env(&format!("p{n}")) {
            Ok(env) => env,
            Err(outcome) => return Trial::ended(index, outcome),
        };
        let mut trial = Trial::new(index);
        let outcome = match self.traced_to(&env, filter, Goal::KillAt(n)) {
            Ok(kp) => {
                trial.kill_point = Some(kp);
                self.judge(&env, Some(census), &mut trial)
            }
            Err(o) => o,
        };
        if let Some(kp) = trial.kill_point.as_mut() {
            kp.after_acks = trial.acked;
            if outcome != Outcome::Pass {
                let _ =
                    std::fs::write(env.path("kill-point.json"), serde_json::to_string_pretty(kp).unwrap_or_default());
            }
        }
        trial.conclude(outcome).with_env(env)
    }

    /// Spawns the workload traced, drives it to `goal` and kills it there.
    fn traced_to(&self, env: &TrialEnv, filter: Filter, goal: Goal) -> Result<KillPoint, Outcome> {
        let mut child = Traced::spawn(self.sweep_command(env), Some(&env.stderr), filter, self.ctx.deadline)
            .map_err(|e| trace_outcome(e, self.ctx))?;
        let point = match drive(&mut child, &self.targets(env), goal) {
            Ok(Driven::At(p)) => p,
            // The point after the last call: the child's own end is the state.
            Ok(Driven::Exited { exit, counted }) if matches!(goal, Goal::KillAt(n) if n == counted + 1) => {
                ended_well(exit, counted, &child.stderr_tail())?;
                return Ok(Point::end(counted + 1).kill_point(u32::try_from(counted + 1).unwrap_or(u32::MAX), 0));
            }
            Ok(Driven::Exited { exit, counted }) => {
                let at = match goal {
                    Goal::KillAt(n) => format!(", before point {n}"),
                    _ => String::new(),
                };
                let tail = child.stderr_tail();
                return Err(Outcome::Error(format!(
                    "the child ended ({exit}) after {counted} kill points{at}: {tail}"
                )));
            }
            Err(e) => return Err(trace_outcome(e, self.ctx)),
        };
        child.kill_and_reap().check().map_err(|e| Outcome::Error(e.to_string()))?;
        Ok(point.kill_point(u32::try_from(point.ordinal).unwrap_or(u32::MAX), 0))
    }
}

/// A sweep's workload ends with exit code 0 after its `--stop-after`
/// operations; anything else is the child's failure.
pub(super) fn ended_well(exit: crate::harness::Exit, counted: u64, tail: &str) -> Result<u64, Outcome> {
    match exit {
        crate::harness::Exit::Code(0) => Ok(counted),
        other => {
            Err(Outcome::Error(format!("the child ended ({other}) after {counted} kill points: {}", or_empty(tail))))
        }
    }
}

/// A census's failure names the census.
fn census_outcome(o: Outcome) -> Outcome {
    match o {
        Outcome::Error(why) => Outcome::Error(format!("census: {why}")),
        other => other,
    }
}

/// A stderr tail for a reason line; an empty one says so.
fn or_empty(tail: &str) -> &str {
    if tail.is_empty() { "(empty)" } else { tail }
}
