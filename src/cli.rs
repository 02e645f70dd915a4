//! The command line: argument definitions (clap derive) and the commands
//! that turn them into calls of the library. `main.rs` only calls [`main`].

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use crashcells_protocol::Mutant;

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::harness::ChildCommand;
use crate::matrix::Matrix;
use crate::options::{DEFAULT_DEADLINE_SECS, RunOptions};
use crate::pipeline::Context;
use crate::plan::{Selection, plan};
use crate::report::{self, CellResult, Format, Verdict};
use crate::run::{self, Progress};

#[derive(Debug, Parser)]
#[command(
    name = "crashcells",
    version,
    about = "Crash-persistence conformance cells for SQLite-backed session stores",
    long_about = "Crash-persistence conformance cells for SQLite-backed session stores.\n\n\
        Each cell runs a child process that writes to a real SQLite store, kills it with a real \
        SIGKILL mid-write, recovers the database and checks one clause of the persistence contract, \
        on every journal-mode leg of a matrix.\n\n\
        Exit codes of `run`: 0 nothing fired, 1 a cell fired, 2 bad input or a harness error, \
        3 nothing ran (every leg skipped), 130 or 143 interrupted by SIGINT or SIGTERM (the \
        children are killed and a partial report with `interrupted: true` is written).",
    after_help = "Examples:\n  crashcells run                                  # the CI gate: every cell, default matrix\n  \
        crashcells run --cell prefix-durability --mutant ack-before-commit\n  \
        crashcells list\n  crashcells audit --matrix audit\n  crashcells run --format json --out run.json"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run cells across a journal-mode matrix and report their verdicts.
    Run(Box<RunArgs>),
    /// List the cells of the catalog.
    List(ListArgs),
    /// Re-render a saved JSON report in another format.
    Report(ReportArgs),
    /// Audit each leg of a matrix on this machine: requested, decided, ran, on disk, honored.
    Audit(AuditArgs),
    /// Check that a child speaks the protocol (docs/PROTOCOL.md): each operation once, no kill.
    ChildCheck(ChildCheckArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    options: RunOptions,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// The report's format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Write the report to this file; a human summary still goes to the terminal.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[arg(long, value_enum, default_value = "human")]
    format: ListFormat,
    /// Read the cell catalog from this folder instead of the built-in one.
    #[arg(long, value_name = "DIR")]
    catalog: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Human,
    Json,
}

#[derive(Debug, Args)]
struct ChildCheckArgs {
    /// The child to check: the driver runs `CMD ARGS <op> ...` [default: the reference child].
    #[arg(long, value_name = "'CMD ARGS'")]
    child: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    format: ListFormat,
    /// Seconds any single operation may take.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_DEADLINE_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    deadline: u64,
    /// Where the check's stores are made [default: /dev/shm where writable, else the temp folder].
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A report written by `run --format json`.
    #[arg(long, value_name = "RUN.json")]
    from: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Debug, Args)]
struct AuditArgs {
    /// A built-in matrix (default, audit) or a path to a matrix file.
    #[arg(long, value_name = "NAME|PATH", default_value = "audit")]
    matrix: String,
    #[arg(long, value_enum, default_value = "human")]
    format: ListFormat,
    /// The folder to audit in: the audit is about its filesystem [default: the temp folder].
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// Seconds a leg's child may take to reach its acks before it is an error.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_DEADLINE_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    deadline: u64,
    /// Audit this command as the child instead of the reference store.
    #[arg(long, value_name = "'CMD ARGS'")]
    child: Option<String>,
    /// Leave out the process-crash and power-loss columns (each a recorded
    /// sweep of every workload cell on every leg).
    #[arg(long)]
    no_crash: bool,
}

/// Parses the command line, runs the command, and returns the exit code.
/// Errors print one line on stderr and exit 2.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let outcome = match cli.command {
        Command::Run(a) => cmd_run(*a),
        Command::List(a) => cmd_list(a),
        Command::Report(a) => cmd_report(a),
        Command::Audit(a) => cmd_audit(a),
        Command::ChildCheck(a) => cmd_child_check(a),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("crashcells: error: {e}");
        2
    })
}

/// Help and version print as clap makes them; a usage error prints its
/// first line only, so that bad input costs one line.
fn clap_error(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 };
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
    eprintln!("crashcells: error: {first} (see crashcells --help)");
    2
}

fn load_catalog(dir: Option<&Path>) -> Result<Catalog> {
    match dir {
        Some(d) => Catalog::from_dir(d),
        None => Catalog::embedded(),
    }
}

fn cmd_list(a: ListArgs) -> Result<i32> {
    let catalog = load_catalog(a.catalog.as_deref())?;
    match a.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&catalog.cells).expect("cells serialize")),
        ListFormat::Human => {
            for c in &catalog.cells {
                let status = match &c.reason {
                    Some(r) => format!("stub: {r}"),
                    None => format!("{:?} on {:?} legs", c.status, c.legs).to_lowercase(),
                };
                println!("{} {:<20} {}\n    {}", c.number, c.id, status, c.clause);
            }
        }
    }
    Ok(0)
}

fn cmd_report(a: ReportArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&a.from).map_err(Error::io("report", &a.from))?;
    let report = report::Report::from_json(&a.from.display().to_string(), &text)?;
    emit(&report, &a.output)?;
    Ok(report.summary.exit_code())
}

/// `child-check`: exit 0 when the child conforms, 1 when it does not.
fn cmd_child_check(a: ChildCheckArgs) -> Result<i32> {
    let child = child_command(a.child.as_deref())?;
    let workdir = workdir_or(&a.workdir, run::default_workdir)?;
    let work = tempfile::Builder::new()
        .prefix("crashcells-child-check-")
        .tempdir_in(&workdir)
        .map_err(Error::io("work folder in", &workdir))?;
    let report = crate::childcheck::check(&child, work.path(), Duration::from_secs(a.deadline));
    match a.format {
        ListFormat::Human => print!("{}", report.to_human()),
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&report).expect("a check report serializes")),
    }
    Ok(report.exit_code())
}

/// `--workdir`, or the command's default, checked to be a folder.
fn workdir_or(given: &Option<PathBuf>, default: fn() -> PathBuf) -> Result<PathBuf> {
    let workdir = given.clone().unwrap_or_else(default);
    if !workdir.is_dir() {
        return Err(Error::Usage(format!("--workdir {}: not a folder", workdir.display())));
    }
    Ok(workdir)
}

/// The child to run: `--child` if given, else this binary as the reference child.
pub fn child_command(arg: Option<&str>) -> Result<ChildCommand> {
    match arg {
        None => ChildCommand::reference().map_err(Error::io("own executable", ".")),
        Some(line) => ChildCommand::parse(line).ok_or_else(|| Error::Usage("--child: empty command".into())),
    }
}

/// Checks everything the user gave before any child runs. Mutants are the
/// reference store's; an external child gets the name as it is.
fn validate_mutant(m: &Option<String>, external_child: bool) -> Result<()> {
    let Some(name) = m.as_ref().filter(|_| !external_child) else { return Ok(()) };
    name.parse::<Mutant>().map(drop).map_err(Error::Usage)
}

fn check_out_path(out: &Option<PathBuf>) -> Result<()> {
    let Some(path) = out else { return Ok(()) };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if parent.exists() && !parent.is_dir() {
        return Err(Error::Usage(format!("--out {}: {} is not a folder", path.display(), parent.display())));
    }
    if !parent.is_dir() {
        return Err(Error::Usage(format!("--out {}: folder {} does not exist", path.display(), parent.display())));
    }
    if path.is_dir() {
        return Err(Error::Usage(format!("--out {}: is a folder", path.display())));
    }
    Ok(())
}

/// The evidence folder is made on first use, deep inside a run; a path that
/// can never become a folder (a file on the way) is bad input now, not a
/// lost piece of evidence later.
fn check_evidence_path(root: &Path) -> Result<()> {
    let blocker = root.ancestors().find(|p| p.exists()).filter(|p| !p.is_dir());
    match blocker {
        Some(file) => Err(Error::Usage(format!("--evidence: {} is not a folder", file.display()))),
        None => Ok(()),
    }
}

fn cmd_run(a: RunArgs) -> Result<i32> {
    let mut o = a.options;
    validate_mutant(&o.mutant, o.child.is_some())?;
    check_out_path(&a.output.out)?;
    let catalog = load_catalog(o.catalog.as_deref())?;
    let matrix = Matrix::load(&o.matrix)?;
    let seed = *o.seed.get_or_insert_with(crate::seed::fresh);
    let selection = Selection { cells: o.cells.clone(), legs: o.legs.clone(), kills: o.kill.modes() };
    let jobs = plan(&catalog, &matrix, &selection, seed)?;
    let run_id = run::run_id();
    let workdir = workdir_or(&o.workdir, run::default_workdir)?;
    let evidence_root = o.evidence.clone().unwrap_or_else(|| PathBuf::from("target/crashcells/evidence")).join(&run_id);
    check_evidence_path(&evidence_root)?;
    let work = tempfile::Builder::new()
        .prefix(&format!("crashcells-{run_id}-"))
        .tempdir_in(&workdir)
        .map_err(Error::io("work folder in", &workdir))?;
    // The syscall tracer matches the paths /proc reports, which are resolved:
    // a work folder reached through a symlink would match no file at all.
    let work_root = std::fs::canonicalize(work.path()).map_err(Error::io("work folder", work.path()))?;
    let mut ctx = run_context(o, seed, &work_root, evidence_root)?;
    // Interrupts are caught from here on, so that a Ctrl-C during the
    // preflight still ends with an (empty) partial report and 128 + signal:
    // an interrupted run starts no result.
    crate::harness::catch_interrupts().map_err(Error::io("signal handlers", "."))?;
    let ready = match crate::probe::preflight(&ctx.child, &ctx.work_root, ctx.deadline) {
        Ok(ready) => Some(ready),
        Err(_) if crate::harness::interrupted().is_some() => None,
        Err(message) => return Err(Error::Child { child: ctx.child.display(), message }),
    };
    ctx.child_ready = ready.clone();
    eprintln!(
        "crashcells: run {run_id}, seed {seed}, matrix {}, {} results, trials in {}",
        matrix.name,
        jobs.len(),
        workdir.display()
    );
    let started = Instant::now();
    let results = run::execute(&jobs, &ctx, ctx.jobs, &StderrProgress);
    // The SQLite of the store under test, as its own ready record says.
    let sqlite = ready.map_or_else(|| "unknown (interrupted before the preflight)".into(), |r| r.sqlite_version);
    let report = run::report(&ctx, &run_id, &workdir, results, started, sqlite);
    emit(&report, &a.output)?;
    let code = run_exit_code(&report, jobs.len());
    if code == 3 {
        eprintln!("crashcells: {}", nothing_ran(&report.summary));
    }
    Ok(code)
}

/// What every cell of a run needs to know, from the run's options.
fn run_context(options: RunOptions, seed: u64, work_root: &Path, evidence_root: PathBuf) -> Result<Context> {
    Ok(Context {
        child: child_command(options.child.as_deref())?,
        work_root: work_root.to_path_buf(),
        evidence_root,
        deadline: options.deadline(),
        jobs: options.jobs.map_or_else(default_jobs, |j| j as usize),
        seed,
        options,
        child_ready: None,
    })
}

/// The line a run that probed nothing ends with, so that a gate that reads
/// only stderr still sees why it got no evidence.
fn nothing_ran(s: &report::Summary) -> String {
    format!(
        "nothing ran: every planned leg skipped ({} skip, {} stub), so this run is no evidence either way",
        s.skip, s.stub
    )
}

/// `audit`: one short killed run per leg, one row each. Exit 0 once every
/// leg was audited, whatever the rows say; 2 on bad input or a child that
/// could not be audited.
fn cmd_audit(a: AuditArgs) -> Result<i32> {
    let matrix = Matrix::load(&a.matrix)?;
    // Not /dev/shm: an audit answers for the filesystem trials will use.
    let workdir = workdir_or(&a.workdir, std::env::temp_dir)?;
    let child = child_command(a.child.as_deref())?;
    let ready = crate::probe::preflight(&child, &workdir, Duration::from_secs(a.deadline))
        .map_err(|message| Error::Child { child: child.display(), message })?;
    eprintln!(
        "crashcells: auditing {} legs of matrix {} in {} ({})",
        matrix.legs.len(),
        matrix.name,
        workdir.display(),
        crate::audit::command::filesystem_name(&workdir)
    );
    let setup = crate::audit::command::AuditSetup {
        matrix: &matrix,
        child: &child,
        workdir: &workdir,
        deadline: Duration::from_secs(a.deadline),
        crash: (!a.no_crash).then_some(&ready),
    };
    let report = crate::audit::command::audit_matrix(&setup, a.child.as_deref())?;
    match a.format {
        ListFormat::Json => print!("{}", report.to_json()),
        ListFormat::Human => print!("{}", report.to_human()),
    }
    Ok(0)
}

/// The report's exit code, or `128 + signal` for an interrupted run, as
/// shells report a process the signal ended.
fn run_exit_code(report: &report::Report, planned: usize) -> i32 {
    let Some(sig) = crate::harness::interrupted() else { return report.summary.exit_code() };
    let name = nix::sys::signal::Signal::try_from(sig).map_or_else(|_| sig.to_string(), |s| s.as_str().to_string());
    eprintln!("crashcells: interrupted by {name}: partial report of {} of {planned} results", report.results.len());
    128 + sig
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Writes the report: to `--out` (atomically) in the chosen format with a
/// human summary on stdout, or to stdout in the chosen format.
fn emit(report: &report::Report, out: &OutputArgs) -> Result<()> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let text = report::render(report, out.format, color && out.out.is_none())?;
    match &out.out {
        None => print!("{text}"),
        Some(path) => {
            write_atomically(path, &text)?;
            print!("{}", report::render(report, Format::Human, color)?);
            eprintln!("crashcells: report written to {}", path.display());
        }
    }
    Ok(())
}

/// Writes `text` beside `path` and renames it into place, so that a reader
/// never sees half a report.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(Error::io("--out folder", dir))?;
    tmp.write_all(text.as_bytes()).map_err(Error::io("--out", path))?;
    tmp.persist(path).map_err(|e| Error::io("--out", path)(e.error))?;
    Ok(())
}

struct StderrProgress;

impl Progress for StderrProgress {
    fn started(&self, _total: usize) {}

    fn finished(&self, done: usize, total: usize, r: &CellResult) {
        let mark = if r.verdict == Verdict::Pass { "" } else { " <-" };
        eprintln!(
            "[{done:>2}/{total}] {:<5} {} / {} / {} ({:.2}s){mark}",
            r.verdict.as_str(),
            r.cell,
            r.leg,
            r.kill.as_str(),
            r.duration_ms as f64 / 1000.0
        );
    }
}
