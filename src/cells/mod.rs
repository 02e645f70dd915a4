//! The cells: one probe per contract clause. Each live cell runs trials and
//! this module folds them into one result per cell × leg × kill mode, keeps
//! the evidence of a fire or an error, and writes the command that reruns it.

pub mod consume;
pub mod consume_sweep;
pub mod prefix;
pub mod rotation;
pub mod sweep;
pub mod workload;

use std::time::Instant;

use crashcells_protocol::Dump;
use crashcells_protocol::{Ack, PROTOCOL, Ready};

use crate::catalog::Status;
use crate::plan::Job;
use crate::recovery::Recovered;
use crate::report::{CellResult, KillMode, Verdict};
use crate::trial::{Context, Outcome, Trial};
use workload::{Check, Violations};

/// The reason of a result whose trial was cut short by `SIGINT`/`SIGTERM`.
pub const INTERRUPTED: &str = "interrupted before a verdict";

/// The child must speak our protocol version; anything else is an error.
pub fn check_protocol(ready: &Ready) -> Result<(), String> {
    if ready.protocol == PROTOCOL {
        Ok(())
    } else {
        Err(format!("the child speaks protocol {} but this driver speaks {PROTOCOL}", ready.protocol))
    }
}

/// Judges a recovered state with a check over the acks.
pub fn judge(recovered: &Recovered, acks: &[Ack], check: Check, trial: &mut Trial) -> Outcome {
    judge_with(recovered, &|d| check(d, acks), trial)
}

/// Judges a recovered state: determinism, integrity, then the cell's check.
pub fn judge_with(recovered: &Recovered, check: &dyn Fn(&Dump) -> Violations, trial: &mut Trial) -> Outcome {
    let v = check(&recovered.dump);
    trial.details.extend(v.details);
    trial.details.push(format!("integrity_check: {}", recovered.dump.integrity));
    let mut found = v.found;
    if let Some(why) = &recovered.nondeterministic {
        found.insert(0, why.clone());
    }
    if recovered.dump.integrity != "ok" {
        found.insert(0, format!("integrity_check says {}", recovered.dump.integrity));
    }
    match found.len() {
        0 => Outcome::Pass,
        1 => Outcome::Fire(found.remove(0)),
        n => Outcome::Fire(format!("{} (and {} more)", found[0], n - 1)),
    }
}

/// Trials per result: `--trials`, else the catalog's trials or races, else 1.
fn trial_count(job: &Job, ctx: &Context) -> u32 {
    ctx.trials.or(job.cell.params.trials).or(job.cell.params.races).unwrap_or(1)
}

/// Runs one trial of a live cell.
fn run_trial(job: &Job, ctx: &Context, index: u32) -> Trial {
    let p = &job.cell.params;
    match job.cell.id.as_str() {
        "prefix-durability" => workload::trial(job, ctx, &prefix::WORKLOAD(p.window.unwrap_or(200)), index),
        "rotation-atomicity" => workload::trial(job, ctx, &rotation::WORKLOAD(p.window.unwrap_or(50)), index),
        "consume-once" => consume::trial(job, ctx, p.racers.unwrap_or(8), index),
        other => {
            Trial::new(index, None).conclude(Outcome::Error(format!("cell `{other}` has no probe in this driver")))
        }
    }
}

/// Produces the result of one job; a panic in a probe (a bug of the
/// harness) becomes this result's `error` rather than the end of the run and
/// the loss of every other result. Its children die as the unwinding drops
/// their handles.
pub fn run_job_guarded(job: &Job, ctx: &Context) -> CellResult {
    let start = Instant::now();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_job(job, ctx))) {
        Ok(result) => result,
        Err(panic) => {
            let what =
                panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
            let why = format!("the harness panicked: {}", what.unwrap_or_else(|| "no message".into()));
            let mut result = base_result(job, ctx, Verdict::Error, why, 0);
            result.duration_ms = start.elapsed().as_millis() as u64;
            result
        }
    }
}

/// The trials of a timed result, in order, up to the first that does not pass.
fn timed_trials(job: &Job, ctx: &Context) -> Vec<Trial> {
    let indices: Vec<u32> = match ctx.only_trial {
        Some(t) => vec![t],
        None => (0..trial_count(job, ctx)).collect(),
    };
    let mut trials = Vec::new();
    for index in indices {
        let trial = run_trial(job, ctx, index);
        let decisive = trial.outcome != Outcome::Pass;
        trials.push(trial);
        if decisive || crate::harness::interrupted().is_some() {
            break;
        }
    }
    trials
}

/// The trials of a syscall result: a sweep over the kill points of a short
/// workload, the decisive trial last.
fn syscall_trials(job: &Job, ctx: &Context) -> Vec<Trial> {
    let p = &job.cell.params;
    match job.cell.id.as_str() {
        "prefix-durability" => sweep::workload(job, ctx, &prefix::WORKLOAD(p.window.unwrap_or(200))),
        "rotation-atomicity" => sweep::workload(job, ctx, &rotation::WORKLOAD(p.window.unwrap_or(50))),
        "consume-once" => consume_sweep::trials(job, ctx, p.racers.unwrap_or(8)),
        other => vec![Trial::new(0, None).conclude(Outcome::Skip(format!("cell `{other}` has no syscall sweep yet")))],
    }
}

/// Produces the result of one job.
pub fn run_job(job: &Job, ctx: &Context) -> CellResult {
    let start = Instant::now();
    if job.cell.status == Status::Stub {
        let reason = job.cell.reason.clone().unwrap_or_default();
        return base_result(job, ctx, Verdict::Stub, reason, 0);
    }
    let mut trials = match job.kill {
        KillMode::Timed => timed_trials(job, ctx),
        KillMode::Syscall => syscall_trials(job, ctx),
    };
    mark_interrupted(&mut trials);
    let mut result = fold(job, ctx, &mut trials);
    result.duration_ms = start.elapsed().as_millis() as u64;
    keep_evidence(ctx, &mut result, trials);
    result
}

/// A trial that ended in an error while the run was being interrupted owes
/// the error to the interruption (its waits gave up), whatever it says.
fn mark_interrupted(trials: &mut [Trial]) {
    let Some(last) = trials.last_mut() else { return };
    if let (Outcome::Error(why), Some(_)) = (&last.outcome, crate::harness::interrupted())
        && !why.starts_with(INTERRUPTED)
    {
        last.outcome = Outcome::Error(format!("{INTERRUPTED} ({why})"));
    }
}

fn base_result(job: &Job, ctx: &Context, verdict: Verdict, reason: String, trials: u32) -> CellResult {
    let leg = job.leg.as_ref();
    CellResult {
        cell: job.cell.id.clone(),
        number: job.cell.number,
        clause: job.cell.clause.clone(),
        leg: leg.map_or("-".into(), |l| l.name.clone()),
        requested_mode: leg.and_then(|l| l.journal_mode).map(|m| m.to_string()),
        effective_mode: None,
        synchronous: leg.and_then(|l| l.synchronous).map(|s| s.to_string()),
        kill: job.kill,
        verdict,
        reason,
        trials,
        kill_points: Vec::new(),
        acked: 0,
        duration_ms: 0,
        evidence: None,
        repro: repro(job, ctx, None),
        mutant: ctx.mutant.clone(),
        details: Vec::new(),
    }
}

/// Folds trials into a result: the last trial decides (runs stop at the
/// first fire, error or skip); a pass reports the least acked of its trials.
fn fold(job: &Job, ctx: &Context, trials: &mut [Trial]) -> CellResult {
    let last = trials.last().expect("at least one trial");
    let (verdict, reason) = match &last.outcome {
        Outcome::Pass => (Verdict::Pass, String::new()),
        Outcome::Fire(r) => (Verdict::Fire, format!("trial {}: {r}", last.index)),
        Outcome::Skip(r) => (Verdict::Skip, r.clone()),
        Outcome::Error(r) => (Verdict::Error, format!("trial {}: {r}", last.index)),
    };
    let mut result = base_result(job, ctx, verdict, reason, trials.len() as u32);
    result.kill_points = trials.iter().filter_map(|t| t.kill_point.clone()).collect();
    result.acked = match verdict {
        // A timed pass reports its least acked trial; a sweep, the most acks
        // any of its kill points came after.
        Verdict::Pass if job.kill == KillMode::Syscall => trials.iter().map(|t| t.acked).max().unwrap_or(0),
        Verdict::Pass => trials.iter().map(|t| t.acked).min().unwrap_or(0),
        _ => last.acked,
    };
    result.effective_mode = trials.iter().rev().find_map(|t| t.audit.as_ref().map(|a| a.effective.clone()));
    if verdict == Verdict::Pass {
        // A pass in a mode the resolver chose over the wish says so.
        result.reason = last.audit.as_ref().map(|a| a.note.clone()).unwrap_or_default();
    }
    result.synchronous = trials.iter().rev().find_map(|t| t.synchronous.clone()).or(result.synchronous);
    result.details = last.details.clone();
    if verdict != Verdict::Pass {
        result.repro = repro(job, ctx, Some(last.index));
    }
    result
}

/// Keeps the folder of a fired or errored trial, with the result as JSON
/// beside it; every other trial's folder is removed with its `TrialEnv`.
fn keep_evidence(ctx: &Context, result: &mut CellResult, trials: Vec<Trial>) {
    if !matches!(result.verdict, Verdict::Fire | Verdict::Error) {
        return;
    }
    let Some(env) = trials.into_iter().last().and_then(|t| t.env) else { return };
    let dest = ctx.evidence_root.join(format!("{}-{}-{}", result.cell, result.leg, result.kill.as_str()));
    match env.keep(&dest) {
        Ok(()) => {
            result.evidence = Some(dest.display().to_string());
            let _ = std::fs::write(dest.join("result.json"), serde_json::to_string_pretty(result).unwrap_or_default());
        }
        Err(e) => result.details.push(format!("evidence could not be kept: {e}")),
    }
}

/// The command line that reruns exactly this result (or one trial of it):
/// every option that changes which jobs run, their seeds, their trials, the
/// store and the bounds a verdict depends on. A timed kill is seeded (its
/// ack target and its phase within an operation) but lands where the
/// scheduler lets it, so its repro reruns the same kill, not the same
/// instant; a fire that needs no lucky instant fires again every time.
pub fn repro(job: &Job, ctx: &Context, trial: Option<u32>) -> String {
    let mut cmd = format!("crashcells run --cell {} --matrix {}", job.cell.id, shell_word(&ctx.matrix_arg));
    if let Some(leg) = &job.leg {
        cmd.push_str(&format!(" --leg {}", shell_word(&leg.name)));
    }
    cmd.push_str(&format!(" --kill {} --seed {}", job.kill.as_str(), ctx.seed));
    if let Some(t) = ctx.trials {
        cmd.push_str(&format!(" --trials {t}"));
    }
    match job.kill {
        KillMode::Timed => {
            if let Some(t) = trial.or(ctx.only_trial) {
                cmd.push_str(&format!(" --trial {t}"));
            }
        }
        KillMode::Syscall => match trial.map(u64::from).filter(|&t| t > 0).or(ctx.only_point) {
            Some(p) => cmd.push_str(&format!(" --point {p}")),
            None => {
                if let Some(k) = ctx.points {
                    cmd.push_str(&format!(" --points {k}"));
                }
            }
        },
    }
    if let Some(m) = &ctx.mutant {
        cmd.push_str(&format!(" --mutant {}", shell_word(m)));
    }
    if ctx.deadline != std::time::Duration::from_secs(crate::trial::DEFAULT_DEADLINE_SECS) {
        cmd.push_str(&format!(" --deadline {}", ctx.deadline.as_secs()));
    }
    if let Some(c) = &ctx.catalog_arg {
        cmd.push_str(&format!(" --catalog {}", shell_word(c)));
    }
    if let Some(c) = &ctx.child_arg {
        cmd.push_str(&format!(" --child {}", shell_word(c)));
    }
    cmd
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::catalog::Catalog;
    use crate::harness::ChildCommand;
    use crate::matrix::Matrix;
    use crate::plan::{Selection, plan};
    use crate::report::KillMode;

    fn ctx() -> Context {
        Context {
            child: ChildCommand::parse("store --flag").unwrap(),
            work_root: PathBuf::from("w"),
            evidence_root: PathBuf::from("e"),
            mutant: Some("drop-append".into()),
            deadline: Duration::from_secs(5),
            trials: Some(6),
            only_trial: None,
            seed: 42,
            only_point: None,
            points: None,
            jobs: 1,
            matrix_arg: "audit".into(),
            child_arg: Some("store --flag".into()),
            catalog_arg: Some("my cells".into()),
        }
    }

    fn job() -> Job {
        let sel =
            Selection { cells: vec!["1".into()], legs: vec!["wal-sync-off".into()], kills: vec![KillMode::Timed] };
        plan(&Catalog::embedded().unwrap(), &Matrix::load("audit").unwrap(), &sel, 42).unwrap().remove(0)
    }

    #[test]
    fn repro_names_every_option_a_result_depends_on() {
        assert_eq!(
            repro(&job(), &ctx(), Some(3)),
            "crashcells run --cell prefix-durability --matrix audit --leg wal-sync-off --kill timed --seed 42 \
             --trials 6 --trial 3 --mutant drop-append --deadline 5 --catalog 'my cells' --child 'store --flag'"
        );
    }

    #[test]
    fn repro_leaves_out_what_was_not_given_and_parses_as_a_command_line() {
        let mut c = ctx();
        (c.mutant, c.trials, c.catalog_arg, c.child_arg) = (None, None, None, None);
        c.deadline = Duration::from_secs(crate::trial::DEFAULT_DEADLINE_SECS);
        let line = repro(&job(), &c, Some(0));
        assert_eq!(
            line,
            "crashcells run --cell prefix-durability --matrix audit --leg wal-sync-off --kill timed --seed 42 --trial 0"
        );
        crate::cli::Cli::try_parse_from(line.split(' ')).unwrap();
    }
}
