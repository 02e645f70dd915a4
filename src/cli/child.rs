//! The child a run runs: its `--mutant` checked by name, a failed preflight
//! as the user must hear it, how many of its processes a unit of the pool
//! starts at once, and the context every cell of a run shares.

use std::path::{Path, PathBuf};

use crashcells_protocol::{Mutant, Ready};

use crate::error::{Error, Result};
use crate::harness::Launcher;
use crate::options::RunOptions;
use crate::pipeline::Context;

/// Checks the mutant's name before any child runs: the names are
/// crashcells' (docs/PROTOCOL.md), whichever store implements them.
pub(super) fn validate_mutant(m: &Option<String>) -> Result<()> {
    let Some(name) = m else { return Ok(()) };
    name.parse::<Mutant>().map(drop).map_err(Error::Usage)
}

/// Why the preflight failed, as the user must hear it. With `--mutant`, a
/// child that speaks the protocol without it refused the mutant: that is
/// bad input (the mutants are the reference store's, and a `--child`
/// implements only those it says it does), not a child that is broken.
pub(super) fn preflight_failed(ctx: &Context, e: crate::probe::PreflightError) -> Error {
    let child = ctx.child.display();
    if let Some(m) = &ctx.options.mutant
        && crate::probe::preflight(&ctx.child, &ctx.work_root, ctx.deadline).is_ok()
    {
        // The last line of its stderr says why (a usage error's last line).
        let why = e.to_string();
        let why = why.rsplit(" | ").next().unwrap_or_default().trim().to_string();
        return Error::Usage(format!(
            "--mutant {m}: the child `{child}` refused it before any cell ran (the mutants are the \
             reference store's; a --child implements only those it accepts, docs/PROTOCOL.md): {why}"
        ));
    }
    Error::Child { child, message: e.to_string() }
}

/// The most children one unit of the run's pool starts together: a race's
/// claimants, or one. A job whose operations the child's ready record does
/// not list is skipped before it starts anything, so it does not count: a
/// pool sized for 8 racers the child never runs would keep 8 times the
/// processes warm for nothing.
pub(super) fn crowd(jobs: &[crate::plan::Job], ready: Option<&Ready>) -> u32 {
    let racers = |j: &crate::plan::Job| match crate::plan::shape_of(&j.cell) {
        Ok(shape @ crate::cells::Shape::Race { racers }) if runs(&shape, ready) => racers,
        _ => 1,
    };
    jobs.iter().filter(|j| j.leg.is_some()).map(racers).max().unwrap_or(1)
}

/// Whether the child lists every operation of `shape` (a child not yet
/// asked is taken at its word: it may run them all).
fn runs(shape: &crate::cells::Shape, ready: Option<&Ready>) -> bool {
    ready.is_none_or(|r| shape.operations().into_iter().all(|op| r.implements(op)))
}

/// What every cell of a run needs to know, from the run's options.
pub(super) fn run_context(options: RunOptions, seed: u64, work_root: &Path, evidence_root: PathBuf) -> Result<Context> {
    let mut child = options.child.command()?;
    child.cwd = options.cwd.clone();
    let jobs = options.jobs.map_or_else(default_jobs, |j| j as usize);
    let deadline = options.deadline();
    Ok(Context::new(options, seed, Launcher::exec(child), work_root.to_path_buf(), evidence_root, deadline, jobs))
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
