//! `run`'s options made one checked plan in one step, as ripgrep turns its
//! low-level arguments into high-level ones: [`RunPlan::new`] makes every
//! refusal `run` can make from what it was given (options that contradict
//! each other, an unknown mutant, cell, leg or matrix, a malformed file, a
//! folder it could not write in), each one line and exit 2, before any
//! child runs; what comes out is all the run needs, derived once.
//! [`RunPlan::run`] then runs it: its work folder, the child started, every
//! job over `--jobs` threads, and the report.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crashcells_protocol::Ready;

use super::checks::{self, workdir_or};
use super::child::{probe_legs, run_context, start_child, validate_mutant};
use super::libraries::start_libraries;
use super::output::{note, reclaim};
use crate::applied;
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::{self, CellResult, ExitCode, Report, known::KnownFinding};
use crate::options::RunOptions;
use crate::pipeline::Context;
use crate::plan::{Job, Selection, plan};
use crate::report;
use crate::run::{self, Bars, RunFacts};

/// Where evidence goes when `--evidence` is not given: under the folder the
/// run starts in, one folder per run.
pub const DEFAULT_EVIDENCE: &str = "target/crashcells/evidence";

/// A run, checked: nothing in it can be refused any more.
pub(super) struct RunPlan {
    /// The options as every repro of the run names them: the seed drawn
    /// when not given, `--cwd` made absolute.
    options: RunOptions,
    seed: u64,
    /// `--known`'s file, as given, and its findings.
    known: Option<(String, Vec<KnownFinding>)>,
    /// The matrix's name (`--matrix` may be a path).
    matrix: String,
    /// How many results the seed plans, every share together.
    planned: usize,
    /// Every result the seed plans, every share together: a share's leg is
    /// judged with an earlier leg of the whole plan, as in a run of it all.
    whole: Vec<Job>,
    /// Where this run's share lies in `whole` (all of it without `--partition`).
    range: std::ops::Range<usize>,
    /// The results this run runs: its share of them with `--partition`.
    pub jobs: Vec<Job>,
    run_id: String,
    /// The folder the run starts in, where relative paths start.
    start: PathBuf,
    /// Where the run's work folder is made.
    workdir: PathBuf,
    /// Where this run keeps its evidence (made on first use).
    evidence_root: PathBuf,
}

impl RunPlan {
    /// Checks `run`'s options, `--known`'s file and `--out`'s place, in the
    /// order a user fixes them (the options themselves first), and plans.
    pub fn new(mut options: RunOptions, known: Option<&Path>, out: &Option<PathBuf>) -> Result<RunPlan> {
        checks::options(&options)?;
        validate_mutant(&options.mutant)?;
        let start = std::env::current_dir().map_err(Error::io("the folder the run starts in", "."))?;
        checks::child_folder(&mut options, &start)?;
        options.child.command(options.cwd.as_deref())?;
        checks::out_path(out)?;
        // A malformed file is bad input, said before any child runs.
        let known = known.map(|f| model::known::load(f).map(|k| (f.display().to_string(), k))).transpose()?;
        let catalog = Catalog::load(options.catalog.dir.as_deref())?;
        let matrix = Matrix::load(&options.matrix)?;
        let seed = *options.seed.get_or_insert_with(crate::seed::fresh);
        let (whole, range) = share(&options, &catalog, &matrix, seed)?;
        let (planned, jobs) = (whole.len(), whole[range.clone()].to_vec());
        checks::trial_in_plan(&options, &jobs)?;
        let run_id = run::run_id();
        let workdir = workdir_or(&options.workdir, run::default_workdir)?;
        let evidence = options.evidence.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_EVIDENCE));
        let evidence_root = evidence.join(&run_id);
        checks::evidence_path(&evidence_root, options.evidence.is_some())?;
        let matrix = matrix.name;
        Ok(RunPlan { options, seed, known, matrix, planned, whole, range, jobs, run_id, start, workdir, evidence_root })
    }

    /// Runs the plan and returns its report, judged against the known
    /// findings. `started` is when the command began: the run's duration
    /// counts the preflight (a slow child can take seconds to start, and a
    /// run interrupted then took them).
    pub fn run(mut self, started: Instant) -> Result<Report> {
        // What runs killed before they could clean up left, gone first.
        reclaim(&self.workdir);
        let (_work, work_root) = work_folder(&self.workdir, &self.run_id)?;
        // The legs' SQLite libraries, in the work folder: gone with it.
        crate::matrix::place_libraries(self.whole.iter_mut().filter_map(|j| j.leg.as_mut()), &work_root)?;
        self.jobs = self.whole[self.range.clone()].to_vec();
        let options = std::mem::take(&mut self.options);
        let mut ctx = run_context(options, self.seed, &work_root, self.evidence_root.clone())?;
        if let Some((_, findings)) = &self.known {
            ctx.known = findings.iter().map(|f| f.fingerprint.clone()).collect();
        }
        // Interrupts are caught from here on, so that a Ctrl-C during the
        // preflight still ends with an (empty) partial report and 128 +
        // signal: an interrupted run starts no result. The signals raise
        // the process's token, which the run's every wait is given.
        ctx.interrupt = crate::harness::catch_interrupts(|signal| ExitCode::Interrupted { signal }.code())
            .map_err(Error::io("signal handlers", "."))?;
        let ready = start_child(&mut ctx, &self.jobs)?;
        // Every leg of the whole plan: a share runs its judges' jobs too.
        start_libraries(&mut ctx, ready.as_ref(), &self.whole)?;
        let heard = probe_legs(&ctx, &self.whole);
        ctx.applied = Arc::new(heard.iter().filter_map(|(l, a)| Some((l.clone(), a.clone()?))).collect());
        let same = applied::judged_with(&heard);
        note(&self.heading(&ctx));
        let (jobs, copies) = self.with_judges(&same);
        let bars = Arc::new(Bars::new(copies.iter().filter(|c| c.is_none()).count()));
        let results = run::execute_once(&jobs, self.jobs.len(), &copies, &same, &ctx, bars.clone());
        bars.clear();
        Ok(self.report(&ctx, ready, results, started))
    }

    /// The share's jobs, then each job of another share that judges one of
    /// them (run here too, its own result unreported), and for each job the
    /// one whose result it takes ([`applied::copies`]): a share's copies are
    /// those of a run of the whole plan, so that the shares' union is it.
    fn with_judges(&self, same: &HashMap<String, (String, applied::Applied)>) -> (Vec<Job>, Vec<Option<usize>>) {
        let whole = applied::copies(&self.whole, same);
        let mut jobs = self.jobs.clone();
        let mut taken: Vec<usize> = Vec::new(); // whole-plan index of each job past the share
        let mut copies: Vec<Option<usize>> = Vec::with_capacity(jobs.len());
        for w in self.range.clone() {
            copies.push(whole[w].map(|judge| {
                if self.range.contains(&judge) {
                    return judge - self.range.start;
                }
                let at = taken.iter().position(|&t| t == judge).unwrap_or_else(|| {
                    taken.push(judge);
                    taken.len() - 1
                });
                self.jobs.len() + at
            }));
        }
        jobs.extend(taken.iter().map(|&t| self.whole[t].clone()));
        copies.resize(jobs.len(), None);
        (jobs, copies)
    }

    /// The line a run starts with: what it runs, with which seed, where.
    fn heading(&self, ctx: &Context) -> String {
        let share = ctx
            .options
            .partition
            .map_or(String::new(), |p| format!(" (partition {p}: {} of {})", self.jobs.len(), self.planned));
        let launcher = ctx.child.warm_pool().map(|_| format!(", operations through its {}", ctx.child.launcher()));
        format!(
            "run {}, seed {}, matrix {}, {}{share}, trials in {}{}",
            self.run_id,
            self.seed,
            self.matrix,
            report::words::plural(self.planned, "result"),
            self.workdir.display(),
            launcher.unwrap_or_default()
        )
    }

    /// The run's report, judged against the known findings; a result whose
    /// evidence could not be kept is said on stderr.
    fn report(self, ctx: &Context, ready: Option<Ready>, results: Vec<CellResult>, started: Instant) -> Report {
        // The SQLite of the store under test, as its own ready record says.
        let sqlite = ready.map_or_else(|| "unknown (interrupted before the preflight)".into(), |r| r.sqlite_version);
        let facts = RunFacts {
            run_id: &self.run_id,
            workdir: &self.workdir,
            start_folder: &self.start,
            started,
            sqlite_version: sqlite,
            planned: self.planned,
            partition: ctx.options.partition,
        };
        let mut report = run::report(ctx, facts, results);
        if let Some((file, findings)) = self.known {
            report.judge_known(Some(file), findings);
        }
        for r in report.results.iter().filter(|r| r.kept.evidence_error.is_some()) {
            let why = r.kept.evidence_error.as_deref().unwrap_or_default();
            note(&format!("evidence of {} {} {} NOT KEPT: {why}", r.cell, r.leg, r.kill.as_str()));
        }
        report
    }
}

/// The results the seed plans for these options, and where the share
/// `--partition` runs lies among them (all of them without it).
fn share(
    options: &RunOptions,
    catalog: &Catalog,
    matrix: &Matrix,
    seed: u64,
) -> Result<(Vec<Job>, std::ops::Range<usize>)> {
    let selection = Selection { cells: options.cells.clone(), legs: options.legs.clone(), kills: options.kill.modes() };
    let planned = plan(catalog, matrix, &selection, seed)?;
    let range = options.partition.map_or(0..planned.len(), |p| p.range(planned.len()));
    Ok((planned, range))
}

/// The run's work folder in `workdir`, gone with the run, and its resolved
/// path: the syscall tracer matches the paths /proc reports, which are
/// resolved, so a folder reached through a symlink would match no file.
fn work_folder(workdir: &Path, run_id: &str) -> Result<(tempfile::TempDir, PathBuf)> {
    let work = crate::scratch::folder(workdir, &format!("{run_id}-")).map_err(Error::io("work folder in", workdir))?;
    let root = std::fs::canonicalize(work.path()).map_err(Error::io("work folder", work.path()))?;
    Ok((work, root))
}
