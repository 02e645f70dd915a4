//! Running a plan: the run's work folder, the dispatcher (which job runs
//! next, on up to `--jobs` threads) and the run's one event stream it
//! feeds (progress on a terminal, each kept fire's timeline, the results
//! the report is built from), and the report.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::{CellResult, Event, Events, Fanout, Listener, Partition, Report, SCHEMA, Summary};
use crate::pipeline::Context;
use crate::plan::{Job, KillMode};

/// Where trials run when `--workdir` is not given: a memory-backed folder
/// where there is one. A `SIGKILL` tests the process's contract, not the
/// device, so memory is a fair place and much faster than a disk.
pub fn default_workdir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let writable = tempfile::Builder::new().prefix(".crashcells-probe-").tempdir_in(&shm).is_ok();
    if shm.is_dir() && writable { shm } else { std::env::temp_dir() }
}

/// A run's identity: time and pid, so two runs at once never share a folder.
pub fn run_id() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{secs}-{}", std::process::id())
}

/// Runs every job on up to `jobs` threads, telling `to` every event of
/// the run; results come back in plan order.
pub fn execute(plan: &[Job], ctx: &Context, jobs: usize, to: Arc<dyn Listener>) -> Vec<CellResult> {
    slots(plan, ctx, jobs, to).into_iter().flatten().collect()
}

/// The dispatcher: runs every job on up to `jobs` threads, each result's
/// events told to `to`, to the timeline writer and to the collector of the
/// results: a result per job in plan order, none for a job an interrupt
/// kept from starting.
fn slots(plan: &[Job], ctx: &Context, jobs: usize, to: Arc<dyn Listener>) -> Vec<Option<CellResult>> {
    let order = syscall_first(plan);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results = Arc::new(Results(Mutex::new(vec![None; plan.len()])));
    let all: Arc<dyn Listener> = Arc::new(Fanout(vec![to, Arc::new(crate::report::timeline::Writer), results.clone()]));
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, plan.len().max(1)) {
            s.spawn(|| {
                // An interrupted run starts no further result.
                while !ctx.interrupt.is_set() {
                    let Some(&index) = order.get(next.fetch_add(1, Ordering::SeqCst)) else { break };
                    let job = &plan[index];
                    // A consumer's error on these two is a bar not drawn: nothing a result says.
                    let _ = all.on(&Event::Begun { index, job });
                    let job_ctx = Context { events: Events::of(index, Arc::clone(&all)), ..ctx.clone() };
                    let result = crate::pipeline::run_job_guarded(job, &job_ctx);
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    let _ = all.on(&Event::Finished { index, done: n, total: plan.len(), result: &result });
                }
            });
        }
    });
    std::mem::take(&mut *results.0.lock().expect("no thread panics holding the results"))
}

/// The consumer the report is built from: each finished result, in its
/// slot of the plan.
struct Results(Mutex<Vec<Option<CellResult>>>);

impl Listener for Results {
    fn on(&self, event: &Event) -> Result<(), String> {
        if let Event::Finished { index, result, .. } = *event {
            self.0.lock().expect("no thread panics holding the results")[index] = Some(result.clone());
        }
        Ok(())
    }
}

/// Runs every job of `plan` that `copies` does not name another job for
/// ([`crate::applied::copies`]), on up to `ctx.jobs` threads; a job that
/// copies takes that job's result, labelled with the leg it was judged
/// with and the configuration `same` says both applied. Results come back
/// in plan order, the first `shown` jobs' (the rest run only to be copied).
pub fn execute_once(
    plan: &[Job],
    shown: usize,
    copies: &[Option<usize>],
    same: &HashMap<String, (String, crate::applied::Applied)>,
    ctx: &Context,
    to: Arc<dyn Listener>,
) -> Vec<CellResult> {
    let run: Vec<usize> = (0..plan.len()).filter(|&i| copies.get(i).copied().flatten().is_none()).collect();
    let jobs: Vec<Job> = run.iter().map(|&i| plan[i].clone()).collect();
    let mut ran: Vec<Option<CellResult>> = vec![None; plan.len()];
    for (i, result) in run.iter().zip(slots(&jobs, ctx, ctx.jobs, to)) {
        ran[*i] = result;
    }
    let copied = |i: usize| {
        let (judge, leg) = (copies.get(i).copied().flatten()?, plan[i].leg.as_ref()?);
        let configuration = same.get(&leg.name)?.1.words();
        ran[judge].as_ref().map(|r| r.judged_for(&leg.name, leg.journal_mode, configuration))
    };
    (0..shown).filter_map(|i| ran[i].clone().or_else(|| copied(i))).collect()
}

/// The order the jobs start in (the results keep the plan's): a syscall
/// result just before the timed result of its cell and leg, so that a
/// timed fire finds it under way or ended, and is confirmed by its fire
/// rather than by exec'd runs of its own
/// ([`crate::pipeline::run::plainfires`]).
fn syscall_first(plan: &[Job]) -> Vec<usize> {
    let sibling = |timed: &Job, j: &Job| {
        j.kill == KillMode::Syscall
            && j.cell.id == timed.cell.id
            && j.leg.as_ref().map(|l| &l.name) == timed.leg.as_ref().map(|l| &l.name)
    };
    let mut order = Vec::with_capacity(plan.len());
    let mut placed = vec![false; plan.len()];
    for (i, job) in plan.iter().enumerate() {
        if placed[i] {
            continue;
        }
        if job.kill == KillMode::Timed
            && let Some(s) = (i + 1..plan.len()).find(|&s| !placed[s] && sibling(job, &plan[s]))
        {
            placed[s] = true;
            order.push(s);
        }
        placed[i] = true;
        order.push(i);
    }
    order
}

/// Progress bars on stderr, one per running result (its trials or kill
/// points done of those planned) under a line for the run. indicatif hides
/// them when stderr is not a terminal, so CI logs get none of it; on a
/// terminal they are cleared as results finish, and the report's table
/// is the only list of results.
pub struct Bars {
    multi: MultiProgress,
    overall: ProgressBar,
    /// Each running result's bar and the unit it counts, by plan index.
    running: Mutex<HashMap<usize, (ProgressBar, &'static str)>>,
}

impl Bars {
    pub fn new(total: usize) -> Bars {
        Bars::counting(total, "results")
    }

    /// Bars whose line for the whole counts `total` of `unit` (`audit`
    /// counts its legs' steps, not results).
    pub fn counting(total: usize, unit: &str) -> Bars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(&format!("{{elapsed:>4}} [{{pos}}/{{len}} {unit}] {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let overall = multi.add(ProgressBar::new(total as u64).with_style(style));
        overall.enable_steady_tick(Duration::from_millis(250));
        Bars { multi, overall, running: Mutex::new(HashMap::new()) }
    }

    /// One more step of the whole done, and what comes next.
    pub fn step(&self, next: &str) {
        self.overall.inc(1);
        self.overall.set_message(next.to_string());
    }

    /// What the whole is doing now.
    pub fn say(&self, what: &str) {
        self.overall.set_message(what.to_string());
    }

    /// Clears every bar, so that what follows on the terminal starts clean.
    pub fn clear(&self) {
        self.overall.finish_and_clear();
        let _ = self.multi.clear();
    }
}

/// A result's bar before it knows how many trials or points it plans (a
/// sweep, while it records): a spinner and the phase, no `0/0` count.
const STARTING: &str = "  {prefix:<36} {spinner} {elapsed:>4} {msg}";
/// A result's bar once it knows: done of planned. Its widest line (a label
/// of [`LABEL`] characters, 9,999 points, `stores, recovering`) is 79
/// columns: a terminal of 80 does not wrap it.
const PLANNED: &str = "  {prefix:<36} {bar:12} {pos:>4}/{len:<4} {msg}";
/// The most characters of a result's label (`cell/leg/kill`) on its bar;
/// a longer one is cut in its middle (the templates' `36`).
const LABEL: usize = 36;

/// A result's label cut to [`LABEL`] characters, its start and its end kept
/// (`outbox-exactly-onc…-sync-normal/syscall`), so that the line fits.
fn fit(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= LABEL {
        return label.to_string();
    }
    let tail = LABEL / 2;
    let head = LABEL - tail - 1;
    format!("{}…{}", chars[..head].iter().collect::<String>(), chars[chars.len() - tail..].iter().collect::<String>())
}

/// The style of a result's bar, before and after its plan is known.
pub fn bar_style(planned: bool) -> ProgressStyle {
    ProgressStyle::with_template(if planned { PLANNED } else { STARTING })
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// What a result's bar counts: trials, races, kill points, or (power)
/// the distinct stores recovered, as the kill mode's row says.
fn unit(kill: crate::plan::KillMode) -> &'static str {
    kill.mode().unit
}

impl Bars {
    /// A result began: its bar, a spinner until its plan is known.
    fn begun(&self, index: usize, job: &Job) {
        let label = fit(&format!(
            "{}/{}/{}",
            job.cell.id,
            job.leg.as_ref().map_or("-", |l| l.name.as_str()),
            job.kill.as_str()
        ));
        let bar = self
            .multi
            .insert_before(&self.overall, ProgressBar::new(0).with_style(bar_style(false)).with_prefix(label));
        bar.set_message("starting");
        // The spinner and the time move while a sweep records, before any count does.
        bar.enable_steady_tick(Duration::from_millis(200));
        self.running.lock().expect("no thread panics holding the bars").insert(index, (bar, unit(job.kill)));
    }

    /// A step of result `index`'s work, drawn on its bar.
    fn stepped(&self, index: usize, event: &Event) {
        let running = self.running.lock().expect("no thread panics holding the bars");
        let Some((bar, unit)) = running.get(&index) else { return };
        match *event {
            Event::Planned { count, .. } => {
                bar.set_style(bar_style(true));
                bar.set_length(count);
                bar.set_message(*unit);
            }
            Event::Done { .. } => bar.inc(1),
            // Before the plan: the phase alone (`recording`); after it, with the unit.
            Event::Phase { phase, .. } if bar.length() == Some(0) => bar.set_message(phase.as_str()),
            Event::Phase { phase, .. } => bar.set_message(format!("{unit}, {}", phase.as_str())),
            _ => {}
        }
    }

    /// A result finished: its bar cleared, the run's line one further.
    fn finished(&self, index: usize, result: &CellResult) {
        if let Some((bar, _)) = self.running.lock().expect("no thread panics holding the bars").remove(&index) {
            bar.finish_and_clear();
        }
        self.overall.inc(1);
        if result.verdict.is_decisive() {
            self.overall.set_message(format!("last {}: {} on {}", result.verdict.as_str(), result.cell, result.leg));
        }
    }
}

impl Listener for Bars {
    fn on(&self, event: &Event) -> Result<(), String> {
        match *event {
            Event::Begun { index, job } => self.begun(index, job),
            Event::Finished { index, result, .. } => self.finished(index, result),
            Event::Staged { .. } => {}
            Event::Planned { index, .. } | Event::Done { index } | Event::Phase { index, .. } => {
                self.stepped(index, event)
            }
        }
        Ok(())
    }
}

/// What a report says about the run besides its results.
pub struct RunFacts<'a> {
    pub run_id: &'a str,
    pub workdir: &'a std::path::Path,
    /// The folder the run started in (relative paths of the run start there).
    pub start_folder: &'a std::path::Path,
    pub started: Instant,
    pub sqlite_version: String,
    /// Results the whole run planned, every partition together.
    pub planned: usize,
    pub partition: Option<Partition>,
}

/// Builds the report of a finished run.
pub fn report(ctx: &Context, facts: RunFacts, results: Vec<CellResult>) -> Report {
    let signal = ctx.interrupt.signal();
    let mut report = Report {
        schema: SCHEMA.to_string(),
        crashcells_version: crate::model::VERSION.to_string(),
        sqlite_version: facts.sqlite_version,
        seed: ctx.seed,
        matrix: ctx.options.matrix.clone(),
        duration_ms: facts.started.elapsed().as_millis() as u64,
        run_id: facts.run_id.to_string(),
        workdir: facts.workdir.display().to_string(),
        child: ctx.options.child.command.clone().unwrap_or_else(|| "reference".into()),
        interrupted: signal.is_some(),
        signal,
        command: run_command(ctx, facts.start_folder),
        planned: Some(facts.planned),
        partition: facts.partition,
        os: os_description(),
        ci: crate::model::CiRun::from_env(),
        start_folder: facts.start_folder.display().to_string(),
        launcher: launcher_said(ctx),
        containment: Some(crate::harness::contain::in_force().describe()),
        escaped: crate::harness::escaped(),
        outside: crate::kill::outside::named(
            ctx.child_ready.as_ref().and_then(|r| r.sidecar.as_deref()).map(std::path::Path::new),
        ),
        known_file: None,
        known_findings: vec![],
        new_only: false,
        summary: Summary::of(&results),
        results,
    };
    report.annotate();
    report
}

/// How the run's operations started, in the report's words: the warm
/// pool's size, or what befell the fork server (an end, its restart, the
/// fall-back to exec: docs/PROTOCOL.md §9), or why a fast path the child
/// offers was not taken in time; then the same of each placed SQLite
/// library's fork server, named; nothing when one server forked every
/// operation of each, or every one was exec'd.
fn launcher_said(ctx: &Context) -> Option<String> {
    let libraries = ctx.libraries.iter().filter_map(|l| {
        said(&l.child).map(|s| match s.strip_prefix("fork server") {
            Some(rest) if l.child.late().is_none() => format!("fork server of the {}{rest}", l.name),
            _ => s,
        })
    });
    let all: Vec<String> = said(&ctx.child).into_iter().chain(libraries).collect();
    (!all.is_empty()).then(|| all.join("; "))
}

/// What one launcher's operations met, as [`launcher_said`] says it.
fn said(launcher: &crate::harness::Launcher) -> Option<String> {
    if let Some(late) = launcher.late() {
        return Some(late.to_string());
    }
    let notes = launcher.notes();
    match launcher.warm_pool() {
        Some(_) => Some(launcher.launcher()),
        None if notes.is_empty() => None,
        None => Some(format!("fork server ({})", notes.join("; "))),
    }
}

/// The command of the whole run: its options with the seed it used. The
/// child's folder is left out when it is the start folder, so that the
/// shares of one run on machines with their checkouts in other places are
/// still of one command (each result's repro names the folder), and the
/// program is `crashcells` wherever each machine keeps it (each result's
/// repro names it as it runs there).
fn run_command(ctx: &Context, start_folder: &std::path::Path) -> String {
    let mut o = ctx.options.clone();
    o.seed = Some(ctx.seed);
    if o.cwd.as_deref() == Some(start_folder) {
        o.cwd = None;
    }
    o.command_line("crashcells")
}

/// The operating system: name, kernel release where the kernel tells it,
/// and machine, e.g. `linux 6.8.0 x86_64`. Durability depends on the kernel.
pub fn os_description() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string());
    match release {
        Ok(r) if !r.is_empty() => format!("{} {r} {}", std::env::consts::OS, std::env::consts::ARCH),
        _ => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's `launcher` says what befell each library's launcher
    /// after the run's own, and nothing for launchers that served
    /// every operation or exec'd them all.
    #[test]
    fn the_launcher_line_names_each_librarys_server_after_the_runs() {
        let mut ctx = Context::for_tests(1, None);
        assert_eq!(launcher_said(&ctx), None);
        let lib = |child| crate::pipeline::OnLibrary {
            dir: "/l".into(),
            name: "SQLite library bundled (3.54.1)".into(),
            child,
            start: std::time::Duration::ZERO,
        };
        let late = "fork server of the SQLite library bundled (3.54.1), not ready in time: ...".to_string();
        let execd = crate::harness::Launcher::exec((*ctx.child).clone());
        let slow = crate::harness::Launcher::exec_late((*ctx.child).clone(), late.clone());
        ctx.libraries = std::sync::Arc::new(vec![lib(execd)]);
        assert_eq!(launcher_said(&ctx), None);
        ctx.libraries = std::sync::Arc::new(vec![lib(slow)]);
        assert_eq!(launcher_said(&ctx).as_deref(), Some(late.as_str()));
        ctx.child = crate::harness::Launcher::exec_late((*ctx.child).clone(), "fork server, not ready".into());
        assert_eq!(launcher_said(&ctx), Some(format!("fork server, not ready; {late}")));
    }

    /// The columns a template's line takes with `msg` as its message: each
    /// placeholder its width, the text between them as it is.
    fn columns(template: &str, msg: &str) -> usize {
        let mut width = 0;
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            width += rest[..open].chars().count();
            let close = open + rest[open..].find('}').expect("a closed placeholder");
            let field = &rest[open + 1..close];
            width += match field.rsplit_once([':', '<', '>']) {
                Some((_, n)) => n.parse::<usize>().expect("a width"),
                None if field == "msg" => msg.chars().count(),
                None => 1, // the spinner
            };
            rest = &rest[close + 1..];
        }
        width + rest.chars().count()
    }

    /// Every result's bar fits a terminal of 80 columns: the longest label
    /// of the catalog's cells on the audit matrix's legs is cut to fit, and
    /// the longest message with it.
    #[test]
    fn a_results_progress_line_fits_80_columns() {
        use crate::plan::KillMode;
        let catalog = crate::catalog::Catalog::embedded().unwrap();
        let audit = crate::matrix::Matrix::load("audit").unwrap();
        let mut longest = String::new();
        for cell in &catalog.cells {
            for leg in &audit.legs {
                for kill in KillMode::all() {
                    let label = format!("{}/{}/{}", cell.id, leg.name, kill.as_str());
                    longest = if label.len() > longest.len() { label } else { longest };
                }
            }
        }
        assert!(longest.chars().count() > LABEL, "the test cuts a label: {longest}");
        assert_eq!(fit(&longest).chars().count(), LABEL, "{}", fit(&longest));
        assert!(fit(&longest).starts_with(&longest[..10]) && fit(&longest).ends_with(&longest[longest.len() - 10..]));
        let msgs = KillMode::all()
            .flat_map(|k| crate::model::Phase::all().map(|phase| format!("{}, {}", unit(k), phase.as_str())));
        let widest = msgs.map(|m| columns(PLANNED, &m).max(columns(STARTING, &m))).max().unwrap();
        assert!(widest <= 80, "{widest} columns");
        assert_eq!(columns("  {prefix:<40} {bar:20} {pos:>4}/{len:<4} {msg}", "points, checking"), 90, "as before");
    }

    /// Each syscall result starts just before the timed result of its cell
    /// and leg; every job starts once; a timed job without one keeps its place.
    #[test]
    fn a_syscall_result_starts_before_the_timed_one_of_its_cell_and_leg() {
        let catalog = crate::catalog::Catalog::embedded().unwrap();
        let matrix = crate::matrix::Matrix::load("default").unwrap();
        let sel = crate::plan::Selection { kills: vec![KillMode::Timed, KillMode::Syscall], ..Default::default() };
        let plan = crate::plan::plan(&catalog, &matrix, &sel, 1).unwrap();
        let order = syscall_first(&plan);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..plan.len()).collect::<Vec<_>>(), "every job once");
        let first = plan.iter().position(|j| j.kill == KillMode::Timed).unwrap();
        assert_eq!(plan[first + 1].kill, KillMode::Syscall, "the plan lists timed first");
        let at = |i: usize| order.iter().position(|&o| o == i).unwrap();
        assert_eq!(at(first + 1) + 1, at(first), "its syscall sibling starts just before it");
        let timed_only = crate::plan::Selection { kills: vec![KillMode::Timed], ..Default::default() };
        let plan = crate::plan::plan(&catalog, &matrix, &timed_only, 1).unwrap();
        assert_eq!(syscall_first(&plan), (0..plan.len()).collect::<Vec<_>>(), "no sibling: the plan's order");
    }

    /// A sweep's bar shows no count before it knows its points (a `0/0`
    /// flashed while it recorded), then done of planned.
    #[test]
    fn a_bar_counts_only_once_its_plan_is_known() {
        assert!(!STARTING.contains("{len}") && !STARTING.contains("{pos}"));
        assert!(STARTING.contains("{spinner}") && STARTING.contains("{msg}"));
        assert!(PLANNED.contains("{pos:>4}/{len:<4}"));
        assert_eq!(unit(crate::plan::KillMode::Power), "stores");
    }
}
