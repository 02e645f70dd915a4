//! The options of a run, kept as one serializable struct (the way turso's
//! simulator keeps its command-line options with every failing seed), and
//! the `repro` command derived from it.
//!
//! A result's verdict depends on these options and on nothing else the user
//! gives, so the command that reruns a result is these options narrowed to
//! that result. The command is derived, not assembled: every field that is
//! serialized is written back as its flag, in the order `--help` shows them,
//! so a new option reaches every repro unless it is marked `#[serde(skip)]`
//! as one that cannot change a verdict (where trials run, how many at once,
//! where evidence goes). A test parses a repro back and compares. How the
//! children started (`--fork-server`, `--warm-pool`) must not change a
//! verdict either, but a fast path that did is what a repro must show: a
//! result's repro names the path its children took ([`RunOptions::on_path`]).
//! A repro also names the program the way it runs where the run started
//! ([`program`]): `crashcells` where that is this binary on PATH, else its
//! path, so that a run started from a wheel's or npm package's folder
//! prints a line that runs as printed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::model::{Children, Partition};

use crate::plan::KillMode;

/// `--deadline` when not given; a repro names any other value.
pub const DEFAULT_DEADLINE_SECS: u64 = 30;

/// `--kill`: one kill mode of the table (`crate::killmode::MODES`), or
/// `all`, the modes marked for it (the default). A cell without a timed
/// kill (a race) runs without a kill where `timed` is asked: its results
/// say `none`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KillArg(Option<KillMode>);

/// What `all` stands for in `--kill`'s values.
const ALL: &str = "all";

impl KillArg {
    /// `--kill all`.
    pub const ALL: KillArg = KillArg(None);

    /// The kill modes it stands for, in the order results are planned.
    pub fn modes(self) -> Vec<KillMode> {
        self.0.map_or_else(KillMode::default_set, |k| vec![k])
    }

    pub fn as_str(self) -> &'static str {
        self.0.map_or(ALL, KillMode::as_str)
    }

    /// Every value `--kill` takes: each mode of the table, then `all`.
    fn values() -> &'static [KillArg] {
        static VALUES: std::sync::OnceLock<Vec<KillArg>> = std::sync::OnceLock::new();
        VALUES.get_or_init(|| KillMode::all().map(|k| KillArg(Some(k))).chain([KillArg::ALL]).collect())
    }
}

impl From<KillMode> for KillArg {
    fn from(k: KillMode) -> KillArg {
        KillArg(Some(k))
    }
}

impl ValueEnum for KillArg {
    fn value_variants<'a>() -> &'a [Self] {
        KillArg::values()
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self.0 {
            Some(k) => k.mode().help.to_string(),
            None => {
                let all: Vec<&str> = KillMode::default_set().iter().map(|k| k.as_str()).collect();
                format!("{} (the default)", all.join(" and "))
            }
        };
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}

impl Serialize for KillArg {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for KillArg {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KillArg, D::Error> {
        let name = String::deserialize(d)?;
        if name == ALL {
            return Ok(KillArg::ALL);
        }
        KillMode::named(&name).map(KillArg::from).ok_or_else(|| {
            let valid: Vec<&str> = KillArg::values().iter().map(|k| k.as_str()).collect();
            serde::de::Error::custom(crate::suggest::unknown("--kill", &name, &valid))
        })
    }
}

/// `--replay`: whether a syscall sweep rebuilds its crash states from one
/// recorded run (`on`, the default) or re-executes the child at every point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replay {
    #[default]
    On,
    Off,
}

/// Every option of `crashcells run` that a verdict can depend on, in the
/// order a repro names them, and those it cannot (not serialized).
#[derive(Clone, Debug, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct RunOptions {
    /// Run only this cell (id or number); repeatable. Default: every cell.
    #[arg(long = "cell", value_name = "ID|N")]
    pub cells: Vec<String>,
    /// A built-in matrix (default, audit, libraries) or a path to a matrix file.
    #[arg(long, value_name = "NAME|PATH", default_value = "default")]
    pub matrix: String,
    /// Run only this leg of the matrix; repeatable.
    #[arg(long = "leg", value_name = "NAME")]
    pub legs: Vec<String>,
    /// How the child is killed, or what is done to its calls (see --help for each mode).
    ///
    /// How the child is killed, or what is done to its calls instead (see
    /// --help for each mode); cell 2 runs its race without a kill where
    /// `timed` is asked.
    #[arg(long, value_enum, default_value = "all")]
    pub kill: KillArg,
    /// The run's seed; every kill point derives from it. Default: a fresh one, printed.
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub seed: Option<u64>,
    /// Trials (or races) per result, instead of the catalog's.
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = |s: &str| TRIALS.parse::<u32>(s))]
    pub trials: Option<u32>,
    /// Run only trial N of each result (what a repro command uses).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = |s: &str| TRIAL.parse::<u32>(s))]
    pub trial: Option<u32>,
    /// Syscall mode: run only kill point N (what a repro command uses).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = |s: &str| POINT.parse::<u64>(s))]
    pub point: Option<u64>,
    /// Syscall mode: visit K kill points drawn with the seed instead of all.
    #[arg(long, allow_negative_numbers = true, value_name = "K", value_parser = |s: &str| POINTS.parse::<u32>(s))]
    pub points: Option<u32>,
    /// Syscall mode: rebuild crash states from one recorded run (on) or re-run to each point.
    ///
    /// Syscall mode: rebuild every crash state from one recorded run (on,
    /// the default: each fire is confirmed by a real kill) or re-run the
    /// child to each point (off). Cell 2's sweep records each claim once,
    /// in WAL with the `-shm` its survivors map.
    #[arg(long, value_enum, value_name = "on|off")]
    pub replay: Option<Replay>,
    #[arg(
        long,
        value_name = "NAME",
        help = "Run a deliberately broken variant of the reference store (see --help for the names)",
        long_help = mutant_help()
    )]
    pub mutant: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub deadline: DeadlineArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub catalog: CatalogArg,
    #[command(flatten)]
    #[serde(flatten)]
    pub child: ChildArg,
    /// The folder the child runs in [default: the folder the run starts in].
    ///
    /// A relative path in --child starts there. The repros of a --child run name it as an
    /// absolute path, so that they run from any folder.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Results run in parallel [default: the number of cores].
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = |s: &str| JOBS.parse::<u64>(s))]
    #[serde(skip)]
    pub jobs: Option<u64>,
    #[command(flatten)]
    #[serde(skip)]
    pub workdir: WorkdirArg,
    /// Keep the evidence of fires and errors here [default: target/crashcells/evidence/RUN-ID].
    #[arg(long, value_name = "DIR")]
    #[serde(skip)]
    pub evidence: Option<PathBuf>,
    /// Run only the kth of n shares of the planned results (merge with `report --from`).
    ///
    /// Run only the kth of n equal, contiguous shares of the planned
    /// results (CI runners in parallel; merge with `report --from`). A
    /// result's verdict does not depend on the share it ran in.
    #[arg(long, value_name = "k/n")]
    #[serde(skip)]
    pub partition: Option<Partition>,
    /// How many times each fire's repro is rerun to measure how often it fires again [default: 5].
    ///
    /// How many times each fire's repro is rerun in the run, on the run's
    /// own path, to measure how often it fires again (the report's
    /// `refire`: "refired k of N"); 0 measures none. It costs only where
    /// something fired and cannot change a verdict.
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        env = "CRASHCELLS_REFIRE",
        hide_env_values = true,
        value_parser = |s: &str| REFIRE.parse::<u32>(s)
    )]
    #[serde(skip)]
    pub refire: Option<u32>,
    /// Fork a child's operations through the fork server it offers (on, the default) or exec them.
    ///
    /// Whether a child that offers a fork server (docs/PROTOCOL.md §9) has
    /// its operations forked by it (on, the default: it pays its imports
    /// once) or exec'd one by one (off: as a child without one). A forked
    /// process is checked to start as fresh as an exec'd one, and every fire
    /// found forked is run again exec'd before it is reported (one that does
    /// not fire exec'd is an error naming the fork server), so verdicts do
    /// not depend on it. A repro names the path its result ran.
    #[arg(long, value_enum, value_name = "on|off")]
    pub fork_server: Option<Replay>,
    /// Run a child's operations in the warm pool it offers (on, the default) or exec them.
    ///
    /// Whether a child that offers a warm pool (docs/PROTOCOL.md §10), and
    /// whose operations no fork server forks, has them run in processes
    /// started ahead of need, as many as --jobs times a race's claimants
    /// (on, the default: its imports are paid before an operation needs
    /// them), or exec'd one by one (off). A warm process is checked to start
    /// as fresh as an exec'd one and is used once, so verdicts do not
    /// depend on it. A repro names the path its result ran.
    #[arg(long, value_enum, value_name = "on|off")]
    pub warm_pool: Option<Replay>,
    /// Run every leg, even one that applies the configuration of an earlier leg.
    ///
    /// Run every leg of the matrix, even one whose child applies the same
    /// journal mode, synchronous level and SQLite library as an earlier leg
    /// of the run (the resolver's `default` leg and the `wal` leg it picks).
    /// Without it such a leg is judged once: its results are the earlier
    /// leg's, copied and labelled "judged with leg ...". For a store whose
    /// recovery reads the leg it was asked for rather than the one it
    /// applied (docs/PROTOCOL.md).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_leg: bool,
}

/// `--child`, as `run`, `audit` and `child-check` take it: the command of
/// the store under test, or (not given) this binary as the reference store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct ChildArg {
    /// Run this command as the child instead of the reference store: the
    /// driver runs `CMD ARGS <op> ...` (see docs/PROTOCOL.md).
    #[arg(long = "child", id = "child", value_name = "'CMD ARGS'")]
    #[serde(rename = "child")]
    pub command: Option<String>,
}

impl ChildArg {
    /// `--child LINE`.
    pub fn given(line: &str) -> ChildArg {
        ChildArg { command: Some(line.to_string()) }
    }

    /// The child to run, in `cwd` (the driver's folder when `None`): the
    /// command given, else this binary as the reference child. An empty
    /// command, or a program that does not exist or cannot be executed, is
    /// bad input.
    pub fn command(&self, cwd: Option<&Path>) -> crate::error::Result<crate::harness::ChildCommand> {
        use crate::error::Error;
        let mut child = match self.command.as_deref() {
            None => return crate::harness::ChildCommand::reference().map_err(Error::io("own executable", ".")),
            Some(line) => crate::harness::ChildCommand::parse(line)
                .ok_or_else(|| Error::Usage("--child: empty command".into()))?,
        };
        child.cwd = cwd.map(Path::to_path_buf);
        match child.unstartable() {
            Some(why) => Err(Error::Usage(format!("--child {why}"))),
            None => Ok(child),
        }
    }
}

/// `--deadline`, as `run`, `audit` and `child-check` take it: the bound on
/// any single wait for the child. Unset, it is [`DEFAULT_DEADLINE_SECS`],
/// and a repro does not name it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct DeadlineArg {
    /// Seconds any single wait for the child may take [default: 30, or more for a slow start].
    ///
    /// A wait that ends later is an error. `run`, `audit` and `child-check` wait longer when the
    /// child's measured start × the children that may start at once × 3 is more
    /// (docs/PROTOCOL.md §1).
    #[arg(
        long = "deadline",
        id = "deadline",
        allow_negative_numbers = true,
        value_name = "SECS",
        value_parser = |s: &str| DEADLINE.parse::<u64>(s)
    )]
    #[serde(rename = "deadline")]
    pub secs: Option<u64>,
}

impl DeadlineArg {
    pub fn duration(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.secs.unwrap_or(DEFAULT_DEADLINE_SECS))
    }
}

/// `--workdir`, as `run`, `audit` and `child-check` take it: the folder a
/// command makes its work folder in. Its default is the command's: trials
/// run in memory where they can (`run`, `child-check`), while an audit
/// answers for a filesystem, so it runs where the temp folder is (`audit`
/// says so in its own help).
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct WorkdirArg {
    /// Where the child's stores are made [default: /dev/shm where writable, else the temp folder].
    #[arg(long = "workdir", id = "workdir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `--catalog`, as `run` and `list` take it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args, Serialize, Deserialize)]
pub struct CatalogArg {
    /// Read the cell catalog from this folder instead of the built-in one.
    #[arg(long = "catalog", id = "catalog", value_name = "DIR")]
    #[serde(rename = "catalog")]
    pub dir: Option<PathBuf>,
}

/// The range a numeric flag takes, declared once per flag and said in its
/// error: a value outside it (`--deadline 18446744073709551615`, which no
/// `Instant` can be moved by) is bad input at the door, exit 2 naming the
/// flag and the range, never an overflow deep in a run. Each bound is far
/// above any sensible value and low enough that every sum and product the
/// run makes of it fits (a day of deadline, times the scaling of
/// `crate::pipeline::scale_deadline`, is years short of `Instant`'s end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub min: u64,
    pub max: u64,
}

/// `--deadline`: a second to a day.
pub const DEADLINE: Bound = Bound { min: 1, max: 86_400 };
/// `--trials`: trials (or races) per result.
pub const TRIALS: Bound = Bound { min: 1, max: 1_000_000 };
/// `--trial`: a trial's number, which the plan then bounds by its results' trials.
pub const TRIAL: Bound = Bound { min: 0, max: TRIALS.max - 1 };
/// `--point`: a kill point, which the census then bounds by its sweep's points.
pub const POINT: Bound = Bound { min: 1, max: 1_000_000_000 };
/// `--points`: kill points drawn per sweep.
pub const POINTS: Bound = Bound { min: 1, max: 1_000_000 };
/// `--jobs`: results at once.
pub const JOBS: Bound = Bound { min: 1, max: 1024 };
/// `--refire` (and `CRASHCELLS_REFIRE`): reruns of a fire's repro.
pub const REFIRE: Bound = Bound { min: 0, max: 1000 };
/// `prune --keep`: runs' evidence kept.
pub const KEEP: Bound = Bound { min: 0, max: 1_000_000 };

impl Bound {
    /// `s` as a whole number in this range, or why not, said as a person
    /// would (clap's own range parser says `0 is not in 1..18446744073709551615`).
    pub fn parse<T: TryFrom<u64>>(self, s: &str) -> Result<T, String> {
        let range = format!("a whole number from {} to {}", self.min, self.max);
        let n: u64 = match s.trim().parse::<u128>() {
            Ok(n) if n >= u128::from(self.min) && n <= u128::from(self.max) => n as u64,
            Ok(_) => return Err(format!("out of range: must be {range}")),
            Err(_) => return Err(format!("must be {range}")),
        };
        T::try_from(n).map_err(|_| format!("must be {range}"))
    }
}

/// `--mutant`'s long help: every mutant, the cell it is for and what it
/// breaks, from the protocol crate's list, so that a new one is named here.
fn mutant_help() -> String {
    use crashcells_protocol::Mutant;
    let width = Mutant::names().iter().map(|n| n.len()).max().unwrap_or(0);
    let mut s = String::from(
        "Run a deliberately broken variant of the reference store, to see a cell fire. A --child \
         gets the name too, and must implement it or refuse it (docs/PROTOCOL.md); the run stops with \
         exit 2 if it refuses. The mutants:",
    );
    for m in Mutant::ALL {
        s.push_str(&format!("\n  {:<width$}  cell {}: {}", m.as_str(), m.cell(), m.breaks()));
    }
    s
}

impl RunOptions {
    /// The bound on every wait of a trial.
    pub fn deadline(&self) -> std::time::Duration {
        self.deadline.duration()
    }

    /// These options narrowed to one result: its cell, its leg, its kill
    /// mode, and (for a result that did not pass) its deciding trial or
    /// kill point.
    pub fn narrowed(&self, cell: &str, leg: Option<&str>, kill: KillMode, decisive: Option<u32>) -> RunOptions {
        let mut o = self.clone();
        o.cells = vec![cell.to_string()];
        o.legs = leg.map(|l| vec![l.to_string()]).unwrap_or_default();
        o.kill = kill.into();
        if kill.sweeps_points() {
            // A sweep's trial index is its kill point; the census (0) has none.
            o.trial = None;
            o.point = decisive.map(u64::from).filter(|&p| p > 0).or(self.point);
        } else {
            // Kill points mean nothing to a timed kill or a race: they stay out.
            (o.point, o.points, o.replay) = (None, None, None);
            o.trial = decisive.or(self.trial);
        }
        if o.point.is_some() {
            o.points = None;
        }
        o
    }

    /// These options on the path a result's children took, so that its
    /// repro reruns that path and no other (issue 29): forked by the fork
    /// server, from the warm pool (no fork server), or exec'd (neither).
    /// `--replay` stays as the run was given it: a repro's one `--point` is
    /// a real kill either way.
    pub fn on_path(mut self, children: Children) -> RunOptions {
        (self.fork_server, self.warm_pool) = match children {
            Children::Forked => (Some(Replay::On), None),
            Children::Warm => (Some(Replay::Off), Some(Replay::On)),
            Children::Exec => (Some(Replay::Off), Some(Replay::Off)),
        };
        self
    }

    /// The command line that reruns exactly what these options select,
    /// started the way this run's program is reached from here ([`program`]).
    pub fn repro(&self) -> String {
        self.command_line(&program())
    }

    /// These options as `PROGRAM run ...`: the run's own command names the
    /// program `crashcells` whatever started it, so that the shares of one
    /// run on machines with the binary in other folders stay of one command.
    pub fn command_line(&self, program: &str) -> String {
        let value = serde_json::to_value(self).expect("options always serialize");
        let mut words = vec![program.to_string(), "run".to_string()];
        // Declaration order, as clap knows it: the order --help shows.
        for arg in RunOptions::augment_args(clap::Command::new("run")).get_arguments() {
            let (Some(long), Some(v)) = (arg.get_long(), value.get(arg.get_id().as_str())) else { continue };
            if v.as_bool() == Some(true) {
                words.push(format!("--{long}"));
                continue;
            }
            for word in flag_values(v) {
                words.push(format!("--{long}"));
                words.push(shell_word(&word));
            }
        }
        words.join(" ")
    }
}

/// The variable a launcher (the npm package's `bin`) sets to its own path
/// before it execs the binary: the binary lives in a per-platform package
/// folder nobody types, and the launcher is what a repro must start.
pub const INVOKED_AS: &str = "CRASHCELLS_INVOKED_AS";

/// How a repro starts the program: `crashcells` when the first `crashcells`
/// on PATH is this program (the binary, or the launcher that named itself
/// in [`INVOKED_AS`]), else the program's absolute path (a virtual
/// environment's `bin/` not activated, a binary copied to a folder of its
/// own), since a bare `crashcells` there would run another build or none.
/// Worked out once per process: neither PATH nor the program changes.
pub fn program() -> String {
    static PROGRAM: OnceLock<String> = OnceLock::new();
    let said = || std::env::var_os(INVOKED_AS);
    PROGRAM.get_or_init(|| program_from(said(), std::env::current_exe().ok(), std::env::var_os("PATH"))).clone()
}

/// The program word from what a launcher said (`said`), else this binary
/// (`exe`). A launcher names its own file, or, where no file is what a
/// user typed (`npx crashcells` inside an npm project), the command itself,
/// which a repro then starts with as it is.
fn program_from(said: Option<OsString>, exe: Option<PathBuf>, search: Option<OsString>) -> String {
    match said {
        Some(s) if !s.is_empty() && !Path::new(&s).is_file() => s.to_string_lossy().into_owned(),
        Some(s) if !s.is_empty() => program_word(Some(PathBuf::from(s)), search),
        _ => program_word(exe, search),
    }
}

/// `crashcells` when `search` (a PATH) finds `own` under that name first,
/// else `own`'s absolute path as one shell word. A program whose path is
/// gone (replaced while it ran) is named `crashcells`: nothing better is known.
fn program_word(own: Option<PathBuf>, search: Option<OsString>) -> String {
    let Some(own) = own.and_then(|p| p.canonicalize().ok()) else { return "crashcells".into() };
    let dirs: Vec<PathBuf> = search.map(|s| std::env::split_paths(&s).collect()).unwrap_or_default();
    let first = dirs.iter().map(|d| d.join("crashcells")).find(|c| executable(c));
    if first.and_then(|c| c.canonicalize().ok()).as_deref() == Some(own.as_path()) {
        "crashcells".into()
    } else {
        shell_word(&own.to_string_lossy())
    }
}

/// What a shell's PATH search takes: a file with an execute bit.
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The values a serialized option stands for: none when unset, one per
/// element of a list.
fn flag_values(v: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    match v {
        Value::Null => vec![],
        Value::Array(items) => items.iter().flat_map(flag_values).collect(),
        Value::String(s) => vec![s.clone()],
        other => vec![other.to_string()],
    }
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
    use clap::Parser;

    use super::*;

    /// A bound takes its range and says it for anything else: beyond it,
    /// below it, beyond every `u64`, or no number at all.
    #[test]
    fn a_bound_takes_its_range_and_names_it_otherwise() {
        assert_eq!(DEADLINE.parse::<u64>("30"), Ok(30));
        assert_eq!(DEADLINE.parse::<u64>(" 86400 "), Ok(86_400));
        assert_eq!(REFIRE.parse::<u32>("0"), Ok(0));
        for bad in ["0", "86401", "18446744073709551615", "18446744073709551616", "-1", "1e3", ""] {
            let e = DEADLINE.parse::<u64>(bad).unwrap_err();
            assert!(e.contains("from 1 to 86400"), "{bad}: {e}");
        }
        // A range wider than the type's is cut by the type, said the same way.
        let wide = Bound { min: 0, max: u64::MAX };
        assert!(wide.parse::<u8>("300").unwrap_err().contains("whole number"));
    }

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        options: RunOptions,
    }

    fn parse(line: &str) -> RunOptions {
        // The test's own words have no quotes to undo but the child's.
        let words = shell_words(line);
        Cmd::try_parse_from(words.iter().skip(1)).unwrap().options
    }

    /// Splits a line as a shell would, for the quoting `shell_word` does.
    fn shell_words(line: &str) -> Vec<String> {
        let (mut words, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                '\\' if !quoted => word.extend(chars.next()),
                ' ' if !quoted => {
                    if any || !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    any = false;
                }
                c => word.push(c),
            }
        }
        words.push(word);
        words
    }

    fn every_option_set() -> RunOptions {
        RunOptions {
            cells: vec!["cell-a".into()],
            matrix: "audit".into(),
            legs: vec!["wal-sync-off".into()],
            kill: KillMode::Timed.into(),
            seed: Some(42),
            trials: Some(6),
            trial: Some(3),
            point: None,
            points: Some(5),
            replay: Some(Replay::Off),
            mutant: Some("drop-append".into()),
            deadline: DeadlineArg { secs: Some(5) },
            catalog: CatalogArg { dir: Some("my cells".into()) },
            child: ChildArg { command: Some("store --flag 'x'".into()) },
            cwd: Some("/the start/folder".into()),
            jobs: None,
            workdir: WorkdirArg::default(),
            evidence: None,
            partition: None,
            refire: None,
            fork_server: Some(Replay::Off),
            warm_pool: Some(Replay::On),
            every_leg: true,
        }
    }

    #[test]
    fn a_repro_names_every_serialized_option_and_parses_back_to_them() {
        let o = every_option_set();
        let line = o.command_line("crashcells");
        assert_eq!(
            line,
            "crashcells run --cell cell-a --matrix audit --leg wal-sync-off --kill timed --seed 42 \
             --trials 6 --trial 3 --points 5 --replay off --mutant drop-append --deadline 5 --catalog 'my cells' \
             --child 'store --flag '\\''x'\\''' --cwd '/the start/folder' \
             --fork-server off --warm-pool on --every-leg"
        );
        assert_eq!(parse(&line), o);
    }

    /// A repro reruns the path its result's children took, whatever the
    /// run was given: the fork server's, the warm pool's, or exec.
    #[test]
    fn a_repro_names_the_path_its_children_took() {
        let o = RunOptions { matrix: "default".into(), seed: Some(7), ..RunOptions::default() };
        let path = |c: Children| {
            let line = o.clone().on_path(c).command_line("crashcells");
            line.strip_prefix("crashcells run --matrix default --kill all --seed 7").unwrap_or(&line).to_string()
        };
        assert_eq!(path(Children::Forked), " --fork-server on");
        assert_eq!(path(Children::Warm), " --fork-server off --warm-pool on");
        assert_eq!(path(Children::Exec), " --fork-server off --warm-pool off");
        let exec = o.clone().on_path(Children::Exec);
        assert_eq!(parse(&exec.command_line("crashcells")), exec);
    }

    #[test]
    fn options_that_cannot_change_a_verdict_stay_out_of_the_repro() {
        let mut o = every_option_set();
        (o.jobs, o.workdir.dir, o.evidence, o.refire) = (Some(3), Some("/w".into()), Some("/e".into()), Some(0));
        o.partition = Some(Partition { k: 2, n: 3 });
        assert_eq!(o.command_line("crashcells"), every_option_set().command_line("crashcells"));
    }

    #[test]
    fn narrowing_names_the_result_and_its_deciding_trial_or_point() {
        let all = RunOptions { matrix: "default".into(), seed: Some(7), points: Some(4), ..RunOptions::default() };
        let timed = all.narrowed("cell-b", Some("default"), KillMode::Timed, Some(2));
        assert_eq!(
            timed.command_line("crashcells"),
            "crashcells run --cell cell-b --matrix default --leg default --kill timed --seed 7 --trial 2"
        );
        let point = all.narrowed("cell-c", Some("delete"), KillMode::Syscall, Some(121));
        assert_eq!(
            point.command_line("crashcells"),
            "crashcells run --cell cell-c --matrix default --leg delete --kill syscall --seed 7 --point 121"
        );
        let census = all.narrowed("cell-c", None, KillMode::Syscall, Some(0));
        assert!(
            census.command_line("crashcells").ends_with("--kill syscall --seed 7 --points 4"),
            "{}",
            census.command_line("crashcells")
        );
    }

    #[test]
    fn a_child_given_variables_with_env_keeps_them_in_the_repro() {
        let child = "env HERMES_VARIANT=ledger PYTHONDONTWRITEBYTECODE=1 python3 adapter.py";
        let all = RunOptions {
            matrix: "default".into(),
            seed: Some(7),
            child: ChildArg::given(child),
            ..RunOptions::default()
        };
        let point = all.narrowed("cell-e", Some("wal"), KillMode::Syscall, Some(12));
        let line = point.command_line("crashcells");
        assert!(line.ends_with(&format!("--point 12 --child '{child}'")), "{line}");
        assert_eq!(parse(&line).child.command.as_deref(), Some(child));
        assert_eq!(parse(&line), point);
    }

    #[test]
    fn a_race_without_a_kill_reruns_as_kill_none() {
        let all = RunOptions { matrix: "default".into(), seed: Some(7), points: Some(4), ..RunOptions::default() };
        let race = all.narrowed("cell-d", Some("default"), KillMode::None, Some(5));
        let line = race.command_line("crashcells");
        assert_eq!(line, "crashcells run --cell cell-d --matrix default --leg default --kill none --seed 7 --trial 5");
        assert_eq!(parse(&line), race);
        assert_eq!(parse(&line).kill.modes(), [KillMode::None]);
    }

    /// A folder holding an executable `crashcells` (a copy of `bytes`).
    fn install(dir: &Path, bytes: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        let program = dir.join("crashcells");
        std::fs::write(&program, bytes).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        program
    }

    /// A repro's program runs as printed: `crashcells` only where the first
    /// `crashcells` on PATH is this one (or a link to it, as
    /// `node_modules/.bin` holds), its absolute path anywhere else.
    #[test]
    fn a_repro_names_the_program_by_path_where_path_finds_another_or_none() {
        let tmp = tempfile::tempdir().unwrap();
        let own = install(&tmp.path().join("my bin"), "this one");
        let other = install(&tmp.path().join("other"), "another build");
        let linked = tmp.path().join("links");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(&own, linked.join("crashcells")).unwrap();
        let search = |dirs: &[&Path]| Some(std::env::join_paths(dirs).unwrap());
        let by_path = format!("'{}'", own.canonicalize().unwrap().display());

        let first = search(&[own.parent().unwrap(), other.parent().unwrap()]);
        assert_eq!(program_word(Some(own.clone()), first), "crashcells");
        assert_eq!(program_word(Some(own.clone()), search(&[&linked])), "crashcells", "a link to it is it");
        let shadowed = search(&[other.parent().unwrap(), own.parent().unwrap()]);
        assert_eq!(program_word(Some(own.clone()), shadowed), by_path, "another build comes first");
        assert_eq!(program_word(Some(own.clone()), search(&[tmp.path()])), by_path, "none on PATH");
        assert_eq!(program_word(Some(own.clone()), None), by_path, "no PATH at all");
        assert_eq!(program_word(Some(tmp.path().join("gone")), None), "crashcells", "nothing better is known");
    }

    /// A launcher's word wins over the binary's own path: its file, by the
    /// same PATH rule, or a command (`npx crashcells`) as it is.
    #[test]
    fn a_launcher_names_the_program_for_the_binary_it_started() {
        let tmp = tempfile::tempdir().unwrap();
        let launcher = install(&tmp.path().join("node_modules/crashcells/bin"), "#!/usr/bin/env node");
        let binary = install(&tmp.path().join("node_modules/@crashcells/linux-x64/bin"), "the binary");
        let (said, exe) = (Some(launcher.clone().into_os_string()), Some(binary.clone()));
        let search = Some(std::env::join_paths([launcher.parent().unwrap()]).unwrap());
        assert_eq!(program_from(said.clone(), exe.clone(), search), "crashcells");
        let by_path = launcher.canonicalize().unwrap().display().to_string();
        assert_eq!(program_from(said, exe.clone(), None), by_path);
        assert_eq!(program_from(Some("npx crashcells".into()), exe.clone(), None), "npx crashcells");
        let own = shell_word(&binary.canonicalize().unwrap().display().to_string());
        assert_eq!(program_from(Some("".into()), exe.clone(), None), own, "an empty word says nothing");
        assert_eq!(program_from(None, exe, None), own);
    }

    #[test]
    fn a_repro_starts_with_the_program_it_is_given() {
        let o = RunOptions { matrix: "default".into(), seed: Some(7), ..RunOptions::default() };
        assert!(o.command_line("'/opt/my tools/crashcells'").starts_with("'/opt/my tools/crashcells' run --matrix"));
    }
}
