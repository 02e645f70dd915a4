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
//! A cell whose store finishes work on restart (cell 5's `catch-up`) names
//! a recovery step: each pass copies the transport too, runs the step to
//! its end on its copies, then dumps. The step is recovery as much as the
//! dump is, so its result (the transport after it) must be deterministic
//! too, and the judge reads the first pass's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crashcells_protocol::transport::{self, TransportError};
use crashcells_protocol::{Delivery, Dump, Op, OpArgs};

use crate::audit::sibling;
use crate::harness::{ChildCommand, Exit, run_to_end};
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
    #[error("recovery pass {pass}: {source}")]
    Read { pass: u32, source: std::io::Error },
    #[error("recovery pass 1 printed no dump: {0}")]
    NotADump(serde_json::Error),
    #[error("copying the transport for recovery pass {pass}: {source}")]
    CopyTransport { pass: u32, source: std::io::Error },
    #[error("recovery pass {pass}: the recovery step `{op}` failed ({exit}): {stderr_tail}")]
    StepFailed { pass: u32, op: Op, exit: Exit, stderr_tail: String },
    #[error("recovery pass {pass}: the recovery step `{op}` did not finish within {deadline:?}")]
    StepDeadline { pass: u32, op: Op, deadline: Duration },
    #[error("recovery pass 1: {0}")]
    Transport(TransportError),
}

/// The recovered state of a trial's store, read twice.
#[derive(Debug)]
pub struct Recovered {
    pub dump: Dump,
    /// Why the two passes disagree, if they do.
    pub nondeterministic: Option<String>,
    /// The transport's deliveries after pass 1's recovery step; none
    /// without a step.
    pub deliveries: Vec<Delivery>,
}

/// What one pass left: `dump`'s text, and the transport after the step.
struct Pass {
    dump: String,
    transport: Vec<u8>,
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
        Some(Exit::Code(0)) => {
            std::fs::read_to_string(&stdout).map_err(|source| RecoveryError::Read { pass: n, source })
        }
        Some(exit) => Err(RecoveryError::Failed { pass: n, exit, stderr_tail }),
        None => Err(RecoveryError::Deadline { pass: n, deadline }),
    }
}

/// Runs the recovery step, if the trial has one, on the copy `db` and a
/// copy of the transport made at `transport`: its end, as `Err`, if it
/// did not succeed.
fn step(
    child: &ChildCommand,
    deadline: Duration,
    env: &TrialEnv,
    (db, transport): (&Path, &Path),
    n: u32,
) -> Result<(), RecoveryError> {
    let Some(step) = &env.recovery_step else { return Ok(()) };
    if env.transport.exists() {
        std::fs::copy(&env.transport, transport).map_err(|source| RecoveryError::CopyTransport { pass: n, source })?;
    }
    let op = step.op();
    let args = step.clone().db(db).transport(transport).to_args();
    let (stdout, stderr) = (env.path(&format!("{op}-{n}.stdout")), env.path(&format!("{op}-{n}.stderr")));
    let (exit, stderr_tail) = run_to_end(child.command(&args, &env.home), &stdout, &stderr, deadline)
        .map_err(|source| RecoveryError::Start { pass: n, source })?;
    match exit {
        Some(Exit::Code(0)) => Ok(()),
        Some(exit) => Err(RecoveryError::StepFailed { pass: n, op, exit, stderr_tail }),
        None => Err(RecoveryError::StepDeadline { pass: n, op, deadline }),
    }
}

/// One whole pass on its own copy of the crash state: the recovery step,
/// then `dump`. A step that failed on a store whose dump shows it damaged
/// is not the harness's error: the damage is the finding.
fn full_pass(child: &ChildCommand, deadline: Duration, env: &TrialEnv, n: u32) -> Result<Pass, RecoveryError> {
    let dir = env.path(&format!("recovery-{n}"));
    let db = copy_db(&env.db, &dir).map_err(|source| RecoveryError::Copy { pass: n, source })?;
    let transport = dir.join("transport.ndjson");
    let stepped = step(child, deadline, env, (&db, &transport), n);
    let dump = pass(child, deadline, env, &db, n)?;
    if let Err(e) = stepped {
        let damaged = serde_json::from_str::<Dump>(dump.trim()).is_ok_and(|d| d.integrity != "ok");
        if !damaged {
            return Err(e);
        }
    }
    let transport = std::fs::read(&transport).unwrap_or_default();
    Ok(Pass { dump, transport })
}

/// Runs two recovery passes and parses the first. An `Err` is a harness
/// error (a pass that could not run or printed something that is not a dump).
pub fn recover(child: &ChildCommand, deadline: Duration, env: &TrialEnv) -> Result<Recovered, RecoveryError> {
    let first = full_pass(child, deadline, env, 1)?;
    let second = full_pass(child, deadline, env, 2)?;
    let dump: Dump = serde_json::from_str(first.dump.trim()).map_err(RecoveryError::NotADump)?;
    let deliveries = transport::parse(&first.transport).map_err(RecoveryError::Transport)?;
    let nondeterministic = if first.dump != second.dump {
        Some(first_difference(&first.dump, &second.dump))
    } else if first.transport != second.transport {
        let (a, b) = (String::from_utf8_lossy(&first.transport), String::from_utf8_lossy(&second.transport));
        Some(format!(
            "recovery is not deterministic: the transports after the two passes' {} differ {}",
            op_of(env),
            where_differ(&a, &b)
        ))
    } else {
        None
    };
    Ok(Recovered { dump, nondeterministic, deliveries })
}

/// The recovery step's name, for a message.
fn op_of(env: &TrialEnv) -> String {
    env.recovery_step.as_ref().map_or_else(|| "recovery".into(), |s| format!("`{}`", s.op()))
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
