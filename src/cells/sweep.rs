//! Syscall sweeps: a census of a short workload's kill points, then one trial
//! per point, spread over `--jobs` threads (each trial's tracer is the thread
//! that spawned its child, as ptrace requires).
//!
//! Crash model: see [`crate::kill::syscall`]: the child is stopped at the
//! entry of its Nth file-mutating call on the store's files or the ack
//! journal and killed there, for N = 1..=M+1. Cells 1 and 3 check their
//! clause after each kill exactly as after a timed one.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crashcells_protocol::Ready;

use super::workload::{Workload, after_kill, args};
use crate::audit::{Audit, audit_leg};
use crate::harness::{TraceError, Traced};
use crate::journal;
use crate::kill::syscall::{Driven, Goal, Targets, drive, filter, sweep_points, unsupported_arch};
use crate::plan::Job;
use crate::trial::{Context, Outcome, Trial, TrialEnv};

/// What a trace failure means for a trial: refused tracing is a skip with
/// the reason; anything else is the harness's error.
pub fn trace_outcome(e: TraceError, ctx: &Context) -> Outcome {
    match e {
        TraceError::NotPermitted(why) => Outcome::Skip(format!("syscall kill points unavailable: {why}")),
        TraceError::Deadline => Outcome::Error(format!("the traced child overstayed the {:?} deadline", ctx.deadline)),
        TraceError::Io(why) => Outcome::Error(format!("tracing the child: {why}")),
    }
}

/// Whether syscall kill points can run here at all; `Err` is the skip or
/// error outcome that ends the result.
pub fn preflight() -> Result<&'static [seccompiler::sock_filter], Outcome> {
    if let Some(why) = unsupported_arch() {
        return Err(Outcome::Skip(why));
    }
    filter().map_err(Outcome::Error)
}

/// Runs `run` for each point on up to `jobs` threads, in ascending order of
/// points. After a point that does not pass, higher points are not started,
/// and the trials kept are those up to the lowest such point, which comes
/// last: the decisive trial does not depend on scheduling.
pub fn parallel(points: &[u64], jobs: usize, run: &(dyn Fn(u64) -> Trial + Sync)) -> Vec<Trial> {
    let next = AtomicUsize::new(0);
    let lowest_bad = AtomicU64::new(u64::MAX);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, points.len().max(1)) {
            s.spawn(|| {
                while let Some(&p) = points.get(next.fetch_add(1, Ordering::SeqCst)) {
                    if p > lowest_bad.load(Ordering::SeqCst) {
                        break;
                    }
                    let mut t = run(p);
                    if t.outcome == Outcome::Pass {
                        t.env = None;
                    } else {
                        lowest_bad.fetch_min(p, Ordering::SeqCst);
                    }
                    done.lock().expect("no sweep thread panics holding the list").push(t);
                }
            });
        }
    });
    let mut trials = done.into_inner().expect("no sweep thread panicked");
    let bad = lowest_bad.into_inner();
    trials.retain(|t| u64::from(t.index) <= bad);
    trials.sort_by_key(|t| (t.outcome != Outcome::Pass, t.index));
    trials
}

/// What a sweep learns from its census: how many kill points the workload
/// has, the child's ready record, and the leg audit of the finished census
/// (the mode the leg really ran in).
#[derive(Clone, Debug)]
pub struct Census {
    pub points: u64,
    pub ready: Ready,
    pub audit: Audit,
}

/// The trials of a syscall result of a workload cell (1 or 3).
pub fn workload(job: &Job, ctx: &Context, w: &Workload) -> Vec<Trial> {
    let filter = match preflight() {
        Ok(f) => f,
        Err(outcome) => return vec![Trial::new(0, None).conclude(outcome)],
    };
    let census = match census(job, ctx, w, filter) {
        Ok(c) => c,
        Err(trial) => return vec![*trial],
    };
    if !census.audit.honored {
        let mut t = Trial::new(0, None).conclude(Outcome::Skip(census.audit.reason.clone()));
        t.audit = Some(census.audit);
        return vec![t];
    }
    let points = sweep_points(census.points, ctx.only_point, ctx.points, job.seed);
    parallel(&points, ctx.jobs, &|n| point_trial(job, ctx, w, filter, n, &census))
}

fn label(job: &Job, what: &str) -> String {
    format!("{}-{}-{what}", job.cell.id, job.leg.as_ref().map_or("-", |l| l.name.as_str()))
}

/// Runs the workload traced until `sweep_acks` acks and one more point, kills
/// it there and audits the leg.
fn census(
    job: &Job,
    ctx: &Context,
    w: &Workload,
    filter: &'static [seccompiler::sock_filter],
) -> Result<Census, Box<Trial>> {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let fail = |env: Option<TrialEnv>, o: Outcome| {
        let mut t = Trial::new(0, None).conclude(o);
        t.env = env;
        Box::new(t)
    };
    let env = TrialEnv::new(ctx, leg, &label(job, "census"))
        .map_err(|e| fail(None, Outcome::Error(format!("trial folder: {e}"))))?;
    let cmd = ctx.child.command(&args(ctx, &env, w.op), &env.home);
    let mut child = match Traced::spawn(cmd, Some(&env.stderr), filter, ctx.deadline) {
        Ok(c) => c,
        Err(e) => return Err(fail(Some(env), trace_outcome(e, ctx))),
    };
    let total = match drive(&mut child, &Targets::new(&env.db, &env.acks), Goal::Census { acks: w.sweep_acks }) {
        Ok(Driven::At(p)) => p.ordinal,
        Ok(Driven::Exited { exit, counted }) => {
            let why = format!("census: the child ended ({exit}) after {counted} kill points: {}", child.stderr_tail());
            return Err(fail(Some(env), Outcome::Error(why)));
        }
        Err(e) => return Err(fail(Some(env), trace_outcome(e, ctx))),
    };
    if let Err(why) = child.kill_and_reap().check() {
        return Err(fail(Some(env), Outcome::Error(format!("census: {why}"))));
    }
    let bytes = std::fs::read(&env.acks).unwrap_or_default();
    match journal::parse(&bytes).map(|j| j.ready) {
        Ok(Some(ready)) => {
            let audit = audit_leg(&env.db, &ready, leg);
            Ok(Census { points: total, ready, audit })
        }
        Ok(None) => Err(fail(Some(env), Outcome::Error("census: the child wrote no ready record".into()))),
        Err(e) => Err(fail(Some(env), Outcome::Error(format!("census: {e}")))),
    }
}

/// One trial: kill at point `n`, then judge like any killed trial.
fn point_trial(
    job: &Job,
    ctx: &Context,
    w: &Workload,
    filter: &'static [seccompiler::sock_filter],
    n: u64,
    census: &Census,
) -> Trial {
    let leg = job.leg.as_ref().expect("a live cell runs on a leg");
    let index = u32::try_from(n).unwrap_or(u32::MAX);
    let env = match TrialEnv::new(ctx, leg, &label(job, &format!("p{n}"))) {
        Ok(env) => env,
        Err(e) => return Trial::new(index, None).conclude(Outcome::Error(format!("trial folder: {e}"))),
    };
    let mut trial = Trial::new(index, None);
    let mut outcome = kill_at(ctx, w, &env, filter, n, &mut trial);
    if outcome == Outcome::Pass {
        outcome = after_kill(job, ctx, w, &env, &mut trial, Some(census));
    }
    if let Some(kp) = trial.kill_point.as_mut() {
        kp.after_acks = trial.acked;
        if outcome != Outcome::Pass {
            let _ = std::fs::write(env.path("kill-point.json"), serde_json::to_string_pretty(kp).unwrap_or_default());
        }
    }
    trial.env = Some(env);
    trial.conclude(outcome)
}

/// Spawns the workload traced and kills it at point `n`; `Pass` means the
/// kill landed as planned and the trial can be judged.
fn kill_at(
    ctx: &Context,
    w: &Workload,
    env: &TrialEnv,
    filter: &'static [seccompiler::sock_filter],
    n: u64,
    trial: &mut Trial,
) -> Outcome {
    let cmd = ctx.child.command(&args(ctx, env, w.op), &env.home);
    let mut child = match Traced::spawn(cmd, Some(&env.stderr), filter, ctx.deadline) {
        Ok(c) => c,
        Err(e) => return trace_outcome(e, ctx),
    };
    let point = match drive(&mut child, &Targets::new(&env.db, &env.acks), Goal::KillAt(n)) {
        Ok(Driven::At(p)) => p,
        Ok(Driven::Exited { exit, counted }) => {
            let tail = child.stderr_tail();
            return Outcome::Error(format!(
                "the child ended ({exit}) after {counted} kill points, before point {n}: {tail}"
            ));
        }
        Err(e) => return trace_outcome(e, ctx),
    };
    trial.kill_point = Some(point.kill_point(trial.index, 0));
    match child.kill_and_reap().check() {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Error(why.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            child: crate::harness::ChildCommand { program: "child".into(), prefix: vec![] },
            work_root: std::env::temp_dir(),
            evidence_root: std::env::temp_dir(),
            mutant: None,
            deadline: std::time::Duration::from_secs(1),
            trials: None,
            only_trial: None,
            seed: 1,
            only_point: None,
            points: None,
            jobs: 2,
            matrix_arg: "default".into(),
            child_arg: None,
            catalog_arg: None,
        }
    }

    #[test]
    fn refused_tracing_skips_with_the_reason_and_a_deadline_is_an_error() {
        let skip = trace_outcome(TraceError::NotPermitted("PTRACE_TRACEME is not permitted here".into()), &ctx());
        assert!(matches!(&skip, Outcome::Skip(r) if r.contains("PTRACE_TRACEME")), "{skip:?}");
        assert!(matches!(trace_outcome(TraceError::Deadline, &ctx()), Outcome::Error(_)));
    }

    fn trial(index: u32, outcome: Outcome) -> Trial {
        Trial::new(index, None).conclude(outcome)
    }

    #[test]
    fn a_parallel_sweep_keeps_the_points_up_to_the_lowest_that_does_not_pass_last() {
        let points: Vec<u64> = (1..=20).collect();
        let run = |p: u64| {
            if p.is_multiple_of(7) {
                trial(p as u32, Outcome::Fire(format!("at {p}")))
            } else {
                trial(p as u32, Outcome::Pass)
            }
        };
        let trials = parallel(&points, 3, &run);
        let indices: Vec<u32> = trials.iter().map(|t| t.index).collect();
        assert_eq!(indices, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(trials.last().unwrap().outcome, Outcome::Fire("at 7".into()));
        assert_eq!(parallel(&points, 2, &|p| trial(p as u32, Outcome::Pass)).len(), 20);
    }
}
