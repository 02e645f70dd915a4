//! Cell 2, consume-once.
//!
//! Clause: a parked handoff is claimed by exactly one of N racing processes.
//!
//! Crash model: none is needed for the clause itself; the race is real.
//! Each racer opens the store, writes its ready record, and blocks on a
//! shared lock of a barrier file the driver holds exclusively; dropping the
//! driver's lock releases all of them at once. Each exits 0 (WON) or 10
//! (LOST); any other end, a signal or a deadline is an `error`, never a loss.

use std::ffi::OsString;
use std::fs::File;
use std::time::Instant;

use crashcells_protocol::{EXIT_LOST, EXIT_WON};

use crate::audit::audit_leg;
use crate::harness::{Exit, POLL, Running, interrupted, run_to_end};
use crate::journal;
use crate::matrix::Leg;
use crate::plan::Job;
use crate::trial::{Context, Outcome, Trial, TrialEnv};

pub const HANDOFF: &str = "handoff";

/// One race: trial `index` of the result.
pub fn trial(job: &Job, ctx: &Context, racers: u32, index: u32) -> Trial {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let env = match TrialEnv::new(ctx, leg, &format!("{}-{}-t{index}", job.cell.id, leg.name)) {
        Ok(env) => env,
        Err(e) => return Trial::new(index, None).conclude(Outcome::Error(format!("trial folder: {e}"))),
    };
    let mut trial = Trial::new(index, None);
    let outcome = race(ctx, &env, racers, leg, &mut trial);
    trial.env = Some(env);
    trial.conclude(outcome)
}

pub(super) fn racer_args(ctx: &Context, env: &TrialEnv, r: u32) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["claim".into(), "--db".into(), env.db.clone().into()];
    args.extend(["--acks".into(), env.path(&format!("acks-r{r}.ndjson")).into()]);
    args.extend(["--session".into(), HANDOFF.into(), "--barrier".into(), env.path("barrier.lock").into()]);
    args.extend(["--claimant".into(), format!("r{r}").into()]);
    if let Some(m) = &ctx.mutant {
        args.extend(["--mutant".into(), m.into()]);
    }
    args
}

fn park(ctx: &Context, env: &TrialEnv) -> Result<(), String> {
    let args: Vec<OsString> =
        vec!["park".into(), "--db".into(), env.db.clone().into(), "--session".into(), HANDOFF.into()];
    let (exit, tail) =
        run_to_end(ctx.child.command(&args, &env.home), &env.path("park.stdout"), &env.stderr, ctx.deadline)
            .map_err(|e| format!("could not start the child `{}`: {e}", ctx.child.display()))?;
    match exit {
        Some(Exit::Code(0)) => Ok(()),
        Some(other) => Err(format!("park failed ({other}): {tail}")),
        None => Err("park did not finish within the deadline".into()),
    }
}

/// Parks the handoff and takes the barrier: the racers block on it until the
/// returned file is dropped, which releases all of them at once.
pub(super) fn park_behind_barrier(ctx: &Context, env: &TrialEnv) -> Result<File, String> {
    park(ctx, env)?;
    let barrier_path = env.path("barrier.lock");
    File::create(&barrier_path)
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| format!("barrier {}: {e}", barrier_path.display()))
}

fn race(ctx: &Context, env: &TrialEnv, racers: u32, leg: &Leg, trial: &mut Trial) -> Outcome {
    let barrier = match park_behind_barrier(ctx, env) {
        Ok(f) => f,
        Err(e) => return Outcome::Error(e),
    };
    let mut running = Vec::new();
    for r in 0..racers {
        let stderr = env.path(&format!("racer-r{r}.stderr"));
        match Running::spawn(ctx.child.command(&racer_args(ctx, env, r), &env.home), Some(&stderr)) {
            Ok(child) => running.push(child),
            Err(e) => return Outcome::Error(format!("could not start racer r{r}: {e}")),
        }
    }
    if let Err(e) = wait_ready(ctx, env, &mut running) {
        return Outcome::Error(e);
    }
    // Release every racer at once.
    drop(barrier);
    let exits = match wait_all(ctx, &mut running) {
        Ok(e) => e,
        Err(e) => return Outcome::Error(e),
    };
    judge_race(ctx, env, &exits, leg, trial)
}

/// Waits until every racer has written its ready record (it is then at the
/// barrier, or about to block on it).
fn wait_ready(ctx: &Context, env: &TrialEnv, running: &mut [Running]) -> Result<(), String> {
    let end = Instant::now() + ctx.deadline;
    let mut pending: Vec<u32> = (0..running.len() as u32).collect();
    while !pending.is_empty() {
        pending.retain(|r| std::fs::metadata(env.path(&format!("acks-r{r}.ndjson"))).map_or(true, |m| m.len() == 0));
        for (r, child) in running.iter_mut().enumerate() {
            if let Some(exit) = child.try_exit() {
                return Err(format!("racer r{r} ended before the barrier ({exit}): {}", child.stderr_tail()));
            }
        }
        if Instant::now() >= end {
            return Err(format!("racers {pending:?} were not ready within {:?}", ctx.deadline));
        }
        if interrupted().is_some() {
            return Err(super::INTERRUPTED.into());
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

pub(super) fn wait_all(ctx: &Context, running: &mut [Running]) -> Result<Vec<Exit>, String> {
    let end = Instant::now() + ctx.deadline;
    let mut exits = Vec::new();
    for (r, child) in running.iter_mut().enumerate() {
        match child.wait_until(end) {
            Some(exit) => exits.push(exit),
            None => return Err(format!("racer r{r} did not finish within {:?}", ctx.deadline)),
        }
    }
    Ok(exits)
}

fn judge_race(ctx: &Context, env: &TrialEnv, exits: &[Exit], leg: &Leg, trial: &mut Trial) -> Outcome {
    let mut won = 0;
    for (r, exit) in exits.iter().enumerate() {
        match exit {
            Exit::Code(EXIT_WON) => won += 1,
            Exit::Code(EXIT_LOST) => {}
            other => {
                let tail = crate::harness::stderr_tail(&env.path(&format!("racer-r{r}.stderr")));
                return Outcome::Error(format!("racer r{r} ended with {other}, neither WON (0) nor LOST (10): {tail}"));
            }
        }
    }
    let bytes = std::fs::read(env.path("acks-r0.ndjson")).unwrap_or_default();
    let ready = match journal::parse(&bytes).map(|j| j.ready) {
        Ok(Some(r)) => r,
        Ok(None) => return Outcome::Error("racer r0 wrote no ready record".into()),
        Err(e) => return Outcome::Error(e.to_string()),
    };
    if let Err(e) = super::check_protocol(&ready) {
        return Outcome::Error(e);
    }
    trial.synchronous = ready.synchronous.clone();
    let a = audit_leg(&env.db, &ready, leg);
    let (honored, reason) = (a.honored, a.reason.clone());
    trial.audit = Some(a);
    if !honored {
        return Outcome::Skip(reason);
    }
    trial.acked = 1;
    let recovered = match crate::recovery::recover(ctx, env) {
        Ok(r) => r,
        Err(e) => return Outcome::Error(e),
    };
    let check = move |d: &crashcells_protocol::Dump| race_violations(d, won, exits.len());
    super::judge_with(&recovered, &check, trial)
}

pub fn race_violations(dump: &crashcells_protocol::Dump, won: usize, racers: usize) -> super::workload::Violations {
    let mut v = super::workload::Violations::default();
    let claims =
        dump.messages.iter().filter(|m| m.session_id == HANDOFF && m.content.starts_with("claimed by")).count();
    let state = dump.sessions.iter().find(|s| s.id == HANDOFF).and_then(|s| s.handoff_state.clone());
    let shown = state.as_deref().unwrap_or("none");
    v.details.push(format!("{racers} racers: {won} WON; the store shows {claims} claim(s), handoff state {shown}"));
    if won != 1 {
        v.found.push(format!("{won} of {racers} racers won the handoff (exactly one must)"));
    }
    if claims != 1 {
        v.found.push(format!("the store shows the handoff claimed {claims} times"));
    }
    if state.as_deref() != Some("running") {
        v.found.push(format!("the handoff's state is {state:?} after the race, not \"running\""));
    }
    v
}
