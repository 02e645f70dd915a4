//! The command line: argument definitions (clap derive) and the commands
//! that turn them into calls of the library, each a few lines: parse,
//! check into a plan, run, write. `main.rs` only calls [`main`]. `run`'s
//! options become one checked plan in [`runplan`] (with [`checks`]: what
//! `run` refuses before any child runs); the child it runs in [`child`];
//! where text goes (stdout, stderr, `--out`, the step summary) in
//! [`output`]; the exit code in [`exit`]; `list` in [`list`]. The audit is
//! the library's (`crate::audit`).

mod checks;
mod child;
mod exit;
mod libraries;
mod list;
mod outclaim;
mod output;
mod prune;
mod runplan;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::audit::{Audit, AuditSetup};
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::{self, ExitCode};
use crate::options::{CatalogArg, ChildArg, DeadlineArg, RunOptions, WorkdirArg};
use crate::report::{self, Format};
use crate::run;
use checks::workdir_or;
use exit::run_exit_code;
pub use output::write_atomically;
use output::{note, reclaim, stdout};
pub use runplan::DEFAULT_EVIDENCE;
use runplan::RunPlan;

#[derive(Debug, Parser)]
#[command(
    name = "crashcells",
    version = crate::model::VERSION,
    // Help wraps to the terminal, and to 100 columns at most (or in a log).
    max_term_width = 100,
    about = "Crash-persistence conformance cells for SQLite-backed session stores",
    long_about = "Crash-persistence conformance cells for SQLite-backed session stores.\n\n\
        Each cell runs a child process that writes to a real SQLite store, kills it with a real \
        SIGKILL mid-write, recovers the database and checks one clause of the persistence contract, \
        on every journal-mode leg of a matrix.\n\n\
        Exit codes of `run`: 0 nothing fired (or every fire is a known finding, --known), 1 a cell \
        fired or a known finding is gone, 2 bad input or a harness error, 3 nothing ran (every leg skipped), 130 or 143 interrupted by SIGINT or SIGTERM (the \
        children are killed and a partial report with `interrupted: true` is written).",
    after_help = "Examples:\n  crashcells run                                  # the CI gate: every cell, default matrix\n  \
        crashcells run --cell prefix-durability --mutant ack-before-commit\n  \
        crashcells list\n  crashcells audit --matrix audit\n  crashcells run --format json --out run.json\n\n\
        Each command has its own --help with examples (crashcells run --help)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run cells across a journal-mode matrix and report their verdicts.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// List the cells of the catalog.
    #[command(after_help = "Examples:\n  crashcells list\n  crashcells list --format json")]
    List(ListArgs),
    /// Render saved JSON reports again, merging the partitions of one run.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Audit each leg of a matrix on this machine: requested, decided, ran, on disk, honored.
    #[command(
        after_help = "Examples:\n  crashcells audit                                    # the audit matrix, in the temp folder\n  \
        crashcells audit --matrix default --workdir /var/lib/app --format json\n  \
        crashcells audit --child 'python3 examples/python-store/store.py'\n\n\
        Exit codes: 0 once every leg was audited (whatever the rows say), 2 on bad input."
    )]
    Audit(AuditArgs),
    /// Check that a child speaks the protocol (docs/PROTOCOL.md): each operation once, no kill.
    #[command(after_help = "Examples:\n  crashcells child-check --child 'python3 examples/python-store/store.py'\n  \
        crashcells child-check --child ./my-store-adapter --format json\n\n\
        Exit codes: 0 the child conforms, 1 it does not, 2 bad input.")]
    ChildCheck(ChildCheckArgs),
    /// Remove the evidence of old runs, keeping the newest.
    #[command(after_help = "Examples:\n  crashcells prune                      # keep the 5 newest runs' evidence\n  \
        crashcells prune --keep 0 --evidence ci-evidence")]
    Prune(PruneArgs),
}

const RUN_EXAMPLES: &str = "Examples:\n  \
    crashcells run                                           # the CI gate: every cell, default matrix\n  \
    crashcells run --cell 1 --mutant drop-append             # see a fire, its evidence and its repro\n  \
    crashcells run --cell 3 --kill syscall --points 5        # 5 seeded kill points of cell 3's sweep\n  \
    crashcells run --matrix audit --format junit --out run.xml\n  \
    crashcells run --seed 42 --partition 2/4 --format json --out part-2.json  # a CI runner's share\n  \
    crashcells run --child 'python3 examples/python-store/store.py'\n  \
    crashcells run --known .crashcells/known.toml            # known findings do not fail the run\n\n\
    Exit codes: 0 nothing fired (or every fire is known), 1 a cell fired (not known) or a known\n  \
    finding is gone, 2 bad input or a harness error, 3 nothing ran,\n  \
    128 + signal when interrupted (a partial report is still written).\n\
    Evidence of fires and errors: target/crashcells/evidence/RUN-ID/ under the current folder,\n  \
    or --evidence DIR; `crashcells prune` removes old runs'.";

const REPORT_EXAMPLES: &str = "Examples:\n  \
    crashcells report --from run.json --format markdown\n  \
    crashcells report --from part-1.json --from part-2.json --format junit --out run.xml\n\n\
    crashcells report --from run.json --known .crashcells/known.toml --new-only --format markdown\n\n\
    Several --from merge the partitions of one run (run --partition k/n): the seed, command and\n  \
    plan must agree, and every partition must be given. Exit codes: as the run would have exited\n  \
    (0 nothing fired or every fire known, 1 a fire not known or a known finding gone, 2 an error,\n  \
    3 nothing ran, 128 + signal for an interrupted run), 2 on bad input. `run` appends its Markdown to GITHUB_STEP_SUMMARY; `report` does only with\n  \
    --step-summary (the merge job), so that no run shows twice on a job's page.";

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    options: RunOptions,
    /// Known findings (docs/CI.md): a fire listed there does not fail the run.
    ///
    /// Known findings (docs/CI.md): a fire whose fingerprint this TOML file lists is `known`, with
    /// its issue, and does not fail the run; a listed finding that a whole sweep no longer fires is
    /// gone (exit 1). Not part of a repro: a repro reproduces the fire.
    #[arg(long, value_name = "FILE")]
    known: Option<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// The report's format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Write the report to this file.
    ///
    /// Write the report to this file (`run` still prints its human report; `report` only with --show
    /// or on a terminal). Refused while another crashcells writes the same file.
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
}

impl OutputArgs {
    /// The files that hold the whole report: a JSON `--out`, which a
    /// Markdown that had to leave fires out (the step summary's) points to.
    fn whole(&self) -> Vec<String> {
        match (&self.out, self.format) {
            (Some(path), Format::Json) => vec![path.display().to_string()],
            _ => vec![],
        }
    }
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    catalog: CatalogArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Human,
    Json,
}

/// `--format` of the commands that print text or JSON and nothing else
/// (`list`, `audit`, `child-check`).
#[derive(Debug, Args)]
struct TextOrJson {
    #[arg(long, value_enum, default_value = "human")]
    format: ListFormat,
}

impl TextOrJson {
    /// Prints what was asked for, rendering only that.
    fn print(&self, human: impl FnOnce() -> String, json: impl FnOnce() -> String) -> Result<()> {
        stdout(&match self.format {
            ListFormat::Human => human(),
            ListFormat::Json => json(),
        })
    }
}

#[derive(Debug, Args)]
struct ChildCheckArgs {
    #[command(flatten)]
    child: ChildArg,
    /// Run only these checks (comma-separated or repeated; `ready` and the other checks of `append`
    /// always run, since every check needs them): the others are `not run`, saying so. For an
    /// adapter's author fixing one failing check.
    #[arg(long, value_name = "CHECK", value_delimiter = ',')]
    only: Vec<String>,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    deadline: DeadlineArg,
    #[command(flatten)]
    workdir: WorkdirArg,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A report written by `run --format json`; repeat it to merge the partitions of one run.
    #[arg(long, value_name = "RUN.json", required = true)]
    from: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
    /// Also append the Markdown to the file GITHUB_STEP_SUMMARY names (as `run` always does):
    /// for the job that merges the shares, whose page would show no run otherwise.
    #[arg(long)]
    step_summary: bool,
    /// Judge the fires against this known-findings file (as `run --known` does), instead of the
    /// file the run was judged against, if any.
    #[arg(long, value_name = "FILE")]
    known: Option<PathBuf>,
    /// Show only what is new: the fires that are not known, and the known findings that are gone
    /// (the text to post to a tracking issue). Human or Markdown: a JSON or JUnit report is whole.
    #[arg(long)]
    new_only: bool,
    /// With --out, also print the human report on stdout (done anyway when stdout is a terminal;
    /// in a CI log, a report rendered again is said in one line on stderr).
    #[arg(long)]
    show: bool,
}

/// `audit`'s options. `--matrix` is declared apart from `run`'s because
/// its default differs: the audit matrix covers every mode a manual audit
/// asks about, the default matrix is what the CI gate runs.
#[derive(Debug, Args)]
// Not /dev/shm, as `run`'s trials: an audit answers for a filesystem.
#[command(mut_arg("workdir", |a| a.help(AUDIT_WORKDIR_HELP)))]
struct AuditArgs {
    /// A built-in matrix (default, audit, libraries) or a path to a matrix file.
    #[arg(long, value_name = "NAME|PATH", default_value = "audit")]
    matrix: String,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    workdir: WorkdirArg,
    #[command(flatten)]
    deadline: DeadlineArg,
    #[command(flatten)]
    child: ChildArg,
    /// Leave out the crash columns: process crash, power loss, torn power
    /// loss and failed write or sync (each a sweep of every workload cell on
    /// every leg; most of the audit's time).
    #[arg(long)]
    no_crash: bool,
}

/// `audit --workdir`'s help: its default is the temp folder, not `run`'s.
const AUDIT_WORKDIR_HELP: &str = "The folder to audit in: each leg's row is about its filesystem [default: the temp \
    folder]. The crash columns' sweeps, model-based, run where `run`'s trials do (/dev/shm where writable)";

#[derive(Debug, Args)]
struct PruneArgs {
    /// The evidence folder runs kept their evidence in.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_EVIDENCE)]
    evidence: PathBuf,
    #[command(flatten)]
    workdir: WorkdirArg,
    /// How many of the newest runs' evidence to keep.
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value = "5",
        value_parser = |s: &str| crate::options::KEEP.parse::<usize>(s)
    )]
    keep: usize,
}

/// Parses the command line, runs the command, and returns the exit code.
/// Errors print one line on stderr and exit 2.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    if matches!(cli.command, Command::Run(_) | Command::Audit(_) | Command::ChildCheck(_)) {
        // From the main thread, before any other: where every child goes.
        crate::harness::contain();
    }
    let outcome = match cli.command {
        Command::Run(a) => cmd_run(*a),
        Command::List(a) => cmd_list(a),
        Command::Report(a) => cmd_report(a),
        Command::Audit(a) => cmd_audit(a),
        Command::ChildCheck(a) => cmd_child_check(a),
        Command::Prune(a) => cmd_prune(a),
    };
    let code = outcome.unwrap_or_else(|e| {
        note(&format!("error: {e}"));
        ExitCode::Error
    });
    // Every path has killed its children by now; some may still be dying
    // (a fork server's, after an interrupt on a loaded machine). None
    // outlives the driver.
    crate::harness::reap_leftovers(crate::harness::KILL_GRACE);
    code
}

/// Help and version print as clap makes them; a usage error prints its
/// first line only, so that bad input costs one line.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Through our stdout, so that `crashcells --help | head -1` ends quietly.
        let _ = stdout(&e.render().to_string());
        let missing = e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
        return if missing { ExitCode::Error } else { ExitCode::Pass };
    }
    // A refused command line that names an `--out` leaves no older report
    // there either (unless another run holds it).
    if let Some((out, from)) = outclaim::from_raw_args(&std::env::args_os().collect::<Vec<_>>()) {
        drop(outclaim::OutClaim::take(Some(&out), &from));
    }
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
    note(&format!("error: {first}{} (see crashcells --help)", valid_values(&e)));
    ExitCode::Error
}

/// For a value clap refused from a fixed set (`--format jsno`): the nearest
/// valid value and all of them, which clap's first line leaves out.
fn valid_values(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(word)), Some(ContextValue::Strings(valid))) =
        (e.get(ContextKind::InvalidValue), e.get(ContextKind::ValidValue))
    else {
        return String::new();
    };
    let valid: Vec<&str> = valid.iter().map(String::as_str).collect();
    format!("{} (valid: {})", crate::suggest::did_you_mean(word, &valid), valid.join(", "))
}

fn cmd_list(a: ListArgs) -> Result<ExitCode> {
    let catalog = Catalog::load(a.catalog.dir.as_deref())?;
    a.format.print(|| list::render(&catalog, false), || list::render(&catalog, true))?;
    Ok(ExitCode::Pass)
}

/// `report`: one saved report rendered again, or the partitions of one run
/// merged first. Exits as the run would have.
fn cmd_report(a: ReportArgs) -> Result<ExitCode> {
    let _out = outclaim::OutClaim::take(a.output.out.as_deref(), &a.from)?;
    check_new_only(&a)?;
    let mut report = model::merge::merge_files(&a.from)?;
    if let Some(file) = &a.known {
        report.judge_known(Some(file.display().to_string()), model::known::load(file)?);
    }
    let sources: Vec<String> = a.from.iter().map(|f| f.display().to_string()).collect();
    let show = a.show || std::io::stdout().is_terminal();
    match a.new_only {
        true => emit(&report.new_only(), &a.output, &sources, a.step_summary, show)?,
        false => emit(&report, &a.output, &sources, a.step_summary, show)?,
    }
    // The whole run's exit code, whatever part of it was shown.
    Ok(report.exit_code())
}

/// `--new-only` shows part of a run: only the renderings a person reads.
fn check_new_only(a: &ReportArgs) -> Result<()> {
    match (a.new_only, a.output.format) {
        (true, Format::Json | Format::Junit) => Err(Error::Usage(format!(
            "--new-only renders human or markdown: a {} report is the whole run",
            if a.output.format == Format::Json { "JSON" } else { "JUnit" }
        ))),
        _ => Ok(()),
    }
}

/// `child-check`: exit 0 when the child conforms, 1 when it does not.
fn cmd_child_check(a: ChildCheckArgs) -> Result<ExitCode> {
    let child = a.child.command(None)?;
    let only = crate::childcheck::Only::new(a.only).map_err(Error::Usage)?;
    let workdir = workdir_or(&a.workdir, run::default_workdir)?;
    reclaim(&workdir);
    let work = crate::scratch::folder(&workdir, &crate::childcheck::work_prefix())
        .map_err(Error::io("work folder in", &workdir))?;
    let report = crate::childcheck::check(&child, work.path(), a.deadline.duration(), &only);
    let json = || serde_json::to_string_pretty(&report).expect("a check report serializes") + "\n";
    a.format.print(|| report.to_human(), json)?;
    Ok(report.exit_code())
}

/// `prune`: removes the scratch folders of dead runs where runs make them,
/// and all but the newest runs' evidence.
fn cmd_prune(a: PruneArgs) -> Result<ExitCode> {
    let mut roots = vec![run::default_workdir(), std::env::temp_dir()];
    roots.extend(a.workdir.dir.clone());
    let mut seen = std::collections::HashSet::new();
    roots.retain(|r| seen.insert(r.clone()));
    let freed =
        roots.iter().fold(crate::scratch::Reclaimed::default(), |sum, root| sum + crate::scratch::reclaim(root));
    let places: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    stdout(&format!("{}\n", freed.said(&places.join(", "))))?;
    for line in prune::prune(&a.evidence, a.keep)? {
        stdout(&format!("{line}\n"))?;
    }
    Ok(ExitCode::Pass)
}

/// `run`: the options checked into one plan, the plan run, the report
/// written; exits as the report says.
fn cmd_run(a: RunArgs) -> Result<ExitCode> {
    let started = Instant::now();
    // Before anything else can fail: no stale report at --out, no second run on it.
    let _out = outclaim::OutClaim::take(a.output.out.as_deref(), &[])?;
    let plan = RunPlan::new(a.options, a.known.as_deref(), &a.output.out)?;
    let share = plan.jobs.len();
    let report = plan.run(started)?;
    // A run's own log shows its human report, wherever the report goes.
    emit(&report, &a.output, &a.output.whole(), true, true)?;
    Ok(run_exit_code(&report, share))
}

/// `audit`: one short killed run per leg, one row each. Exit 0 once every
/// leg was audited, whatever the rows say; 2 on bad input or a child that
/// could not be audited.
fn cmd_audit(a: AuditArgs) -> Result<ExitCode> {
    let audit = Audit::start(a.setup()?)?;
    note(&audit.heading());
    let report = audit.run()?;
    a.format.print(|| report.to_human(), || report.to_json())?;
    Ok(ExitCode::Pass)
}

impl AuditArgs {
    /// The audit these options ask for, each checked: the matrix read, the
    /// folder writable, the child's command line not empty.
    fn setup(&self) -> Result<AuditSetup> {
        Ok(AuditSetup {
            matrix: Matrix::load(&self.matrix)?,
            matrix_arg: self.matrix.clone(),
            // Not /dev/shm: an audit answers for the filesystem trials will use.
            workdir: workdir_or(&self.workdir, std::env::temp_dir)?,
            child_arg: self.child.command.clone(),
            child: self.child.command(None)?,
            deadline: self.deadline.duration(),
            crash: !self.no_crash,
            start: std::time::Duration::ZERO,
            interrupt: crate::harness::Interrupt::new(),
        })
    }
}

/// Writes the report: to `--out` (atomically) in the chosen format, with
/// the human report on stdout when `show`, or to stdout in the chosen
/// format; and, when `step_summary`, its Markdown to the GitHub step
/// summary if there is one. `whole` names the files that hold the whole
/// report, for a Markdown that must leave fires out to fit in a comment.
fn emit(report: &model::Report, out: &OutputArgs, whole: &[String], step_summary: bool, show: bool) -> Result<()> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let markdown = || report::markdown::render_within(report, whole, report::markdown::LIMIT);
    let text = match out.format {
        Format::Markdown => markdown(),
        format => report::render(report, format, color && out.out.is_none())?,
    };
    let written = match &out.out {
        None => stdout(&text),
        Some(path) => {
            let written = write_atomically(path, &text);
            // An `--out` that could not be written loses no report: the
            // human one goes to stdout, then the error names the file.
            if show || written.is_err() {
                stdout(&report::render(report, Format::Human, color)?)?;
            }
            // The counts too: a CI log that shows no report still says what it held.
            let s = &report.summary;
            let what = format!("{}: {}", report::words::plural(s.total(), "result"), s.counts());
            written.inspect(|()| note(&format!("report written to {} ({what})", path.display())))
        }
    };
    if step_summary {
        output::step_summary(&markdown());
    }
    written
}
