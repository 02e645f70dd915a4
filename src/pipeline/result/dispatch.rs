//! A job dispatched to its source: its trials run in the shape its cell
//! asks for, by the crash source its kill mode names; a fire found through
//! the fork server run again on the plain path, and refired; then folded
//! ([`super::fold`]).

use std::time::Instant;

use crate::catalog::Status;
use crate::cells::{Cell, RaceShape, Shape, Taking, WorkloadShape};
use crate::kill::TrialIndex;
use crate::killmode::Source;
use crate::matrix::Leg;
use crate::model::{CellResult, Verdict};
use crate::pipeline::judge::coverage::{self, Coverage};
use crate::pipeline::outcome::{Failure, Outcome, Site, Skip};
use crate::pipeline::plain::confirm;
use crate::pipeline::race::job::Race;
use crate::pipeline::race::sweep::RaceSweep;
use crate::pipeline::result::fold::{
    base_result, blame_full_disk, fold, keep_evidence, mark_interrupted, ran_on, with_coverage,
};
use crate::pipeline::run::context::{Context, Scope};
use crate::pipeline::run::plainfires::{Begun, PlainFire};
use crate::pipeline::run::spent::{self, Phase};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::Workload;
use crate::plan::{Job, KillMode};

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

/// Produces the result of one job.
pub fn run_job(job: &Job, ctx: &Context) -> CellResult {
    let start = Instant::now();
    // The result's evidence is staged to the job's consumers, on whichever path it ran.
    let events = ctx.events.clone();
    // The harness's own disk failures from here on are this result's.
    let disk = crate::harness::disk::mark();
    // A leg that puts a SQLite library under its child runs exec'd with it.
    let on_library = job.leg.as_ref().and_then(|leg| ctx.on_library(leg));
    let ctx = on_library.as_ref().unwrap_or(ctx);
    spent::take();
    // A job begun after its fork server ended for good runs exec'd, and
    // waits as long as an exec'd child needs.
    let now = ctx.as_it_runs();
    let ctx = now.as_ref().unwrap_or(ctx);
    let begun = begun(job, ctx);
    let falls = ctx.child.falls();
    let mut ran = match job_trials(job, ctx) {
        Ok(ran) => ran,
        Err(stub) => return *stub,
    };
    let plain;
    let (ctx, retried) = match fell_in_flight(ctx, falls, &ran.0) {
        Some(said) => {
            // The first try's folders go before the retry makes its own.
            drop(ran);
            plain = ctx.plain();
            ran = match job_trials(job, &plain) {
                Ok(ran) => ran,
                Err(stub) => return *stub,
            };
            (&plain, Some(said))
        }
        None => (ctx, None),
    };
    let (mut trials, coverage) = ran;
    mark_interrupted(&mut trials, &ctx.interrupt);
    if let Some(begun) = begun {
        begun.ended(plain_fire(ctx, &trials));
    }
    let mut result = fold(job, ctx, &trials);
    blame_full_disk(&ctx.work_root, disk, &mut result);
    if let Some(c) = coverage {
        with_coverage(&mut result, c);
    }
    result.details.extend(retried);
    ran_on(&mut result, ctx, &trials);
    let refires = ctx.refires_for(result.finding.fingerprint.as_deref());
    if let (Verdict::Fire, Some(last)) = (result.verdict, trials.last()) {
        result.notes.refire = spent::timed(Phase::Refire, || refired(job, ctx, refires, confirm::site(job.kill, last)));
    }
    result.notes.spent = spent::take();
    result.duration_ms = start.elapsed().as_millis() as u64;
    keep_evidence(ctx, &events, &mut result, trials);
    result
}

/// A syscall result's start, told to the run's timed jobs of its cell and
/// leg ([`crate::pipeline::run::plainfires`]).
fn begun(job: &Job, ctx: &Context) -> Option<Begun> {
    let leg = job.leg.as_ref().filter(|_| job.kill == KillMode::Syscall)?;
    Some(ctx.plain_fires.begun(&job.cell.id, &leg.name))
}

/// The decisive trial's fire, if the plain path fired it: found exec'd, or
/// found forked and confirmed exec'd.
fn plain_fire(ctx: &Context, trials: &[Trial]) -> Option<PlainFire> {
    let last = trials.last().filter(|t| matches!(t.outcome, Outcome::Fire(_)))?;
    (last.plain_confirmed || !ctx.fast()).then(|| PlainFire { point: last.index.get(), outcome: last.outcome.clone() })
}

/// The trials of `job` and what its sweep covered; a stub, or a job
/// without a leg, is its result at once.
fn job_trials(job: &Job, ctx: &Context) -> Result<(Vec<Trial>, Option<Coverage>), Box<CellResult>> {
    Ok(match (job.cell.status, crate::cells::find(&job.cell.id), job.leg.as_ref()) {
        (Status::Stub, _, _) | (_, _, None) => {
            let reason = job.cell.reason.clone().unwrap_or_default();
            return Err(Box::new(base_result(job, ctx, Verdict::Stub, reason, 0)));
        }
        (Status::Live, None, _) => {
            (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Error(Failure::NoProbe(job.cell.id.clone())))], None)
        }
        (Status::Live, Some(cell), Some(leg)) => trials(job, cell, leg, ctx),
    })
}

/// Whether the job's work may have been in flight when its fast path fell
/// over (a fork server ended, the warm pool broke: `ctx`'s launcher fell
/// more often than the `before` it had when the job began) and it ended in
/// an error: the processes a server takes with it end in errors that are
/// the server's, not the store's. Such a job is retried exec'd, once
/// (docs/PROTOCOL.md §9, "A server that fails"); what the retry finds is
/// its verdict, a store's own error included. The words its details then
/// carry: what fell, and the first try's error.
fn fell_in_flight(ctx: &Context, before: usize, trials: &[Trial]) -> Option<String> {
    let last = trials.last()?;
    if !matches!(last.outcome, Outcome::Error(_)) || ctx.child.falls() <= before {
        return None;
    }
    let fall = ctx.child.last_fall().unwrap_or_else(|| "it ended".into());
    Some(format!(
        "retried exec'd, once: the {} fell over while this result ran ({fall}); the first try found, at trial {}: {}",
        ctx.child.launcher(),
        last.index,
        last.outcome
    ))
}

/// The trials of a live cell's job, in the shape the cell asks for (none
/// but a skip when the child lacks an operation the shape runs), and for a
/// syscall sweep the kill points it planned and landed.
fn trials(job: &Job, cell: &dyn Cell, leg: &Leg, ctx: &Context) -> (Vec<Trial>, Option<Coverage>) {
    let shape = match cell.shape(&job.cell.params) {
        Ok(shape) => shape,
        Err(missing) => return (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Error(Failure::Shape(missing)))], None),
    };
    if let Some(missing) = missing_operation(ctx, &shape) {
        return (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Skip(Skip::MissingOperation(missing)))], None);
    }
    let ran = on_plain_path(job, cell, leg, ctx, shape, shaped(job, cell, leg, ctx, shape));
    match unsupported(&ran.0, shape) {
        Some(op) => (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Skip(Skip::MissingOperation(op)))], None),
        None => ran,
    }
}

/// The operation a trial's process said it does not implement (exit 69,
/// docs/PROTOCOL.md §2; a version-1 child has no `operations` to list):
/// the cell is skipped for it, as for one a ready record does not list.
fn unsupported(trials: &[Trial], shape: Shape) -> Option<crashcells_protocol::Op> {
    let Some(Outcome::Error(f)) = trials.last().map(|t| &t.outcome) else { return None };
    shape.kind().refused(f.unsupported()?)
}

/// The trials of a live cell's job in `shape`, on a child that implements
/// it, as the shape takes the job's kill mode
/// ([`crate::cells::ShapeKind::takes`]): a skip, or its crash sources. The
/// pipeline's one match of the shapes: a new shape's sources are an arm.
fn shaped(job: &Job, cell: &dyn Cell, leg: &Leg, ctx: &Context, shape: Shape) -> (Vec<Trial>, Option<Coverage>) {
    let free = match shape.kind().takes(job.kill) {
        Taking::Skip(why) => return (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Skip(Skip::Race(why)))], None),
        Taking::Unplanned => return no_kill(),
        Taking::Free => true,
        Taking::Killed => false,
    };
    let scope = Scope { job, leg, cell, ctx };
    match shape {
        Shape::Workload(w) => workload_trials(scope, w),
        Shape::Race(r) => race_trials(scope, r, free),
        Shape::Writers(w) => {
            crate::pipeline::race::writers::shaped(scope, w, &trial_indices(job, ctx), re_execute(ctx))
        }
    }
}

/// A workload's trials, driven by its kill mode's crash source.
fn workload_trials(scope: Scope<'_>, shape: WorkloadShape) -> (Vec<Trial>, Option<Coverage>) {
    let (job, ctx) = (scope.job, scope.ctx);
    let WorkloadShape { op, window, sweep_acks, recovery } = shape;
    let checkpoint_ops = job.cell.params.checkpoint_ops;
    let length = std::sync::atomic::AtomicU64::new(sweep_acks);
    let w = Workload { scope, op, sweep_acks, recovery, checkpoint_ops, length };
    let mode = job.kill.mode();
    match mode.source {
        Source::Timed => (w.timed_trials(window, &trial_indices(job, ctx)), None),
        // A repro's single point is a real kill, as is every point without replay.
        Source::Syscall if re_execute(ctx) => covered(w.re_executed(job.seed)),
        Source::Syscall => covered(crate::pipeline::workload::recorded::process_sweep(&w, job.seed)),
        Source::Power { torn } => covered(crate::pipeline::workload::power::power_sweep(
            &w,
            job.seed,
            crate::pipeline::workload::power::PowerModel::of(torn),
        )),
        Source::Injected(injection) => {
            covered(crate::pipeline::workload::fault::fault_sweep(&w, job.seed, injection, mode.phrase))
        }
        Source::NoKill => no_kill(),
    }
}

/// A race's trials: free races, or (a kill) the reads-first schedule and,
/// unless that fired, the sweep of racer r0's points.
fn race_trials(scope: Scope<'_>, shape: RaceShape, free: bool) -> (Vec<Trial>, Option<Coverage>) {
    let (job, ctx) = (scope.job, scope.ctx);
    let race = Race::new(scope, shape.racers);
    if free {
        // Reports before kill mode `none` planned the race as `timed`.
        return (race.free_races(&trial_indices(job, ctx)), None);
    }
    // A controlled schedule that fires is the result: a sweep would only
    // find again what the schedule showed by construction.
    let (scheduled, said) = race.scheduled();
    if scheduled.iter().any(Trial::is_bad) {
        return (scheduled, None);
    }
    let swept = if re_execute(ctx) {
        RaceSweep::run(&race)
    } else {
        // A recorded sweep's races: r0 and the few that race for what its kill left.
        let swept = Race::new(scope, job.cell.params.sweep_racers());
        crate::pipeline::race::recorded::run(&swept, &race)
    };
    crate::pipeline::race::schedule::noted(&said, swept)
}

/// The result of a mode that kills nothing for a shape that needs a kill
/// (never planned: `crate::plan::kill_for`).
fn no_kill() -> (Vec<Trial>, Option<Coverage>) {
    (vec![Trial::ended(TrialIndex::CENSUS, Outcome::Error(Failure::NoKill))], None)
}

/// A fire found through the fork server, run again at its trial or point
/// with every operation exec'd before it is reported ([`crate::pipeline::plain::confirm`]):
/// the same job narrowed to that trial or point, on the plain path.
fn on_plain_path(
    job: &Job,
    cell: &dyn Cell,
    leg: &Leg,
    ctx: &Context,
    shape: Shape,
    mut ran: (Vec<Trial>, Option<Coverage>),
) -> (Vec<Trial>, Option<Coverage>) {
    let Some(found) = ran.0.last_mut().filter(|t| confirm::needed(ctx, t)) else { return ran };
    if by_syscall_result(job, leg, ctx, found) {
        return ran;
    }
    let at = confirm::site(job.kill, found);
    let mut again = |site: Site| {
        let index = match site {
            Site::Trial(n) | Site::Point(n) => Some(n),
            Site::Sweep => None,
        };
        let mut plain = ctx.plain();
        plain.options = ctx.options.narrowed(&job.cell.id, Some(&leg.name), job.kill, index);
        spent::timed(Phase::Confirm, || {
            shaped(job, cell, leg, &plain, shape).0.pop().map(|t| confirm::Exec::at_site(t.outcome))
        })
    };
    let launcher = ctx.child.launcher();
    let racy = shape.kind().racy();
    confirm::confirm(found, (at, &launcher), confirm::tries(job.kill, racy, found.index), &mut again);
    // A kill the scheduler places, or a free race, the exec'd runs missed:
    // the syscall result's points and schedules do not depend on time.
    if matches!(job.kill, KillMode::Timed | KillMode::None) && !found.plain_confirmed && found.is_bad() {
        if by_syscall_result(job, leg, ctx, found) {
            return ran;
        }
        let sweep = Job { kill: KillMode::Syscall, ..job.clone() };
        let mut plain = ctx.plain();
        plain.options = ctx.options.narrowed(&job.cell.id, Some(&leg.name), KillMode::Syscall, None);
        let swept = spent::timed(Phase::SweepConfirm, || shaped(&sweep, cell, leg, &plain, shape).0.pop());
        confirm::by_sweep(found, swept);
    }
    ran
}

/// A timed fire confirmed by the run's syscall result of its cell and leg,
/// if that fired on the plain path (waiting for it while another thread
/// runs it): the exec'd sweep that is a timed fire's last resort would
/// fire there too, so the verdict is the same and neither it nor the exec'd
/// trials are paid ([`crate::pipeline::run::plainfires`]). Whether it was.
fn by_syscall_result(job: &Job, leg: &Leg, ctx: &Context, found: &mut Trial) -> bool {
    if job.kill != KillMode::Timed {
        return false;
    }
    // As long as a whole sweep may take: past it, the timed fire's own runs.
    let bound = ctx.deadline.saturating_mul(WAIT_DEADLINES);
    let Some(fire) = ctx.plain_fires.fire(&job.cell.id, &leg.name, bound, &ctx.interrupt) else { return false };
    confirm::by_syscall_result(found, (fire.point, &ctx.child.launcher()), &fire.outcome);
    true
}

/// How many of a trial's deadlines a timed fire waits for the syscall
/// result under way before it confirms itself.
const WAIT_DEADLINES: u32 = 20;

/// A fire's repro rerun `runs` times on the run's own path, at the
/// fire's trial or point ([`crate::pipeline::run::refire`]); none for a fire decided by a
/// sweep's census, whose repro reruns the whole sweep.
fn refired(job: &Job, ctx: &Context, runs: u32, at: Site) -> Option<crate::model::Refire> {
    let index = match at {
        Site::Trial(n) | Site::Point(n) => n,
        Site::Sweep => return None,
    };
    let (cell, leg) = (crate::cells::find(&job.cell.id)?, job.leg.as_ref()?);
    let shape = cell.shape(&job.cell.params).ok()?;
    let options = ctx.options.narrowed(&job.cell.id, Some(&leg.name), job.kill, Some(index));
    let again = |i: u32| {
        // Its trial folders apart from the other reruns', which run beside
        // it; no progress drawn: a rerun is no trial the bar planned.
        let work_root = ctx.work_root.join(refire_folder(job, leg, index, i));
        std::fs::create_dir_all(&work_root).ok()?;
        let again =
            Context { options: options.clone(), events: crate::model::Events::default(), work_root, ..ctx.clone() };
        let outcome = shaped(job, cell, leg, &again, shape).0.pop().map(|t| t.outcome);
        let _ = std::fs::remove_dir_all(&again.work_root);
        outcome
    };
    crate::pipeline::run::refire::measure(runs, ctx.jobs, &again)
}

/// The folder of rerun `i` of a fire at trial or point `index`: named by
/// the job's cell, leg and kill mode too, since jobs refire beside each
/// other, and two legs of one cell often fire at the same point. A
/// shared name let one rerun remove the folder another's children were
/// still starting in: their operations failed, and a fork server that
/// forked one ended for it.
fn refire_folder(job: &Job, leg: &Leg, index: u32, i: u32) -> String {
    format!("refire-{}-{}-{}-{index}-{i}", job.cell.id, leg.name, job.kill.as_str())
}

/// A workload sweep's trials and what it covered (one path).
fn covered(swept: crate::pipeline::judge::sweep::Swept) -> (Vec<Trial>, Option<Coverage>) {
    let coverage = coverage::of(&swept, &[]);
    (swept.trials, coverage)
}

/// Whether a syscall sweep re-runs the child at each point: `--replay off`,
/// or one `--point` (a repro: a real kill is the command that reruns it).
fn re_execute(ctx: &Context) -> bool {
    ctx.options.replay == Some(crate::options::Replay::Off) || ctx.options.point.is_some()
}

/// The first operation of `shape` the child did not list in its preflight.
fn missing_operation(ctx: &Context, shape: &Shape) -> Option<crashcells_protocol::Op> {
    shape.kind().missing(ctx.child_ready.as_ref()?)
}

/// Trials per result: `--trials`, else the catalog's trials or races, else
/// 1. `run` bounds `--trial` by it before any child runs.
pub fn trial_count(job: &Job, options: &crate::options::RunOptions) -> u32 {
    let p = &job.cell.params;
    options.trials.or(p.trials).or(p.races).unwrap_or(1)
}

/// The trials a timed result or a free race runs (up to the first that
/// does not pass, [`crate::pipeline::judge::pending`]); `--trial N` runs that one alone.
fn trial_indices(job: &Job, ctx: &Context) -> Vec<TrialIndex> {
    match ctx.options.trial {
        Some(t) => vec![TrialIndex::nth(t)],
        None => (0..trial_count(job, &ctx.options)).map(TrialIndex::nth).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::result::fold::tests::first_job;
    use crashcells_protocol::{Op, Ready};

    /// Two legs of one cell that fire at the same point rerun it in
    /// folders of their own.
    #[test]
    fn two_jobs_refiring_one_point_rerun_in_folders_of_their_own() {
        let job = first_job();
        let (delete, wal) = (Leg::new("delete", None, None), Leg::new("wal", None, None));
        assert_ne!(refire_folder(&job, &delete, 79, 0), refire_folder(&job, &wal, 79, 0));
        let other = Job { kill: KillMode::Power, ..job.clone() };
        assert_ne!(refire_folder(&job, &delete, 79, 0), refire_folder(&other, &delete, 79, 0));
        assert_ne!(refire_folder(&job, &delete, 79, 0), refire_folder(&job, &delete, 79, 1));
    }

    fn ctx(ready: Option<Ready>) -> Context {
        Context::for_tests(1, ready)
    }

    fn ready(protocol: u32, operations: Option<Vec<&str>>) -> Ready {
        Ready {
            protocol,
            pid: 1,
            op: "append".into(),
            sqlite_version: "3.54.1".into(),
            sqlite_source_id: None,
            journal_mode: "wal".into(),
            synchronous: None,
            resolver: None,
            operations: operations.map(|o| o.into_iter().map(String::from).collect()),
            sidecar: None,
        }
    }

    /// A result runs `--trials` trials, or the one `--trial` names.
    #[test]
    fn a_result_runs_its_trials_or_the_one_named() {
        let mut c = ctx(None);
        c.options.trials = Some(4);
        assert_eq!(trial_indices(&first_job(), &c), [0, 1, 2, 3].map(TrialIndex::nth));
        c.options.trial = Some(7);
        assert_eq!(trial_indices(&first_job(), &c), [TrialIndex::nth(7)]);
    }

    #[test]
    fn a_shape_whose_operation_the_child_lacks_names_it() {
        let rotate = Shape::Workload(WorkloadShape { op: Op::Rotate, window: 1, sweep_acks: 1, recovery: None });
        let race = Shape::Race(RaceShape { racers: 2 });
        let v2 = ctx(Some(ready(2, Some(vec!["append", "park", "claim", "dump"]))));
        assert_eq!(missing_operation(&v2, &rotate), Some(Op::Rotate));
        assert_eq!(missing_operation(&v2, &race), None);
        let v1 = ctx(Some(ready(1, None)));
        assert_eq!(missing_operation(&v1, &rotate), None, "a version-1 child implements the five");
        assert_eq!(missing_operation(&ctx(None), &rotate), None, "no preflight, nothing to say");
    }
}
