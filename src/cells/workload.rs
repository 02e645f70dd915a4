//! The trial shared by the cells whose child works until killed (cells 1 and
//! 3): spawn, wait for the window, confirm the child is alive, `SIGKILL` its
//! group, reap, parse the acks, audit the leg, recover twice, then hand the
//! recovered state and the acks to the cell's own check.
//!
//! Crash model: one `SIGKILL` per trial at a seeded number of acks; the only
//! valid end of the child is death by that signal.

use std::ffi::OsString;

use crashcells_protocol::Ack;
use crashcells_protocol::Dump;

use super::sweep::Census;
use crate::audit::audit_leg;
use crate::harness::Running;
use crate::journal;
use crate::kill::timed::{WaitError, phase_delay, timed_target, wait_for_acks};
use crate::plan::Job;
use crate::report::KillPoint;
use crate::trial::{Context, Outcome, Trial, TrialEnv};

/// A cell's check: the violations in a recovered state, given the acks.
pub type Check = fn(&Dump, &[Ack]) -> Violations;

/// What a check found: a line per violation and the facts a reader needs.
#[derive(Debug, Default)]
pub struct Violations {
    pub found: Vec<String>,
    pub details: Vec<String>,
}

/// The child operation and window of a workload cell.
pub struct Workload {
    pub op: &'static str,
    pub window: u64,
    /// Acks a syscall census runs to: a few operations after setup.
    pub sweep_acks: u64,
    pub check: Check,
}

/// Runs trial `index` of `job`.
pub fn trial(job: &Job, ctx: &Context, w: &Workload, index: u32) -> Trial {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let env = match TrialEnv::new(ctx, leg, &format!("{}-{}-t{index}", job.cell.id, leg.name)) {
        Ok(env) => env,
        Err(e) => return Trial::new(index, None).conclude(Outcome::Error(format!("trial folder: {e}"))),
    };
    let seed = crate::seed::derive(job.seed, &[&index.to_string()]);
    let mut trial = Trial::new(index, None);
    let outcome = run(job, ctx, w, &env, seed, &mut trial);
    trial.env = Some(env);
    trial.conclude(outcome)
}

/// The child's arguments for workload `op` in `env`.
pub(super) fn args(ctx: &Context, env: &TrialEnv, op: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> =
        vec![op.into(), "--db".into(), env.db.clone().into(), "--acks".into(), env.acks.clone().into()];
    if let Some(m) = &ctx.mutant {
        args.extend(["--mutant".into(), m.into()]);
    }
    args
}

fn spawn(ctx: &Context, env: &TrialEnv, op: &str) -> std::io::Result<Running> {
    Running::spawn(ctx.child.command(&args(ctx, env, op), &env.home), Some(&env.stderr))
}

fn run(job: &Job, ctx: &Context, w: &Workload, env: &TrialEnv, seed: u64, trial: &mut Trial) -> Outcome {
    let mut child = match spawn(ctx, env, w.op) {
        Ok(c) => c,
        Err(e) => return Outcome::Error(format!("could not start the child `{}`: {e}", ctx.child.display())),
    };
    let target = timed_target(w.window, seed);
    let reached = match wait_for_acks(&mut child, &env.acks, target, ctx.deadline) {
        Ok(r) => r,
        Err(WaitError::Exited(why)) => return Outcome::Error(why),
        Err(WaitError::Io(why)) => return Outcome::Error(why),
        Err(WaitError::Interrupted) => return Outcome::Error(super::INTERRUPTED.into()),
        Err(WaitError::Deadline { acks }) => {
            return Outcome::Error(format!(
                "child stalled: {acks} of {target} acks within the {:?} deadline; child killed; stderr: {}",
                ctx.deadline,
                or_empty(&child.stderr_tail())
            ));
        }
    };
    std::thread::sleep(phase_delay(seed, reached.mean_op));
    if !child.is_alive() {
        return Outcome::Error(format!("child was not alive at the kill ({})", child.stderr_tail()));
    }
    let seen = crate::journal::Tail::default().poll(&env.acks).map_or(reached.acks, |l| l.saturating_sub(1));
    trial.kill_point = Some(KillPoint { trial: trial.index, after_acks: seen, ..KillPoint::default() });
    if let Err(why) = child.kill_and_reap().check() {
        return Outcome::Error(why.to_string());
    }
    after_kill(job, ctx, w, env, trial, None)
}

/// A stderr tail for a reason line; an empty one says so.
fn or_empty(tail: &str) -> &str {
    if tail.is_empty() { "(empty)" } else { tail }
}

/// Everything after the reap: acks, audit, recovery, checks. A syscall
/// trial takes the leg audit of its sweep's census: a kill point may land
/// before the header or the ready record reach their final state, which says
/// nothing about the mode the leg ran in.
pub(super) fn after_kill(
    job: &Job,
    ctx: &Context,
    w: &Workload,
    env: &TrialEnv,
    trial: &mut Trial,
    census: Option<&Census>,
) -> Outcome {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let bytes = std::fs::read(&env.acks).unwrap_or_default();
    let journal = match journal::parse(&bytes) {
        Ok(j) => j,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let Some(ready) = journal.ready.as_ref().or(census.map(|c| &c.ready)) else {
        return Outcome::Error("the child wrote no ready record".into());
    };
    if let Err(e) = super::check_protocol(ready) {
        return Outcome::Error(e);
    }
    trial.acked = journal.acks.len() as u64;
    trial.synchronous = ready.synchronous.clone();
    let audit = census.map_or_else(|| audit_leg(&env.db, ready, leg), |c| c.audit.clone());
    let honored = audit.honored;
    let reason = audit.reason.clone();
    trial.audit = Some(audit);
    if !honored {
        return Outcome::Skip(reason);
    }
    let recovered = match crate::recovery::recover(ctx, env) {
        Ok(r) => r,
        Err(e) => return Outcome::Error(e),
    };
    super::judge(&recovered, &journal.acks, w.check, trial)
}
