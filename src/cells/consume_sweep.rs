//! Cell 2 under syscall kill points: one racer (r0) is traced and killed at
//! the entry of its Nth file-mutating call while the other seven race.
//!
//! Clause, with a crash: the store shows at most one claim, at most one racer
//! reports WON, and the killed racer's claim may or may not have landed. A
//! racer that reports WON committed its claim first, so a WON with no claim
//! in the store fires, as does a state that disagrees with the claims.
//!
//! Crash model: r0 is stopped at a call's entry and its group gets `SIGKILL`
//! there (its locks die with it); the others are never killed and must end
//! WON or LOST. The race itself is real, so r0's path (and its number of
//! points) can differ from the census's: a point r0 does not reach in a
//! trial leaves r0 to finish its race, which is judged the same way.

use std::fs::File;
use std::time::Instant;

use super::consume::{HANDOFF, park_behind_barrier, racer_args};
use super::sweep::{parallel, preflight, trace_outcome};
use super::workload::Violations;
use crate::audit::audit_leg;
use crate::harness::{Exit, POLL, Running, Traced};
use crate::journal;
use crate::kill::syscall::{Driven, Goal, Point, Targets, drive, sweep_points};
use crate::plan::Job;
use crate::trial::{Context, Outcome, Trial, TrialEnv};

use crashcells_protocol::Dump;
use crashcells_protocol::{EXIT_LOST, EXIT_WON};

type Filter = &'static [seccompiler::sock_filter];

/// How the traced racer ended.
enum RacerEnd {
    /// Killed at this point.
    Killed(Point),
    /// Finished its race after `counted` points.
    Exited(Exit, u64),
    Failed(Outcome),
}

/// The trials of cell 2's syscall result.
pub fn trials(job: &Job, ctx: &Context, racers: u32) -> Vec<Trial> {
    let filter = match preflight() {
        Ok(f) => f,
        Err(outcome) => return vec![Trial::new(0, None).conclude(outcome)],
    };
    // The census races r0 alone: it always wins, so it counts the points of
    // the longest path (the winning claim's commit included) and the count,
    // and with it `--points` and every repro, does not depend on who won.
    let census = race_trial(job, ctx, 1, filter, 0, Goal::KillAt(u64::MAX));
    let total = match (&census.outcome, census.kill_point.as_ref()) {
        (Outcome::Pass, Some(kp)) => kp.ordinal.unwrap_or(0),
        _ => return vec![census],
    };
    drop(census);
    let points = sweep_points(total, ctx.only_point, ctx.points, job.seed);
    parallel(&points, ctx.jobs, &|n| race_trial(job, ctx, racers, filter, n, Goal::KillAt(n)))
}

/// One race with r0 traced toward `goal`; trial `index` (0 for the census,
/// whose kill point records how many points r0 passed).
fn race_trial(job: &Job, ctx: &Context, racers: u32, filter: Filter, index: u64, goal: Goal) -> Trial {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let label = format!("{}-{}-p{index}", job.cell.id, leg.name);
    let mut trial = Trial::new(u32::try_from(index).unwrap_or(u32::MAX), None);
    let env = match TrialEnv::new(ctx, leg, &label) {
        Ok(env) => env,
        Err(e) => return trial.conclude(Outcome::Error(format!("trial folder: {e}"))),
    };
    let outcome = race(job, ctx, &env, racers, filter, goal, &mut trial);
    trial.env = Some(env);
    trial.conclude(outcome)
}

fn race(
    job: &Job,
    ctx: &Context,
    env: &TrialEnv,
    racers: u32,
    filter: Filter,
    goal: Goal,
    trial: &mut Trial,
) -> Outcome {
    let barrier = match park_behind_barrier(ctx, env) {
        Ok(f) => f,
        Err(e) => return Outcome::Error(e),
    };
    let r0_done = std::sync::atomic::AtomicBool::new(false);
    let (r0, others) = std::thread::scope(|s| {
        // The tracer must be the thread that spawns r0, and must keep
        // resuming it while this thread runs the barrier.
        let tracer = s.spawn(|| {
            let end = trace_r0(ctx, env, filter, goal);
            r0_done.store(true, std::sync::atomic::Ordering::SeqCst);
            end
        });
        let others = run_others(ctx, env, racers, barrier, &r0_done);
        (tracer.join().unwrap_or_else(|_| RacerEnd::Failed(Outcome::Error("the tracer panicked".into()))), others)
    });
    let others = match others {
        Ok(exits) => exits,
        Err(e) => return Outcome::Error(e),
    };
    let r0_exit = match r0 {
        RacerEnd::Failed(o) => return o,
        RacerEnd::Killed(p) => {
            trial.kill_point = Some(p.kill_point(trial.index, 0));
            None
        }
        RacerEnd::Exited(exit, counted) => {
            // The census records r0's number of points as its kill point.
            if goal_is_census(goal) {
                let p = Point {
                    ordinal: counted,
                    syscall: "exit",
                    file: crate::kill::syscall::FileKind::Acks,
                    offset: None,
                    len: None,
                };
                trial.kill_point = Some(p.kill_point(0, 0));
            } else {
                trial.details.push(format!("r0 finished its race ({exit}) before reaching its kill point"));
            }
            Some(exit)
        }
    };
    judge(job, ctx, env, r0_exit, &others, trial)
}

fn goal_is_census(goal: Goal) -> bool {
    matches!(goal, Goal::KillAt(u64::MAX))
}

/// Spawns r0 traced and drives it to `goal`.
fn trace_r0(ctx: &Context, env: &TrialEnv, filter: Filter, goal: Goal) -> RacerEnd {
    let cmd = ctx.child.command(&racer_args(ctx, env, 0), &env.home);
    let mut child = match Traced::spawn(cmd, Some(&env.path("racer-r0.stderr")), filter, ctx.deadline) {
        Ok(c) => c,
        Err(e) => return RacerEnd::Failed(trace_outcome(e, ctx)),
    };
    let targets = Targets::new(&env.db, &env.path("acks-r0.ndjson"));
    match drive(&mut child, &targets, goal) {
        Ok(Driven::At(p)) => {
            if let Err(why) = child.kill_and_reap().check() {
                return RacerEnd::Failed(Outcome::Error(format!("r0: {why}")));
            }
            RacerEnd::Killed(p)
        }
        Ok(Driven::Exited { exit, counted }) => RacerEnd::Exited(exit, counted),
        Err(e) => RacerEnd::Failed(trace_outcome(e, ctx)),
    }
}

/// Spawns r1.., waits until every racer is at the barrier (r0 too, unless it
/// was killed before it got there), releases them, and waits for r1.. to end.
fn run_others(
    ctx: &Context,
    env: &TrialEnv,
    racers: u32,
    barrier: File,
    r0_done: &std::sync::atomic::AtomicBool,
) -> Result<Vec<Exit>, String> {
    let mut running = Vec::new();
    for r in 1..racers {
        let stderr = env.path(&format!("racer-r{r}.stderr"));
        let child = Running::spawn(ctx.child.command(&racer_args(ctx, env, r), &env.home), Some(&stderr))
            .map_err(|e| format!("could not start racer r{r}: {e}"))?;
        running.push(child);
    }
    let end = Instant::now() + ctx.deadline;
    let ready = |r: u32| {
        std::fs::metadata(env.path(&format!("acks-r{r}.ndjson"))).is_ok_and(|m| m.len() > 0)
            || (r == 0 && r0_done.load(std::sync::atomic::Ordering::SeqCst))
    };
    while !(0..racers).all(ready) {
        for (i, c) in running.iter_mut().enumerate() {
            if !c.is_alive() {
                return Err(format!("racer r{} ended before the barrier: {}", i + 1, c.stderr_tail()));
            }
        }
        if Instant::now() >= end {
            return Err(format!("the racers were not ready within {:?}", ctx.deadline));
        }
        std::thread::sleep(POLL);
    }
    drop(barrier);
    let mut exits = Vec::new();
    for (i, child) in running.iter_mut().enumerate() {
        exits.push(child.wait_until(end).ok_or_else(|| format!("racer r{} did not finish in time", i + 1))?);
    }
    Ok(exits)
}

/// Racer `r`'s ready record, or why there is none.
fn ready_of(env: &TrialEnv, r: u32) -> Result<crashcells_protocol::Ready, String> {
    let bytes = std::fs::read(env.path(&format!("acks-r{r}.ndjson"))).unwrap_or_default();
    match journal::parse(&bytes).map(|j| j.ready) {
        Ok(Some(ready)) => Ok(ready),
        Ok(None) => Err(format!("racer r{r} wrote no ready record")),
        Err(e) => Err(e.to_string()),
    }
}

fn judge(job: &Job, ctx: &Context, env: &TrialEnv, r0: Option<Exit>, others: &[Exit], trial: &mut Trial) -> Outcome {
    let mut won = 0;
    for (r, exit) in r0.iter().chain(others).enumerate() {
        let r = if r0.is_some() { r } else { r + 1 };
        match exit {
            Exit::Code(EXIT_WON) => won += 1,
            Exit::Code(EXIT_LOST) => {}
            other => return Outcome::Error(format!("racer r{r} ended with {other}, neither WON (0) nor LOST (10)")),
        }
    }
    // r1 speaks for the leg (r0 may be killed before its ready record);
    // the census races r0 alone, which then always wrote one.
    let ready = match ready_of(env, 1).or_else(|_| ready_of(env, 0)) {
        Ok(r) => r,
        Err(e) => return Outcome::Error(e),
    };
    trial.synchronous = ready.synchronous.clone();
    let a = audit_leg(&env.db, &ready, job.leg.as_ref().expect("a live cell runs on a leg"));
    let (honored, reason) = (a.honored, a.reason.clone());
    trial.audit = Some(a);
    if !honored {
        return Outcome::Skip(reason);
    }
    trial.acked = u64::from(won);
    let recovered = match crate::recovery::recover(ctx, env) {
        Ok(r) => r,
        Err(e) => return Outcome::Error(e),
    };
    let killed = r0.is_none();
    super::judge_with(&recovered, &|d| violations(d, won, killed), trial)
}

/// At most one claim and one WON; a WON needs its claim; the state agrees
/// with the claims. With r0 killed, no WON and one claim is r0's landed claim.
fn violations(dump: &Dump, won: u32, killed: bool) -> Violations {
    let mut v = Violations::default();
    let claims =
        dump.messages.iter().filter(|m| m.session_id == HANDOFF && m.content.starts_with("claimed by")).count();
    let state = dump.sessions.iter().find(|s| s.id == HANDOFF).and_then(|s| s.handoff_state.clone());
    v.details.push(format!("r0 killed: {killed}; {won} WON; the store shows {claims} claim(s), state {state:?}"));
    if won > 1 {
        v.found.push(format!("{won} racers won the handoff (at most one may)"));
    }
    if claims > 1 {
        v.found.push(format!("the store shows the handoff claimed {claims} times"));
    }
    if won == 1 && claims == 0 {
        v.found.push("a racer reported WON but the store shows no claim".into());
    }
    if !killed && won == 0 {
        v.found.push("no racer won and none was killed".into());
    }
    let expected = if claims == 0 { "pending" } else { "running" };
    if state.as_deref() != Some(expected) {
        v.found.push(format!("the handoff's state is {state:?} with {claims} claim(s), not {expected:?}"));
    }
    v
}
