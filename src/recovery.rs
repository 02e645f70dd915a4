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

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crashcells_protocol::Dump;

use crate::audit::sibling;
use crate::harness::{Exit, run_to_end};
use crate::trial::{Context, TrialEnv};

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
fn pass(ctx: &Context, env: &TrialEnv, db: &Path, n: u32) -> Result<String, String> {
    let args: Vec<OsString> = vec!["dump".into(), "--db".into(), db.into()];
    let stdout = env.path(&format!("dump-{n}.json"));
    let stderr = env.path(&format!("dump-{n}.stderr"));
    let (exit, tail) = run_to_end(ctx.child.command(&args, &env.home), &stdout, &stderr, ctx.deadline)
        .map_err(|e| format!("recovery pass {n} could not start: {e}"))?;
    match exit {
        Some(Exit::Code(0)) => std::fs::read_to_string(&stdout).map_err(|e| format!("recovery pass {n}: {e}")),
        Some(other) => Err(format!("recovery pass {n} failed ({other}): {tail}")),
        None => Err(format!("recovery pass {n} did not finish within {:?}", ctx.deadline)),
    }
}

/// Runs two recovery passes and parses the first. An `Err` is a harness
/// error (a pass that could not run or printed something that is not a dump).
pub fn recover(ctx: &Context, env: &TrialEnv) -> Result<Recovered, String> {
    let copy = |n: u32| {
        copy_db(&env.db, &env.path(&format!("recovery-{n}")))
            .map_err(|e| format!("copying the database for recovery pass {n}: {e}"))
    };
    let first = pass(ctx, env, &copy(1)?, 1)?;
    let second = pass(ctx, env, &copy(2)?, 2)?;
    let dump: Dump = serde_json::from_str(first.trim()).map_err(|e| format!("recovery pass 1 printed no dump: {e}"))?;
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
