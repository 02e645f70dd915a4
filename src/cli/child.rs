//! The child a run runs: its `--mutant` checked by name, the child started
//! (preflight, fork server, warm pool) with a failed preflight as the user
//! must hear it, and the context every cell of a run shares.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crashcells_protocol::{Mutant, Ready};

use crate::applied::{Applied, legs_of};
use crate::error::{Error, Result};
use crate::harness::Launcher;
use crate::matrix::Leg;
use crate::options::{Replay, RunOptions};
use crate::pipeline::{Context, preflight_deadline, scale_deadline};
use crate::plan::Job;
use crate::probe::{Fast, fork_server, preflight_in, warm_pool};

/// Checks the mutant's name before any child runs: the names are
/// crashcells' (docs/PROTOCOL.md), whichever store implements them.
pub(super) fn validate_mutant(m: &Option<String>) -> Result<()> {
    let Some(name) = m else { return Ok(()) };
    // The protocol crate refuses it; the nearest name is the driver's to add.
    name.parse::<Mutant>()
        .map(drop)
        .map_err(|_| Error::Usage(crate::suggest::unknown("mutant", name, &Mutant::names())))
}

/// Why the preflight failed, as the user must hear it. With `--mutant`, a
/// child that speaks the protocol without it refused the mutant: that is
/// bad input (the mutants are the reference store's, and a `--child`
/// implements only those it says it does), not a child that is broken.
fn preflight_failed(ctx: &Context, e: crate::probe::PreflightError) -> Error {
    let child = ctx.child.display();
    if let Some(m) = &ctx.options.mutant
        && crate::probe::preflight(&ctx.child, &ctx.work_root, ctx.deadline, &ctx.interrupt).is_ok()
    {
        // The last line of its stderr says why (a usage error's last line).
        let why = e.to_string();
        let why = why.rsplit(" | ").next().unwrap_or_default().trim().to_string();
        return Error::Usage(format!(
            "--mutant {m}: the child `{child}` refused it before any cell ran (the mutants are the \
             reference store's; a --child implements only those it accepts, docs/PROTOCOL.md): {why}"
        ));
    }
    let mut message = e.to_string();
    if e.timed_out() {
        // The one wait no start scales yet: say what bounds it.
        message.push_str(&format!(
            "; raise --deadline to wait longer (the first start waits {} × --deadline, at least {}s)",
            crate::pipeline::FIRST_START,
            crate::pipeline::preflight_deadline(Duration::ZERO).as_secs()
        ));
    }
    Error::Child { child, message }
}

/// The most children one unit of the run's pool starts together: a race's
/// claimants, a writers' writers, or one (each shape's crowd). A job whose
/// operations the child's ready record does not list is skipped before it
/// starts anything, so it does not count: a pool sized for 8 racers the
/// child never runs would keep 8 times the processes warm for nothing.
fn crowd(jobs: &[Job], ready: Option<&Ready>) -> u32 {
    let crowd = |j: &Job| match crate::plan::shape_of(&j.cell) {
        Ok(shape) if runs(shape.kind(), ready) => shape.kind().crowd(),
        _ => 1,
    };
    jobs.iter().filter(|j| j.leg.is_some()).map(crowd).max().unwrap_or(1)
}

/// Whether the child lists every operation of `shape` (a child not yet
/// asked is taken at its word: it may run them all).
fn runs(shape: &dyn crate::cells::ShapeKind, ready: Option<&Ready>) -> bool {
    ready.is_none_or(|r| shape.missing(r).is_none())
}

/// Starts the run's child: the preflight, which measures the start every
/// deadline scales with, then the fork server or the warm pool the child
/// offers (unless the options turn them off), then the deadline scaled.
/// `None` when the run was interrupted (its token raised) before the child
/// was ready.
pub(super) fn start_child(ctx: &mut Context, jobs: &[Job]) -> Result<Option<Ready>> {
    // The preflight measures the start every deadline scales with, so its
    // own wait cannot: it assumes a start as long as the deadline (at least
    // the default one), and scales that (docs/PROTOCOL.md §1).
    let first = preflight_deadline(ctx.deadline);
    let began = Instant::now();
    let mutant = ctx.options.mutant.as_deref();
    let ready = match crate::probe::preflight_with(&ctx.child, &ctx.work_root, first, &ctx.interrupt, mutant) {
        Ok(ready) => Some(ready),
        Err(_) if ctx.interrupt.is_set() => None,
        Err(e) => return Err(preflight_failed(ctx, e)),
    };
    // The preflight is exec'd: the plain path's waits scale with it.
    let start = began.elapsed();
    (ctx.start, ctx.execd_start) = (start, start);
    ctx.crowd = crowd(jobs, ready.as_ref());
    if let Some(ready) = &ready {
        fast_path(ctx, ready)?;
    }
    ctx.deadline = ctx.scaled_deadline(ctx.options.deadline());
    ctx.child_ready = ready.clone();
    Ok(ready)
}

/// The configuration each leg of `jobs` applies, in the order the legs
/// come: a preflight with the leg's config home, on its library's
/// launcher (`None` where it wrote no ready record, or ran another mode,
/// level or library than the leg asked for: that leg is judged on its
/// own, and its trials say why). Nothing is probed with
/// `--every-leg`, or for a single leg: no leg can repeat another then.
pub(super) fn probe_legs(ctx: &Context, jobs: &[Job]) -> Vec<(String, Option<Applied>)> {
    let legs = legs_of(jobs);
    if ctx.options.every_leg || legs.len() < 2 || ctx.interrupt.is_set() {
        return Vec::new();
    }
    let probe = |leg: &Leg| {
        let on = ctx.on_library(leg);
        let (child, deadline) = on.as_ref().map_or((&ctx.child, ctx.deadline), |c| (&c.child, c.deadline));
        let config = leg.config().to_toml();
        let ready = preflight_in(child, &ctx.work_root, deadline, &ctx.interrupt, ctx.mutant(), Some(&config)).ok();
        (leg.name.clone(), ready.and_then(|r| Applied::honored(&r, leg)))
    };
    // The legs' probes at once, as many as the run's jobs.
    let mut heard = Vec::with_capacity(legs.len());
    for chunk in legs.chunks(ctx.jobs.max(1)) {
        std::thread::scope(|s| {
            let running: Vec<_> = chunk.iter().map(|leg| s.spawn(|| probe(leg))).collect();
            heard.extend(running.into_iter().map(|h| h.join().expect("a probe does not panic")));
        });
    }
    heard
}

/// The child's fork server, else its warm pool, when it offers one and the
/// options do not turn it off, each checked fresh by a preflight first;
/// each's start waits the preflight's measured start, scaled. One that is
/// not ready in time leaves every operation exec'd, and the report's
/// `launcher` says why ([`late`]): slower, the same verdicts.
fn fast_path(ctx: &mut Context, ready: &Ready) -> Result<()> {
    if ctx.options.fork_server != Some(Replay::Off) {
        match fork_server(&ctx.child, ready, &ctx.work_root, start_deadline(ctx, 1), &ctx.interrupt)? {
            // A forked operation starts faster: the deadlines scale with that.
            Some(Fast::Ready(forks, start)) => (ctx.child, ctx.start) = (forks, start),
            Some(Fast::Late(why)) => {
                // The pool would be as late: the run execs without trying it.
                late(ctx, "fork server", &why);
                return Ok(());
            }
            None => {}
        }
    }
    // Enough warm processes for every unit of the pool to start a race's
    // claimants at once. The start the deadlines scale with stays the
    // exec'd one: an operation may wait for a process to get warm.
    let size = ctx.jobs * ctx.crowd as usize;
    if ctx.options.warm_pool != Some(Replay::Off) {
        match warm_pool(&ctx.child, ready, &ctx.work_root, size, start_deadline(ctx, size), &ctx.interrupt)? {
            Some(Fast::Ready(warm, _)) => ctx.child = warm,
            Some(Fast::Late(why)) => late(ctx, "warm pool", &why),
            None => {}
        }
    }
    Ok(())
}

/// Every operation of the run exec'd, because its fast path (`what`) was
/// not ready in time (`why`); the note names the start the wait was
/// scaled from and the flag that lengthens it.
fn late(ctx: &mut Context, what: &str, why: &str) {
    let note = format!(
        "{what}, not ready in time: every operation was exec'd ({why}; the child's exec'd start took {:.1}s; \
         raise --deadline to wait longer for it)",
        ctx.execd_start.as_secs_f64()
    );
    ctx.child = Launcher::exec_late((*ctx.child).clone(), note);
}

/// The wait for a fork server's line, or a warm pool's `count` processes
/// started together: the preflight's measured start, scaled by the run's
/// one rule ([`scale_deadline`]). A fast path not ready within it costs the
/// run its speed, not a verdict: the run execs ([`late`]).
fn start_deadline(ctx: &Context, count: usize) -> Duration {
    scale_deadline(ctx.deadline, ctx.start, u32::try_from(count).unwrap_or(u32::MAX))
}

/// What every cell of a run needs to know, from the run's options.
pub(super) fn run_context(options: RunOptions, seed: u64, work_root: &Path, evidence_root: PathBuf) -> Result<Context> {
    let child = options.child.command(options.cwd.as_deref())?;
    let jobs = options.jobs.map_or_else(default_jobs, |j| j as usize);
    let deadline = options.deadline();
    let refires = options.refire.unwrap_or(crate::pipeline::run::refire::RUNS);
    let ctx =
        Context::new(options, seed, Launcher::exec(child), work_root.to_path_buf(), evidence_root, deadline, jobs);
    Ok(Context { refires, ..ctx })
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::killmode::KillMode;
    use crate::matrix::Matrix;
    use crate::plan::{Selection, plan};

    fn ready(operations: &[&str]) -> Ready {
        let ops: Vec<String> = operations.iter().map(|o| o.to_string()).collect();
        serde_json::from_value(serde_json::json!({
            "protocol": 2, "pid": 1, "op": "append", "sqlite_version": "3.53.2",
            "journal_mode": "wal", "operations": ops,
        }))
        .unwrap()
    }

    #[test]
    fn a_race_the_child_cannot_run_does_not_size_the_pool() {
        let (c, m) = (Catalog::embedded().unwrap(), Matrix::load("default").unwrap());
        let all = Selection { cells: vec![], legs: vec![], kills: vec![KillMode::Timed] };
        let jobs = plan(&c, &m, &all, 7).unwrap();
        let racers = crowd(&jobs, None);
        assert!(racers > 1, "the default gate races: {racers}");
        assert_eq!(crowd(&jobs, Some(&ready(&["append", "park", "claim", "dump"]))), racers);
        assert_eq!(crowd(&jobs, Some(&ready(&["append", "dump", "fork"]))), 1);
    }
}
