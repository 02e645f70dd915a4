//! Recovery passes. After the kill, the driver reads the store only through
//! the child's `dump` operation, each pass a fresh process, so that any store
//! behind the protocol can be checked and recovery itself is exercised twice.
//!
//! Clause (every cell): recovery is deterministic: two passes print the same
//! canonical state; and the recovered file passes `PRAGMA integrity_check`.
//!
//! Recovery changes the files it opens (a hot journal is rolled back, a WAL
//! is checkpointed and removed), so each pass runs on its own copy of the
//! crash state (`recovery-1/`, `recovery-2/`): the second pass recovers the
//! same crash state as the first, not the first's result, and the trial's own
//! database, `-wal` and `-journal` stay as the kill left them: that is the
//! evidence a fire keeps.
//!
//! Many crash states at once (recorded sweeps): a child that lists
//! `dump-batch` recovers each pass's copies of a whole batch in one process
//! (`dump --db A --db B ...`, a line per database); a batch that fails is
//! recovered again one state per process, so that a bad state is found and
//! named, and every other state still gets its verdict. A crash state
//! without a database file (a power loss before the file's name was made
//! durable) is an empty store, as SQLite itself would open it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crashcells_protocol::{Dump, Op, OpArgs, PROTOCOL};

use crate::audit::sibling;
use crate::harness::{ChildCommand, Cut, Exit, run_to_end};
use crate::pipeline::TrialEnv;

/// Why a recovery pass gave no state: the harness's error, never a finding.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    #[error("copying the database for recovery pass {pass}: {source}")]
    Copy { pass: u32, source: std::io::Error },
    #[error("recovery pass {pass} could not start: {source}")]
    Start { pass: u32, source: std::io::Error },
    #[error("recovery pass {pass} failed ({exit}): {stderr_tail}")]
    Failed { pass: u32, exit: Exit, stderr_tail: String },
    #[error("recovery pass {pass} did not finish within {deadline:?}")]
    Deadline { pass: u32, deadline: Duration },
    /// The run was interrupted during the pass: no finding, no error.
    #[error("recovery pass {pass} was cut short by the interrupt")]
    Interrupted { pass: u32 },
    #[error("recovery pass {pass}: {source}")]
    Read { pass: u32, source: std::io::Error },
    #[error("recovery pass 1 printed no dump: {0}")]
    NotADump(serde_json::Error),
}

/// The recovered state of a trial's store, read twice.
#[derive(Clone, Debug)]
pub struct Recovered {
    pub dump: Dump,
    /// Why the two passes disagree, if they do.
    pub nondeterministic: Option<String>,
    /// True when the crash left no database file: the state is the empty
    /// store, and no pass ran.
    pub missing_db: bool,
}

impl Recovered {
    /// A crash state without a database file: an empty store.
    fn missing() -> Recovered {
        Recovered { dump: Dump::empty(PROTOCOL, "ok".into()), nondeterministic: None, missing_db: true }
    }

    /// Two passes' texts of one state: the first parsed, the two compared.
    fn of(first: &str, second: &str) -> Result<Recovered, RecoveryError> {
        let dump: Dump = serde_json::from_str(first.trim()).map_err(RecoveryError::NotADump)?;
        let nondeterministic = (first != second).then(|| first_difference(first, second));
        Ok(Recovered { dump, nondeterministic, missing_db: false })
    }
}

/// The files of a database: the file itself and every journal beside it.
const DB_FILES: [&str; 4] = ["", "-wal", "-journal", "-shm"];

/// Copies the database and its journal files, as they are, into `dir`;
/// returns the copy's path. Nothing writes them any more (the child is
/// reaped), so a copy is the crash state exactly.
fn copy_db(db: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let copy = dir.join(db.file_name().unwrap_or_else(|| "store.db".as_ref()));
    for suffix in DB_FILES {
        let from = sibling(db, suffix);
        if from.exists() {
            std::fs::copy(&from, sibling(&copy, suffix))?;
        }
    }
    Ok(copy)
}

/// Where a pass runs: the child, its deadline and config home, and the
/// folder its output goes to.
pub struct Passes<'a> {
    pub child: &'a ChildCommand,
    pub deadline: Duration,
    pub home: &'a Path,
    pub out: &'a Path,
}

/// One `dump` pass on `dbs` (several only for a `dump-batch` child): its
/// stdout, in `out` as `dump-{label}.json`.
fn pass(p: &Passes, dbs: &[&Path], n: u32, label: &str) -> Result<String, RecoveryError> {
    let args = dbs.iter().fold(OpArgs::new(Op::Dump), |a, db| a.db(db)).to_args();
    let stdout = p.out.join(format!("dump-{label}.json"));
    let stderr = p.out.join(format!("dump-{label}.stderr"));
    let (exit, stderr_tail) = run_to_end(p.child.command(&args, p.home), &stdout, &stderr, p.deadline)
        .map_err(|source| RecoveryError::Start { pass: n, source })?;
    let deadline = p.deadline;
    match exit {
        Ok(Exit::Code(0)) => std::fs::read_to_string(&stdout).map_err(|source| RecoveryError::Read { pass: n, source }),
        Ok(exit) => Err(RecoveryError::Failed { pass: n, exit, stderr_tail }),
        Err(Cut::Deadline) => Err(RecoveryError::Deadline { pass: n, deadline }),
        Err(Cut::Interrupted) => Err(RecoveryError::Interrupted { pass: n }),
    }
}

/// Runs two recovery passes and parses the first. An `Err` is a harness
/// error (a pass that could not run or printed something that is not a dump).
pub fn recover(child: &ChildCommand, deadline: Duration, env: &TrialEnv) -> Result<Recovered, RecoveryError> {
    if !env.db.exists() {
        return Ok(Recovered::missing());
    }
    let copy = |pass: u32| {
        copy_db(&env.db, &env.path(&format!("recovery-{pass}"))).map_err(|source| RecoveryError::Copy { pass, source })
    };
    let dir = env.db.parent().unwrap_or(Path::new("."));
    let p = Passes { child, deadline, home: &env.home, out: dir };
    let first = pass(&p, &[&copy(1)?], 1, "1")?;
    let second = pass(&p, &[&copy(2)?], 2, "2")?;
    Recovered::of(&first, &second)
}

/// One crash state of a batch: its database in pass 1's copy and in pass 2's.
#[derive(Clone, Debug)]
pub struct Pair {
    pub first: PathBuf,
    pub second: PathBuf,
}

/// A batch's recoveries, in the order of its states, and a note when the
/// batched form failed and each state was recovered alone.
#[derive(Debug)]
pub struct BatchRecovery {
    pub results: Vec<Result<Recovered, RecoveryError>>,
    pub note: Option<String>,
}

/// Recovers every state of a batch twice: in one process per pass when
/// `batched` (the child lists `dump-batch`), else (or when that fails) one
/// process per state and pass.
pub fn recover_batch(p: &Passes, states: &[Pair], batched: bool) -> BatchRecovery {
    let present: Vec<usize> = (0..states.len()).filter(|&i| states[i].first.exists()).collect();
    let mut results: Vec<Option<Result<Recovered, RecoveryError>>> =
        states.iter().map(|s| (!s.first.exists()).then(|| Ok(Recovered::missing()))).collect();
    let mut note = None;
    let together = match present.len() {
        0 => Some(Vec::new()),
        1 => None,
        _ if batched => match batch_passes(p, states, &present) {
            Ok(each) => Some(each),
            Err(why) => {
                note = Some(format!("the batched dump failed ({why}); each state was recovered alone"));
                None
            }
        },
        _ => None,
    };
    let each = together.unwrap_or_else(|| present.iter().map(|&i| alone(p, &states[i], i)).collect());
    for (&i, r) in present.iter().zip(each) {
        results[i] = Some(r);
    }
    BatchRecovery { results: results.into_iter().map(|r| r.expect("every state has a result")).collect(), note }
}

/// Both passes over the present states in one process each; `Err` when
/// either pass failed or printed another number of lines than databases.
fn batch_passes(
    p: &Passes,
    states: &[Pair],
    present: &[usize],
) -> Result<Vec<Result<Recovered, RecoveryError>>, String> {
    let run = |n: u32| -> Result<String, String> {
        let dbs: Vec<&Path> =
            present.iter().map(|&i| if n == 1 { &states[i].first } else { &states[i].second }.as_path()).collect();
        let text = pass(p, &dbs, n, &format!("batch-{n}")).map_err(|e| e.to_string())?;
        match text.lines().count() {
            lines if lines == dbs.len() => Ok(text),
            lines => Err(format!("pass {n} printed {lines} lines for {} databases", dbs.len())),
        }
    };
    let (first, second) = (run(1)?, run(2)?);
    Ok(first.lines().zip(second.lines()).map(|(a, b)| Recovered::of(&format!("{a}\n"), &format!("{b}\n"))).collect())
}

/// Both passes of one state, each in a process of its own.
fn alone(p: &Passes, state: &Pair, i: usize) -> Result<Recovered, RecoveryError> {
    let first = pass(p, &[&state.first], 1, &format!("{i}-1"))?;
    let second = pass(p, &[&state.second], 2, &format!("{i}-2"))?;
    Recovered::of(&first, &second)
}

fn first_difference(a: &str, b: &str) -> String {
    format!("recovery is not deterministic: the two passes differ {}", where_differ(a, b))
}

/// Where two texts first differ: `at byte N ("…" vs "…")`, with a little
/// context on each side.
pub fn where_differ(a: &str, b: &str) -> String {
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let around = |s: &str| s.get(at.saturating_sub(20)..(at + 40).min(s.len())).unwrap_or("").to_string();
    format!("at byte {at} ({:?} vs {:?})", around(a), around(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_keeps_every_journal_file_and_leaves_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        for (suffix, body) in [("", "db"), ("-wal", "wal"), ("-journal", "journal")] {
            std::fs::write(sibling(&db, suffix), body).unwrap();
        }
        let copy = copy_db(&db, &dir.path().join("recovery")).unwrap();
        assert_eq!(copy, dir.path().join("recovery/store.db"));
        for (suffix, body) in [("", "db"), ("-wal", "wal"), ("-journal", "journal")] {
            assert_eq!(std::fs::read_to_string(sibling(&copy, suffix)).unwrap(), body);
            assert!(sibling(&db, suffix).exists());
        }
        assert!(!sibling(&copy, "-shm").exists());
    }

    /// A child whose `dump` takes one `--db` only, and fails on more.
    fn single_only(dir: &Path) -> ChildCommand {
        let script = dir.join("child.sh");
        let empty = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#;
        let text = format!("[ $(echo \"$@\" | grep -o -- --db | wc -l) -gt 1 ] && exit 1\necho '{empty}'\n");
        std::fs::write(&script, text).unwrap();
        ChildCommand { program: "sh".into(), prefix: vec![script.into()] }
    }

    #[test]
    fn a_failing_batch_is_recovered_one_state_at_a_time_and_a_missing_database_is_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let child = single_only(dir.path());
        let pair = |name: &str, present: bool| {
            let p = Pair {
                first: dir.path().join(format!("{name}-1.db")),
                second: dir.path().join(format!("{name}-2.db")),
            };
            if present {
                std::fs::write(&p.first, b"").unwrap();
                std::fs::write(&p.second, b"").unwrap();
            }
            p
        };
        let states = [pair("a", true), pair("gone", false), pair("b", true)];
        let p = Passes { child: &child, deadline: Duration::from_secs(10), home: dir.path(), out: dir.path() };
        let got = recover_batch(&p, &states, true);
        assert!(got.note.as_deref().unwrap().starts_with("the batched dump failed"), "{:?}", got.note);
        let missing: Vec<bool> = got.results.iter().map(|r| r.as_ref().unwrap().missing_db).collect();
        assert_eq!(missing, [false, true, false]);
        let alone = recover_batch(&p, &states, false);
        assert!(alone.note.is_none() && alone.results.iter().all(Result::is_ok));
    }

    #[test]
    fn difference_names_the_byte() {
        let d = first_difference(r#"{"a":1}"#, r#"{"a":2}"#);
        assert!(d.contains("byte 5"), "{d}");
    }
}
