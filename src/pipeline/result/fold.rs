//! A job's trials folded into its result: the last trial decides, its
//! typed outcome becomes the result's words; what a sweep covered, which
//! path judged it, the evidence of a fire or an error kept, and the command
//! that reruns it derived from the run's options.

use crate::harness::Interrupt;
use crate::model::{CellResult, Events, Fingerprint, States, TIMELINE, Verdict};
use crate::pipeline::judge::coverage::Coverage;
use crate::pipeline::outcome::{Failure, Interruption, Outcome};
use crate::pipeline::run::context::Context;
use crate::pipeline::trial::Trial;
use crate::plan::Job;

/// The reason of a result whose trial was cut short by `SIGINT`/`SIGTERM`.
pub const INTERRUPTED: &str = "interrupted before a verdict";

pub fn base_result(job: &Job, ctx: &Context, verdict: Verdict, reason: String, trials: u32) -> CellResult {
    let leg = job.leg.as_ref();
    let name = leg.map_or("-", |l| l.name.as_str());
    CellResult {
        clause: job.cell.clause.clone(),
        requested_mode: leg.and_then(|l| l.journal_mode),
        synchronous: leg.and_then(|l| l.synchronous).map(|s| s.to_string()),
        reason,
        trials,
        repro: repro(job, ctx, None),
        mutant: ctx.options.mutant.clone(),
        ..CellResult::new(&job.cell.id, job.cell.number, name, job.kill, verdict)
    }
}

/// The command that reruns this job's result (its deciding trial, if
/// given) on the path its children took.
fn repro(job: &Job, ctx: &Context, decisive: Option<u32>) -> String {
    let leg = job.leg.as_ref().map(|l| l.name.as_str());
    ctx.options.narrowed(&job.cell.id, leg, job.kill, decisive).on_path(ctx.children()).repro()
}

/// What an error ended by a deadline adds to its words: the flag that
/// raises the deadline and the start it was scaled from, so that a slow
/// store's user knows what to change (nothing for another error).
fn raise_deadline(ctx: &Context, f: &Failure) -> String {
    if !f.by_deadline() {
        return String::new();
    }
    format!(
        " (the child's {} start took {:.1}s in the preflight; raise --deadline, now {}s, to wait longer)",
        ctx.start_path(),
        ctx.start.as_secs_f64(),
        ctx.options.deadline().as_secs()
    )
}

/// Folds trials into a result: the last trial decides (runs stop at the
/// first fire, error or skip); a pass reports the least acked of its trials.
/// Here the decisive trial's typed outcome becomes the result's words.
pub fn fold(job: &Job, ctx: &Context, trials: &[Trial]) -> CellResult {
    let last = trials.last().expect("at least one trial");
    let (verdict, reason) = match &last.outcome {
        Outcome::Pass => (Verdict::Pass, String::new()),
        Outcome::Fire(r) => (Verdict::Fire, format!("trial {}: {r}", last.index)),
        Outcome::Skip(r) => (Verdict::Skip, r.to_string()),
        Outcome::Error(r) => (Verdict::Error, format!("trial {}: {r}{}", last.index, raise_deadline(ctx, r))),
        Outcome::Interrupted(r) => (Verdict::Interrupted, format!("trial {}: {INTERRUPTED} ({r})", last.index)),
    };
    let mut result = base_result(job, ctx, verdict, reason, trials.len() as u32);
    result.kill_points = trials.iter().filter_map(|t| t.kill_point.clone()).collect();
    // The reason names the last trial: where it has no kill point of its
    // own, the last one listed is an earlier trial's, and must not be shown
    // as this result's.
    if verdict != Verdict::Pass && last.kill_point.is_none() && !result.kill_points.is_empty() {
        result.ended_before_kill = Some(last.index);
    }
    result.acked = match verdict {
        // A timed pass reports its least acked trial; a sweep, the most acks
        // any of its kill points came after.
        Verdict::Pass if !job.kill.is_timed() => trials.iter().map(|t| t.acked).max().unwrap_or(0),
        Verdict::Pass => trials.iter().map(|t| t.acked).min().unwrap_or(0),
        _ => last.acked,
    };
    result.effective_mode = trials.iter().rev().find_map(|t| t.audit.as_ref().map(|a| a.effective.clone()));
    if verdict == Verdict::Pass {
        // A pass in a mode the resolver chose over the wish says so.
        result.reason = last.audit.as_ref().map(|a| a.note.clone()).unwrap_or_default();
    }
    result.synchronous = trials.iter().rev().find_map(|t| t.synchronous.clone()).or(result.synchronous);
    // What a recording's calls said of the level: kept, and durable or not.
    let recorded =
        trials.iter().rev().find_map(|t| t.audit.as_ref().filter(|a| a.kept.is_some() || a.not_durable.is_some()));
    if let Some(a) = recorded.filter(|_| verdict != Verdict::Skip) {
        (result.kept_synchronous, result.not_durable) = (a.kept.clone(), a.not_durable.clone());
    }
    // What a fire violated, kept typed as far as the report: its kind, and
    // the fingerprint made of it and of the leg as audited.
    if let Outcome::Fire(f) = &last.outcome {
        result.finding.violation = f.first().map(|v| v.kind.to_string());
        result.finding.fingerprint = Fingerprint::of(&result).map(|f| f.to_string());
    }
    // A `--point`/`--points` sweep visited a selection: no whole sweep.
    let o = &ctx.options;
    result.sweep.sampled = job.kill.sweeps_points() && (o.point.is_some() || o.points.is_some());
    result.integrity = last.integrity.clone();
    result.details = last.details.clone();
    // An interrupted result reruns whole: its last trial decided nothing.
    if !matches!(verdict, Verdict::Pass | Verdict::Interrupted) {
        result.repro = repro(job, ctx, Some(last.index.get()));
    }
    result
}

/// Adds what a sweep really tested to its result; when fewer points landed
/// than were planned, the reason of a pass says why (a pass that did not
/// visit every point must say so where a gate reads it), and the details of
/// any other result do (a fire or an error is about its deciding point: that
/// the sweep stopped there is what a sweep does, and its repro, a single
/// point, must read the same).
pub fn with_coverage(result: &mut CellResult, c: Coverage) {
    result.judged.states = Some(if c.recorded { States::Recorded } else { States::ReExecuted });
    result.sweep.points_planned = Some(c.planned);
    result.sweep.points_landed = Some(c.landed);
    result.sweep.states_distinct = c.distinct;
    result.sweep.points_by_path = c.by_path;
    if c.why.is_empty() {
        return;
    }
    let why = format!("{} of {} planned kill points landed: {}", c.landed, c.planned, c.why.join("; "));
    if result.verdict != Verdict::Pass {
        result.details.push(why);
    } else if result.reason.is_empty() {
        result.reason = why;
    } else {
        result.reason = format!("{}; {why}", result.reason);
    }
}

/// Says which path judged a result that ran a child: how its children
/// started (forked, warm or exec'd), the deadline its waits ran under, and
/// (where no sweep said) that its states were real runs. A result that ran
/// none says nothing.
pub fn ran_on(result: &mut CellResult, ctx: &Context, trials: &[Trial]) {
    if !trials.iter().any(|t| t.env.is_some() || t.kill_point.is_some() || t.audit.is_some()) {
        return;
    }
    result.judged.children = Some(ctx.children());
    result.judged.deadline_ms = Some(ctx.deadline.as_millis() as u64);
    result.judged.states = result.judged.states.or(Some(States::ReExecuted));
}

/// Below this much free space on the work folder's disk, a result that
/// did not pass is the harness's error: its own files there (trial
/// folders, the child's stderr, the states copied for recovery) may have
/// failed to be written, and a store cannot be judged on what is missing.
pub const FULL_DISK: u64 = 1 << 20;

/// A fire or an error found while the work folder's disk was full, or
/// while a file of the harness's own failed with `ENOSPC` or `EIO` since
/// `mark` ([`crate::harness::disk`]), becomes an error naming the disk,
/// never the store's finding (a full `/dev/shm` once read as "its recovery
/// depends on the states recovered beside it"). Read while the trials'
/// folders are still there. A failure the tracer injected (`--kill
/// fault`'s ENOSPC, EIO) is the store's, on no file of the harness's, so is
/// untouched.
pub fn blame_full_disk(work: &std::path::Path, mark: usize, result: &mut CellResult) {
    use crate::harness::disk;
    blame_disk(work, disk::free_bytes(work), disk::since(mark), result);
}

/// [`blame_full_disk`] with the free space and the disk's last failure
/// given.
fn blame_disk(work: &std::path::Path, free: Option<u64>, failed: Option<String>, result: &mut CellResult) {
    if !matches!(result.verdict, Verdict::Fire | Verdict::Error) {
        return;
    }
    let why = match (free.filter(|&f| f < FULL_DISK), failed) {
        (Some(free), _) => format!(
            "the harness's disk is full: {} has {} free, so its own files may be missing (free space there, or \
             --workdir elsewhere)",
            work.display(),
            crate::scratch::human_bytes(free)
        ),
        (None, Some(failed)) => format!(
            "the harness's disk failed: its own file {failed}, so its own files may be missing (check the disk \
             of {}, or --workdir elsewhere)",
            work.display()
        ),
        (None, None) => return,
    };
    let was = std::mem::take(&mut result.reason);
    result.reason = format!("{why}; the result was: {}", crate::harness::quote::cap(&was, crate::harness::quote::CAP));
    (result.verdict, result.finding) = (Verdict::Error, Default::default());
}

/// A trial that ended in an error while the run was being interrupted is
/// not counted as the harness's error: the interrupt killed what it waited
/// on. Every wait of the harness says when an interrupt cut it short (so
/// its reason is already `Interrupted`); this catches any other step that
/// failed in the same moment, and keeps what that step said. `interrupt`
/// is the run's token.
pub fn mark_interrupted(trials: &mut [Trial], interrupt: &Interrupt) {
    let Some(last) = trials.last_mut() else { return };
    if let (Outcome::Error(_), true) = (&last.outcome, interrupt.is_set()) {
        let Outcome::Error(why) = std::mem::replace(&mut last.outcome, Outcome::Pass) else { unreachable!() };
        last.outcome = Outcome::Interrupted(Interruption::Then(Box::new(why)));
    }
}

/// Keeps the folder of a fired or errored trial, with the result as JSON
/// beside it, its staging told to `events`; every other trial's folder is
/// removed with its `TrialEnv`.
pub fn keep_evidence(ctx: &Context, events: &Events, result: &mut CellResult, trials: Vec<Trial>) {
    if !result.verdict.is_decisive() {
        return;
    }
    let Some(last) = trials.into_iter().last() else { return };
    let Some(env) = last.env else { return };
    let dest = ctx.evidence_root.join(format!("{}-{}-{}", result.cell, result.leg, result.kill.as_str()));
    // The notes are written into the copy before it is renamed into
    // place, so that the folder a result names is always complete.
    result.kept.evidence = Some(dest.display().to_string());
    let kept = env.keep(&dest, |stage| {
        write_kill_point(last.kill_point.as_ref(), stage);
        note_timeline(events, result, last.trace.as_ref(), stage, &dest);
        std::fs::write(stage.join("result.json"), serde_json::to_string_pretty(result).unwrap_or_default())
    });
    if let Err(e) = kept {
        (result.kept.evidence, result.kept.timeline) = (None, None);
        result.kept.evidence_error = Some(format!("could not keep {}: {e}", dest.display()));
    }
}

/// Writes `kill-point.json` into the evidence of a trial whose kill landed
/// at a call, where the step that killed it did not (a race's r0, a
/// recorded state): every syscall kill's evidence says where it landed.
/// One written beside the crash (with the acks its judge counted) is kept.
fn write_kill_point(kp: Option<&crate::kill::KillPoint>, dest: &std::path::Path) {
    let Some(kp) = kp.filter(|kp| kp.ordinal.is_some() || kp.syscall.is_some()) else { return };
    let path = dest.join("kill-point.json");
    if !path.exists() {
        let _ = std::fs::write(path, serde_json::to_string_pretty(kp).unwrap_or_default());
    }
}

/// Tells the run's consumers that the evidence is staged in `stage` (the
/// copy that becomes `dest`): the timeline writer adds its page there. The
/// result names the page at `dest` once written, or says in its details
/// why it could not be.
fn note_timeline(
    events: &Events,
    result: &mut CellResult,
    trace: Option<&crate::model::Trace>,
    stage: &std::path::Path,
    dest: &std::path::Path,
) {
    if let Some(why) = events.staged(result, trace, stage) {
        result.details.push(why);
    }
    if stage.join(TIMELINE).exists() {
        result.kept.timeline = Some(dest.join(TIMELINE).display().to_string());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fire found on a full disk is the harness's error naming the
    /// disk; one with room, and a pass on a full disk, stay as they were.
    #[test]
    fn a_result_found_on_a_full_disk_is_the_harness_error() {
        let ctx = Context::for_tests(1, None);
        let job = first_job();
        let fire = || base_result(&job, &ctx, Verdict::Fire, "acked 3 lost".into(), 1);
        let work = std::path::Path::new("/dev/shm/crashcells-x");
        let mut r = fire();
        blame_disk(work, Some(4096), None, &mut r);
        assert_eq!(r.verdict, Verdict::Error);
        assert!(
            r.reason.starts_with("the harness's disk is full: /dev/shm/crashcells-x has 4.0 KiB free"),
            "{}",
            r.reason
        );
        assert!(r.reason.ends_with("the result was: acked 3 lost"), "{}", r.reason);
        let mut roomy = fire();
        blame_disk(work, Some(FULL_DISK), None, &mut roomy);
        assert_eq!((roomy.verdict, roomy.reason.as_str()), (Verdict::Fire, "acked 3 lost"));
        let mut pass = base_result(&job, &ctx, Verdict::Pass, "ok".into(), 1);
        blame_disk(work, Some(0), None, &mut pass);
        assert_eq!(pass.verdict, Verdict::Pass);
    }

    /// A failing disk (EIO) is blamed as a full one is: a file of the
    /// harness's own that failed makes a fire found with room the
    /// harness's error, naming the file and the error.
    #[test]
    fn a_result_found_while_the_harness_disk_failed_is_the_harness_error() {
        let ctx = Context::for_tests(1, None);
        let job = first_job();
        let mut r = base_result(&job, &ctx, Verdict::Fire, "acked 3 lost".into(), 1);
        let failed = "/dev/shm/w/t1/child.stderr: Input/output error (os error 5)".to_string();
        blame_disk(std::path::Path::new("/dev/shm/w"), Some(FULL_DISK), Some(failed), &mut r);
        assert_eq!(r.verdict, Verdict::Error);
        assert!(
            r.reason.starts_with(
                "the harness's disk failed: its own file /dev/shm/w/t1/child.stderr: Input/output error (os error 5)"
            ),
            "{}",
            r.reason
        );
        assert!(r.reason.ends_with("the result was: acked 3 lost"), "{}", r.reason);
    }
    use crate::kill::TrialIndex;

    fn ctx() -> Context {
        Context::for_tests(1, None)
    }

    pub(crate) fn first_job() -> Job {
        crate::plan::plan(
            &crate::catalog::Catalog::embedded().unwrap(),
            &crate::matrix::Matrix::load("default").unwrap(),
            &crate::plan::Selection { kills: vec![crate::plan::KillMode::Timed], ..Default::default() },
            1,
        )
        .unwrap()
        .remove(0)
    }

    /// A timed result whose trial 1 failed its append before its kill,
    /// after trial 0 was killed and passed: the reason is about trial 1, so
    /// no kill point is shown for it, never trial 0's (#53). A fire at its
    /// kill point shows its own.
    #[test]
    fn the_kill_point_shown_is_the_trial_the_reason_names() {
        use crate::kill::KillPoint;
        use crate::pipeline::outcome::Failure;
        let job = first_job();
        let killed = |i: u32| KillPoint { trial: TrialIndex::nth(i), after_acks: 7, ..KillPoint::default() };
        let passed = || {
            let mut t = Trial::new(TrialIndex::nth(0));
            t.kill_point = Some(killed(0));
            t
        };
        let ended = Failure::EndedEarly { exit: crate::harness::Exit::Code(1), acks: 3, stderr: String::new() };
        let failed = Trial::ended(TrialIndex::nth(1), Outcome::store_failure(crashcells_protocol::Op::Append, ended));
        let r = fold(&job, &ctx(), &[passed(), failed]);
        assert_eq!(r.verdict, Verdict::Fire);
        assert!(r.reason.starts_with("trial 1: the store failed its `append`"), "{}", r.reason);
        assert_eq!(r.deciding_kill(), None, "trial 0's kill point shown for trial 1's reason");
        assert_eq!(r.ended_before_kill, Some(TrialIndex::nth(1)));
        let human = crate::report::human::render(&crate::model::tests::report_of(vec![r]), false);
        assert!(!human.contains("kill point: trial 0"), "{human}");
        let lost = crate::cells::Violation::new("lost-ack", "lost");
        let mut fired = Trial::ended(
            TrialIndex::nth(1),
            Outcome::Fire(crate::pipeline::outcome::Finding { violations: vec![lost], power: None, fault: None }),
        );
        fired.kill_point = Some(killed(1));
        let r = fold(&job, &ctx(), &[passed(), fired]);
        assert_eq!(r.deciding_kill().map(|k| k.trial), Some(TrialIndex::nth(1)));
        assert_eq!(r.ended_before_kill, None);
    }

    /// A folder that cannot be made (a read-only place) loses the evidence:
    /// the result says so in a field of its own, and keeps its verdict.
    #[test]
    fn evidence_that_cannot_be_kept_is_said_in_its_own_field() {
        let mut c = ctx();
        c.evidence_root = "/proc/crashcells-evidence".into();
        let work = tempfile::tempdir().unwrap();
        let leg = crate::matrix::Matrix::load("default").unwrap().legs.remove(0);
        let env = crate::trialdir::TrialEnv::new(work.path(), &leg, "t0").unwrap();
        let lost = crate::cells::Violation::new("lost-ack", "lost");
        let fire =
            Outcome::Fire(crate::pipeline::outcome::Finding { violations: vec![lost], power: None, fault: None });
        let trial = Trial::ended(TrialIndex::CENSUS, fire).with_env(env);
        let job = first_job();
        let mut result = fold(&job, &c, std::slice::from_ref(&trial));
        keep_evidence(&c, &c.events, &mut result, vec![trial]);
        assert_eq!((result.verdict, result.kept.evidence.as_deref()), (Verdict::Fire, None));
        // The kind survives the fold (no trial audited a mode here).
        assert_eq!(result.finding.violation.as_deref(), Some("lost-ack"));
        assert_eq!(result.finding.fingerprint.as_deref(), Some("prefix-durability/unaudited/default/timed/lost-ack"));
        let why = result.kept.evidence_error.unwrap();
        assert!(why.starts_with("could not keep /proc/crashcells-evidence/"), "{why}");
    }
}
