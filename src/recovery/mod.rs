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
//! evidence a fire keeps. A crash state without a database file (a power
//! loss before the file's name was made durable) is an empty store, as
//! SQLite itself would open it.
//!
//! A cell whose store finishes work on restart (cell 5's `catch-up`) names
//! a recovery step: each pass copies the transport too, runs the step to its
//! end on its copies, then dumps. The step is recovery as much as the dump
//! is, so its result (the transport after it) must be deterministic too, and
//! the judge reads the first pass's. Many crash states at once: [`batch`].

pub mod batch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crashcells_protocol::transport::{self, TransportError};
use crashcells_protocol::{Delivery, Dump, Op, OpArgs, PROTOCOL};

use crate::dbfiles::{DB_FILES, sibling};
use crate::harness::{Cut, Exit, Interrupt, Launch, Launcher, Place};
use crate::trialdir::TrialEnv;

pub use batch::{BatchRecovery, Batching, Pair, pair_of, recover_batch};

/// Why a recovery pass gave no state: the harness's error, never a finding.
/// The operating system's and the child's words travel as text (an
/// `io::Error` is neither cloned nor compared), so that a pipeline outcome
/// can carry this error as data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryError {
    #[error("copying the database for recovery pass {pass}: {why}")]
    Copy { pass: u32, why: String },
    #[error("recovery pass {pass} could not start: {why}")]
    Start { pass: u32, why: String },
    #[error("recovery pass {pass} failed ({exit}): {stderr_tail}")]
    Failed { pass: u32, exit: Exit, stderr_tail: String },
    #[error("recovery pass {pass} did not finish within {deadline:?}")]
    Deadline { pass: u32, deadline: Duration },
    /// The run was interrupted during the pass: no finding, no error.
    #[error("recovery pass {pass} was cut short by the interrupt")]
    Interrupted { pass: u32 },
    #[error("recovery pass {pass}: {why}")]
    Read { pass: u32, why: String },
    #[error("recovery pass 1 printed no dump: {0}")]
    NotADump(String),
    #[error("copying the transport for recovery pass {pass}: {why}")]
    CopyTransport { pass: u32, why: String },
    #[error("recovery pass {pass}: the recovery step `{op}` failed ({exit}): {stderr_tail}")]
    StepFailed { pass: u32, op: Op, exit: Exit, stderr_tail: String },
    #[error("recovery pass {pass}: the recovery step `{op}` did not finish within {deadline:?}")]
    StepDeadline { pass: u32, op: Op, deadline: Duration },
    #[error("recovery pass 1: {0}")]
    Transport(TransportError),
    /// A state whose files name the folder they were written in could not
    /// be laid there for its recovery ([`crate::harness::Place`]): the
    /// harness's limit, never the store's finding.
    #[error(
        "recovery pass {pass}: the crash state names the folder it was written in ({at}) inside its files, and could \
         not be recovered there: {why}"
    )]
    Unplaced { pass: u32, at: String, why: String },
    /// A state of a batch after one that could not be recovered: not run,
    /// since the verdict stops at the earlier state; never a verdict of its
    /// own (the driver recovers it alone if a verdict reads it).
    #[error("recovery pass {pass}: not run, an earlier state of its batch could not be recovered")]
    NotRun { pass: u32 },
}

impl RecoveryError {
    /// Whether a pass's wait ran out its deadline (a dump or a recovery
    /// step that overstayed).
    pub fn by_deadline(&self) -> bool {
        matches!(self, RecoveryError::Deadline { .. } | RecoveryError::StepDeadline { .. })
    }
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
    /// The transport's deliveries after pass 1's recovery step; none
    /// without a step.
    pub deliveries: Vec<Delivery>,
}

/// What one pass left: `dump`'s text, and the transport after its step.
#[derive(Clone, Debug, Default)]
pub struct Pass {
    pub dump: String,
    pub transport: Vec<u8>,
}

impl Recovered {
    /// A crash state without a database file: an empty store, which a
    /// recovery step has nothing to finish for; the deliveries are what the
    /// state's `transport` held (a power loss keeps the provider's log when
    /// it drops the store), so a send the store lost is still seen.
    fn missing(transport: Option<&Path>) -> Result<Recovered, RecoveryError> {
        let dump = Dump::empty(PROTOCOL, "ok".into());
        let bytes = transport.and_then(|t| std::fs::read(t).ok()).unwrap_or_default();
        let deliveries = transport::parse(&bytes).map_err(RecoveryError::Transport)?;
        Ok(Recovered { dump, nondeterministic: None, missing_db: true, deliveries })
    }

    /// Two passes of one state: the first parsed, the two compared (the
    /// dumps, then the transports their steps left).
    fn of(first: &Pass, second: &Pass, step: Option<Op>) -> Result<Recovered, RecoveryError> {
        let dump: Dump = serde_json::from_str(first.dump.trim()).map_err(|e| RecoveryError::NotADump(e.to_string()))?;
        let deliveries = transport::parse(&first.transport).map_err(RecoveryError::Transport)?;
        let nondeterministic = if first.dump != second.dump {
            Some(first_difference(&first.dump, &second.dump))
        } else if first.transport != second.transport {
            let (a, b) = (String::from_utf8_lossy(&first.transport), String::from_utf8_lossy(&second.transport));
            let step = step.map_or_else(|| "recovery".into(), |op| format!("`{op}`"));
            Some(format!(
                "recovery is not deterministic: the transports after the two passes' {step} differ {}",
                where_differ(&a, &b)
            ))
        } else {
            None
        };
        Ok(Recovered { dump, nondeterministic, missing_db: false, deliveries })
    }
}

/// Copies the store's folder, as it is, into `dir`: the database, its
/// journal files and every other file of the store's beside them (a
/// marker, a manifest: recovery runs in place, on the store's own layout and
/// names), not the harness's own files nor those in `skip` (the ack journal
/// and transport, which a pass copies where it needs them); returns the
/// copy's path. Nothing writes them any more (the child is reaped), so a
/// copy is the crash state exactly.
fn copy_db(db: &Path, dir: &Path, skip: &[&Path]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let copy = dir.join(db.file_name().unwrap_or_else(|| "store.db".as_ref()));
    for suffix in DB_FILES {
        let from = sibling(db, suffix);
        if from.exists() {
            std::fs::copy(&from, sibling(&copy, suffix))?;
        }
    }
    let folder = db.parent().unwrap_or(Path::new("."));
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let (path, name) = (entry.path(), entry.file_name().to_string_lossy().into_owned());
        let known = DB_FILES.iter().any(|s| sibling(db, s) == path) || skip.contains(&path.as_path());
        if !known && !crate::trialdir::is_harness_file(&name) && entry.file_type()?.is_file() {
            std::fs::copy(&path, dir.join(&name))?;
        }
    }
    Ok(copy)
}

/// Where a pass runs: the child, its deadline and the run's interrupt (a
/// pass cut short by it is [`RecoveryError::Interrupted`]), its config
/// home, the folder its output goes to, the recovery step it runs before
/// `dump`, if any, and for a state whose files name the folder they were
/// written in, that folder, where its child sees them ([`Place`]).
#[derive(Clone)]
pub struct Passes<'a> {
    pub child: &'a Launcher,
    pub deadline: Duration,
    pub interrupt: Interrupt,
    pub home: &'a Path,
    pub out: &'a Path,
    pub step: Option<&'a OpArgs>,
    pub place: Option<Place>,
}

/// Runs a short child operation to its end; its stdout, in `out` as
/// `{name}.json`, when it ended with exit code 0.
fn run_op(p: &Passes, args: &OpArgs, n: u32, name: &str) -> Result<Result<String, (Exit, String)>, RecoveryError> {
    let stdout = p.out.join(format!("{name}.json"));
    let stderr = p.out.join(format!("{name}.stderr"));
    let args = args.to_args();
    // The pass's folder holds the copies it recovers: a forked process may hold nothing of it at its start.
    let launch = Launch { args: &args, home: p.home, trial: p.out, stdout: Some(&stdout), stderr: Some(&stderr) };
    let ran = match &p.place {
        None => p.child.run_to_end(&launch, p.deadline, &p.interrupt),
        Some(place) => {
            let at = place.at.display().to_string();
            crate::harness::can_place().map_err(|why| RecoveryError::Unplaced { pass: n, at, why })?;
            lay_home(p.home, place)
                .map_err(|e| RecoveryError::Copy { pass: n, why: format!("the config home: {e}") })?;
            p.child.run_placed(&launch, place, p.deadline, &p.interrupt)
        }
    };
    let (exit, stderr_tail) = ran.map_err(|e| RecoveryError::Start { pass: n, why: e.to_string() })?;
    match exit {
        Ok(Exit::Code(0)) => {
            std::fs::read_to_string(&stdout).map(Ok).map_err(|e| RecoveryError::Read { pass: n, why: e.to_string() })
        }
        Ok(exit) => Ok(Err((exit, stderr_tail))),
        Err(Cut::Deadline) => Err(RecoveryError::Deadline { pass: n, deadline: p.deadline }),
        Err(Cut::Interrupted) => Err(RecoveryError::Interrupted { pass: n }),
    }
}

/// A config home inside the folder a state is laid over would be covered
/// by the state: it is copied into the state's folder, where the child then
/// finds it at the same path, as the recorded run did.
fn lay_home(home: &Path, place: &Place) -> std::io::Result<()> {
    if home.starts_with(&place.at) { crate::trialdir::copy_tree(home, &place.real(home)) } else { Ok(()) }
}

/// One `dump` pass on `dbs` (several only for a `dump-batch` child): its
/// stdout, in `out` as `dump-{label}.json`.
fn pass(p: &Passes, dbs: &[&Path], n: u32, label: &str) -> Result<String, RecoveryError> {
    let args = dbs.iter().fold(OpArgs::new(Op::Dump), |a, db| a.db(db));
    run_op(p, &args, n, &format!("dump-{label}"))?.map_err(|(exit, stderr_tail)| RecoveryError::Failed {
        pass: n,
        exit,
        stderr_tail,
    })
}

/// One whole pass of one state: the recovery step on the copies `db` and
/// `transport` (if the pass has a step), then `dump`.
fn stepped_pass(p: &Passes, db: &Path, transport: &Path, n: u32, label: &str) -> Result<Pass, RecoveryError> {
    let stepped = step(p, db, transport, n, label)?;
    let dump = pass(p, &[db], n, label)?;
    excused(stepped, &dump)?;
    Ok(Pass { dump, transport: after_step(p, transport) })
}

/// The recovery step of a pass on the copies `db` and `transport`, if the
/// pass has one: `Err` when it could not run to its end (the harness's
/// error), `Ok(Err)` when it ran and failed, which its dump may excuse.
fn step(
    p: &Passes,
    db: &Path,
    transport: &Path,
    n: u32,
    label: &str,
) -> Result<Result<(), RecoveryError>, RecoveryError> {
    let Some(step) = p.step else { return Ok(Ok(())) };
    let op = step.op();
    let args = step.clone().db(db).transport(transport);
    Ok(run_op(p, &args, n, &format!("{op}-{label}"))?
        .map(drop)
        .map_err(|(exit, stderr_tail)| RecoveryError::StepFailed { pass: n, op, exit, stderr_tail }))
}

/// A step that failed on a store whose dump shows it damaged is not the
/// harness's error: the damage is the finding.
fn excused(stepped: Result<(), RecoveryError>, dump: &str) -> Result<(), RecoveryError> {
    match stepped {
        Err(e) if !serde_json::from_str::<Dump>(dump.trim()).is_ok_and(|d| d.integrity != "ok") => Err(e),
        _ => Ok(()),
    }
}

/// The transport a pass's step left (none without a step), read where the
/// driver sees it (a placed state's child saw it at its folder).
fn after_step(p: &Passes, transport: &Path) -> Vec<u8> {
    let path = p.place.as_ref().map_or_else(|| transport.to_path_buf(), |place| place.real(transport));
    if p.step.is_some() { std::fs::read(path).unwrap_or_default() } else { Vec::new() }
}

/// Runs two recovery passes of a trial's crash state, each on its own
/// copies, and parses the first. An `Err` is a harness error (a pass that
/// could not run or printed something that is not a dump), or the run's
/// `interrupt` that cut a pass short.
pub fn recover(
    child: &Launcher,
    deadline: Duration,
    interrupt: &Interrupt,
    env: &TrialEnv,
) -> Result<Recovered, RecoveryError> {
    if !env.db.exists() {
        return Recovered::missing(env.recovery_step.is_some().then_some(env.transport.as_path()));
    }
    let dir = env.db.parent().unwrap_or(Path::new("."));
    let (home, step, interrupt) = (&env.home, env.recovery_step.as_ref(), interrupt.clone());
    let p = Passes { child, deadline, interrupt, home, out: dir, step, place: None };
    let mut passes = Vec::new();
    for n in [1, 2] {
        let (db, transport) = pass_copies(env, n)?;
        passes.push(stepped_pass(&p, &db, &transport, n, &n.to_string())?);
    }
    Recovered::of(&passes[0], &passes[1], p.step.map(OpArgs::op))
}

/// Pass `n`'s own copies of a trial's crash state, in `recovery-{n}/`: the
/// database and its journals, and the transport when a step will read it.
pub(super) fn pass_copies(env: &TrialEnv, n: u32) -> Result<(PathBuf, PathBuf), RecoveryError> {
    let copies = env.path(&format!("recovery-{n}"));
    let skip = [env.acks.as_path(), env.transport.as_path()];
    let db = crate::harness::disk::checked(&copies, copy_db(&env.db, &copies, &skip))
        .map_err(|e| RecoveryError::Copy { pass: n, why: e.to_string() })?;
    let transport = copies.join("transport.ndjson");
    if env.recovery_step.is_some() && env.transport.exists() {
        crate::harness::disk::checked(&transport, std::fs::copy(&env.transport, &transport))
            .map_err(|e| RecoveryError::CopyTransport { pass: n, why: e.to_string() })?;
    }
    Ok((db, transport))
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
        std::fs::write(dir.path().join("store.db.dirty"), "marker").unwrap();
        std::fs::write(dir.path().join("acks.ndjson"), "{}").unwrap();
        std::fs::write(dir.path().join("child.stderr"), "err").unwrap();
        let copy = copy_db(&db, &dir.path().join("recovery"), &[&dir.path().join("acks.ndjson")]).unwrap();
        let dir_of = |p: &str| dir.path().join("recovery").join(p);
        assert_eq!(std::fs::read_to_string(dir_of("store.db.dirty")).unwrap(), "marker", "the store's marker too");
        assert!(!dir_of("acks.ndjson").exists() && !dir_of("child.stderr").exists(), "not the harness's files");
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

    #[test]
    fn transports_that_differ_after_the_step_make_recovery_nondeterministic() {
        let dump = r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#.to_string();
        let one = Pass { dump: dump.clone(), transport: b"{\"key\":\"o0\",\"payload\":\"p\"}\n".to_vec() };
        let two = Pass { dump, transport: Vec::new() };
        let r = Recovered::of(&one, &two, Some(Op::CatchUp)).unwrap();
        assert!(r.nondeterministic.unwrap().contains("transports after the two passes' `catch-up` differ"));
        assert_eq!(r.deliveries.len(), 1);
    }
}
