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

use std::path::{Path, PathBuf};
use std::time::Duration;

use crashcells_protocol::{Dump, Op, OpArgs};

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
#[derive(Debug)]
pub struct Recovered {
    pub dump: Dump,
    /// Why the two passes disagree, if they do.
    pub nondeterministic: Option<String>,
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

/// One `dump` pass on `db`: the canonical JSON text.
fn pass(child: &ChildCommand, deadline: Duration, env: &TrialEnv, db: &Path, n: u32) -> Result<String, RecoveryError> {
    let args = OpArgs::new(Op::Dump).db(db).to_args();
    let stdout = env.path(&format!("dump-{n}.json"));
    let stderr = env.path(&format!("dump-{n}.stderr"));
    let (exit, stderr_tail) = run_to_end(child.command(&args, &env.home), &stdout, &stderr, deadline)
        .map_err(|source| RecoveryError::Start { pass: n, source })?;
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
    let copy = |pass: u32| {
        copy_db(&env.db, &env.path(&format!("recovery-{pass}"))).map_err(|source| RecoveryError::Copy { pass, source })
    };
    let first = pass(child, deadline, env, &copy(1)?, 1)?;
    let second = pass(child, deadline, env, &copy(2)?, 2)?;
    let dump: Dump = serde_json::from_str(first.trim()).map_err(RecoveryError::NotADump)?;
    let nondeterministic = (first != second).then(|| first_difference(&first, &second));
    Ok(Recovered { dump, nondeterministic })
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

    #[test]
    fn difference_names_the_byte() {
        let d = first_difference(r#"{"a":1}"#, r#"{"a":2}"#);
        assert!(d.contains("byte 5"), "{d}");
    }
}
