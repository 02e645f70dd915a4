//! `crashcells audit`: what an operator runs on a machine to see which legs
//! of a matrix can be probed there. For each leg, one short real run of the
//! child, then one row: what the leg asked for, what the resolver decided and
//! why, what the child's connection ran, what the file shows, honored or not,
//! and the SQLite the child linked.
//!
//! Crash model: the same as a trial's. The child appends until it has
//! acknowledged [`AUDIT_ACKS`] appends, then its group gets `SIGKILL`, so the
//! files beside the database are the ones a killed trial leaves (a `-wal`, a
//! hot or zeroed `-journal`) and the leg audit reads them exactly as it does
//! after a trial. Honored or not is data; only a child that could not be
//! audited at all is an error.
//!
//! Then, unless `--no-crash`, the leg's crash columns ([`crash`]):
//! whether the workload cells keep every acknowledged commit under a
//! process crash, a power loss, a power loss with torn and reordered
//! writes, and a failed write or sync, each swept at every kill point, for
//! each leg the audited folder honored, in a folder of their own where
//! `run`'s trials go (`crash_folder`: the models' verdicts do not depend
//! on the workdir's filesystem; the rows do).

pub mod crash;
pub mod render;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crashcells_protocol::{Decider, JournalMode, Ready};
use serde::{Deserialize, Serialize};

use crate::dbfiles::{Artefacts, Family};
use crate::error::{Error, Result};
use crate::harness::{ChildCommand, Interrupt, Launcher, Running};
use crate::journalmode::{EffectiveMode, ReportedMode};
use crate::kill::timed::{WaitError, wait_for_acks};
use crate::legaudit::{self, audit_leg};
use crate::matrix::{Leg, Matrix};
use crate::model::JudgedWith;
use crate::pipeline::{preflight_deadline, scale_deadline};
use crate::sqlitelib::{LOADER_PATH, Placement};

pub const SCHEMA: &str = "crashcells.audit.v1";

/// Appends each leg's child acknowledges before the kill: enough for every
/// mode to have committed and left its artefacts, short enough that an audit
/// of fifteen legs takes seconds on a disk with `synchronous=extra`.
pub const AUDIT_ACKS: u64 = 20;

/// What the audit was asked: `crashcells audit`'s options, checked.
pub struct AuditSetup {
    pub matrix: Matrix,
    /// The matrix as `--matrix` named it (a built-in's name, or a path):
    /// what the crash columns' repros name.
    pub matrix_arg: String,
    /// `--child` as given (`None`: the reference store): what the report
    /// and the crash columns' repros name.
    pub child_arg: Option<String>,
    pub child: ChildCommand,
    /// The folder the audit's own work folder is made in.
    pub workdir: PathBuf,
    /// `--deadline` as asked: what the crash columns' repros name.
    pub deadline: Duration,
    /// Whether each row gets its crash columns (not `--no-crash`).
    pub crash: bool,
    /// How long the child took to write its ready record alone (the
    /// preflight's measure; zero until [`Audit::start`]): every wait
    /// scales with it, by the rule `run` follows ([`scale_deadline`]).
    pub start: Duration,
    /// The audit's interrupt: every wait of it is given it (the CLI's is
    /// its own and never raised: `audit` catches no signal, so a Ctrl-C
    /// ends it at once and its children die with it).
    pub interrupt: Interrupt,
}

impl AuditSetup {
    /// The bound on a wait for the child: `--deadline`, or more for a
    /// child whose measured start would not fit in it.
    fn wait(&self) -> Duration {
        scale_deadline(self.deadline, self.start, 1)
    }
}

/// An audit whose child passed the preflight: ready to run. Split from
/// [`Audit::run`] so that a child that speaks no protocol is one line of
/// error, before the audit says what it is about to do.
pub struct Audit {
    setup: AuditSetup,
    /// The preflight's ready record.
    ready: Ready,
}

impl Audit {
    /// Checks that the child speaks the protocol, in the audited folder.
    /// Its own wait cannot scale with the start it measures: it assumes a
    /// start as long as the deadline (at least the default one), as `run`'s.
    pub fn start(mut setup: AuditSetup) -> Result<Audit> {
        let exec = Launcher::exec(setup.child.clone());
        let began = std::time::Instant::now();
        let first = preflight_deadline(setup.deadline);
        let ready = crate::probe::preflight(&exec, &setup.workdir, first, &setup.interrupt)
            .map_err(|e| Error::Child { child: setup.child.display(), message: e.to_string() })?;
        setup.start = began.elapsed();
        Ok(Audit { setup, ready })
    }

    /// What the audit is about to do, and where.
    pub fn heading(&self) -> String {
        let s = &self.setup;
        format!(
            "auditing {} legs of matrix {} in {} ({})",
            s.matrix.legs.len(),
            s.matrix.name,
            s.workdir.display(),
            filesystem_name(&s.workdir)
        )
    }

    /// Audits every leg: its row, then its crash columns unless
    /// `--no-crash`, forked by the child's fork server when it offers one
    /// (checked fresh first, as for a run).
    pub fn run(&self) -> Result<AuditReport> {
        let s = &self.setup;
        // The server's stderr and preflight in a folder of their own, gone with the audit.
        let server_dir =
            crate::scratch::folder(&s.workdir, "audit-server-").map_err(Error::io("audit folder in", &s.workdir))?;
        let exec = Launcher::exec(s.child.clone());
        let forks = match s.crash {
            // A server not ready in time leaves the crash columns exec'd: slower, the same verdicts.
            true => match crate::probe::fork_server(&exec, &self.ready, server_dir.path(), s.wait(), &s.interrupt)? {
                Some(crate::probe::Fast::Ready(forks, start)) => Some((forks, start)),
                Some(crate::probe::Fast::Late(_)) | None => None,
            },
            false => None,
        };
        audit_matrix(s, forks.as_ref(), s.crash.then_some(&self.ready))
    }
}

/// The resolver's decision as the child reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResolverRow {
    pub decided_by: Decider,
    pub applied: JournalMode,
    pub reason: String,
}

/// One leg's audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub leg: String,
    pub requested_mode: Option<JournalMode>,
    pub requested_synchronous: Option<String>,
    /// Null for a child that has no resolver.
    pub resolver: Option<ResolverRow>,
    /// `PRAGMA journal_mode` as the child's own connection reported it.
    pub ran_mode: ReportedMode,
    /// `PRAGMA synchronous` as the child's own connection reported it.
    pub ran_synchronous: Option<String>,
    /// The level its recorded commits kept, read from their calls (the
    /// crash columns' recordings; none without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_synchronous: Option<String>,
    /// The journal family in the database header.
    pub header: Family,
    pub artefacts: Artefacts,
    /// The mode the evidence agrees on (`mode?` when the file contradicts the child).
    pub effective_mode: EffectiveMode,
    pub honored: bool,
    /// Why not honored, or what the resolver overrode (empty otherwise).
    pub reason: String,
    pub sqlite_version: String,
    pub sqlite_source_id: Option<String>,
    /// The SQLite library the leg put under the child (`bundled` or a
    /// path); none: the child's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite_library: Option<String>,
    /// Set when the child ran WAL on a SQLite with the WAL-reset bug: the
    /// leg counts (it ran as advertised), and the audit says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_reset_bug: Option<String>,
    /// Appends acknowledged before the kill.
    pub acked: u64,
    /// Whether the workload cells keep every acked commit under each kill
    /// mode the audit sweeps (`process_crash`, `power_loss`,
    /// `torn_power_loss`, `fault_injection`: a key per column; none with
    /// `--no-crash`).
    #[serde(flatten)]
    pub crash: crash::Columns,
    /// The earlier leg whose crash columns these are: its child applied
    /// the same configuration (`crate::applied`); none when swept here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_with: Option<JudgedWith>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditSummary {
    pub legs: usize,
    pub honored: usize,
    pub not_honored: usize,
}

/// The audit of a matrix on one filesystem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    pub schema: String,
    pub crashcells_version: String,
    pub matrix: String,
    /// The folder audited in, and its filesystem as `statfs` names it.
    pub workdir: String,
    pub filesystem: String,
    pub child: String,
    pub rows: Vec<Row>,
    pub summary: AuditSummary,
}

/// Audits every leg of the matrix, in order; with `crash` (the preflight's
/// ready record), each honored leg's crash columns too, their children
/// forked by `forks` when given. The first leg whose child cannot be
/// audited ends the audit with an error naming the leg.
fn audit_matrix(
    setup: &AuditSetup,
    forks: Option<&(Launcher, Duration)>,
    crash: Option<&Ready>,
) -> Result<AuditReport> {
    let work =
        crate::scratch::folder(&setup.workdir, "audit-").map_err(Error::io("audit folder in", &setup.workdir))?;
    // Progress on a terminal (none in a CI log): a step per leg's short
    // run, and one per result of its crash columns, each with its own bar.
    let legs = setup.matrix.legs.len();
    let per_leg = if crash.is_some() { crash::results_per_leg()? } else { 0 };
    let bars = std::sync::Arc::new(crate::run::Bars::counting(legs * (1 + per_leg), "steps"));
    let mut rows = Vec::with_capacity(legs);
    // The legs' SQLite libraries, in the audit's folder: gone with it.
    let mut matrix = setup.matrix.clone();
    matrix.place_libraries(work.path())?;
    for leg in &matrix.legs {
        bars.say(&format!("leg {}: its mode", leg.name));
        rows.push(audit_one(setup, leg, work.path())?);
        bars.step("");
    }
    if let Some(ready) = crash {
        let trials = crash_folder()?;
        let ctx = crash_context(setup, forks, ready, trials.path())?;
        // Each configuration judged once: an honored leg that applied an
        // earlier honored leg's configuration takes its columns (`applied`).
        let heard: Vec<_> =
            rows.iter().zip(&matrix.legs).map(|(r, l)| (l.name.clone(), r.honored.then(|| applied(r, l)))).collect();
        let same = crate::applied::judged_with(&heard);
        for i in 0..rows.len() {
            let leg = &matrix.legs[i];
            bars.say(&format!("leg {}: crash columns", leg.name));
            let judge = same.get(&leg.name).and_then(|(j, a)| Some((rows.iter().position(|r| r.leg == *j)?, a)));
            (rows[i].crash, rows[i].kept_synchronous) = match (rows[i].honored, judge) {
                (true, Some((j, a))) => {
                    rows[i].judged_with = Some(JudgedWith { leg: rows[j].leg.clone(), configuration: a.words() });
                    (0..per_leg).for_each(|_| bars.step(""));
                    (rows[j].crash.clone(), rows[j].kept_synchronous.clone())
                }
                (true, None) => crash::columns(&ctx, &setup.matrix.name, leg, bars.clone())?,
                (false, _) => (crash::Columns::not_honored(), None),
            };
        }
    }
    bars.clear();
    let honored = rows.iter().filter(|r| r.honored).count();
    Ok(AuditReport {
        schema: SCHEMA.into(),
        crashcells_version: crate::model::VERSION.into(),
        matrix: setup.matrix.name.clone(),
        workdir: setup.workdir.display().to_string(),
        filesystem: filesystem_name(&setup.workdir),
        child: setup.child_arg.as_deref().unwrap_or("reference").into(),
        summary: AuditSummary { legs: rows.len(), honored, not_honored: rows.len() - honored },
        rows,
    })
}

/// Where the crash columns' sweeps run: a folder of their own in the trial
/// root `run` uses (`/dev/shm` where writable), not in `--workdir`. Their
/// verdicts are the crash models' (states rebuilt from the recorded calls;
/// a failed write or sync made to fail by the tracer, not the disk; a
/// `LOSES` row's repro already runs in `run`'s folder), so the
/// workdir's filesystem plays no part in them, while thousands of syncs on
/// a disk made the audit three times slower (131 s against 44 s, ext4 and
/// tmpfs). The rows' own runs, which answer for the workdir, stay there.
fn crash_folder() -> Result<tempfile::TempDir> {
    let root = crate::run::default_workdir();
    crate::scratch::folder(&root, "audit-crash-").map_err(Error::io("audit folder in", &root))
}

/// The context the crash columns' sweeps run in: their folder
/// ([`crash_folder`]), a fixed seed (an audit is reproducible), evidence
/// kept inside the folder (the row says why a leg loses data; the audit
/// leaves nothing behind).
fn crash_context(
    setup: &AuditSetup,
    forks: Option<&(Launcher, Duration)>,
    ready: &Ready,
    work: &Path,
) -> Result<crate::pipeline::Context> {
    let work_root = std::fs::canonicalize(work).map_err(Error::io("audit folder", work))?;
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    // The options a `LOSES` row's repro is derived from: what `run` needs
    // to rerun that point (the child, from the folder the audit ran it in).
    let cwd = match setup.child_arg {
        Some(_) => Some(std::env::current_dir().map_err(Error::io("the folder the audit runs in", "."))?),
        None => None,
    };
    let deadline = setup.deadline.as_secs();
    let options = crate::options::RunOptions {
        matrix: setup.matrix_arg.clone(),
        seed: Some(1),
        child: crate::options::ChildArg { command: setup.child_arg.clone() },
        cwd,
        deadline: crate::options::DeadlineArg {
            secs: (deadline != crate::options::DEFAULT_DEADLINE_SECS).then_some(deadline),
        },
        ..Default::default()
    };
    let child = forks.map_or_else(|| Launcher::exec(setup.child.clone()), |f| f.0.clone());
    let evidence = work_root.join("evidence");
    let ctx = crate::pipeline::Context::new(options, 1, child, work_root, evidence, setup.deadline, jobs);
    let ctx = crate::pipeline::Context { interrupt: setup.interrupt.clone(), ..ctx };
    // The crash columns' children start as the preflight's did, or as the
    // fork server's forks do: their waits scale with that, as a run's.
    let ctx =
        crate::pipeline::Context { child_ready: Some(ready.clone()), start: forks.map_or(setup.start, |f| f.1), ..ctx };
    // Its preflight was exec'd: the plain path's waits scale with that.
    let ctx = crate::pipeline::Context { execd_start: setup.start, ..ctx };
    Ok(crate::pipeline::Context { deadline: ctx.scaled_deadline(setup.deadline), ..ctx })
}

/// The paths of one leg's run.
struct LegFiles {
    db: PathBuf,
    acks: PathBuf,
    stderr: PathBuf,
    home: PathBuf,
}

fn leg_files(leg: &Leg, root: &Path) -> std::io::Result<LegFiles> {
    // Leg names are checked to be folder-safe and unique when the matrix is read.
    let dir = root.join(format!("leg-{}", leg.name));
    std::fs::create_dir_all(&dir)?;
    let home = dir.join("home");
    leg.config().write_home(&home)?;
    Ok(LegFiles { db: dir.join("store.db"), acks: dir.join("acks.ndjson"), stderr: dir.join("child.stderr"), home })
}

/// A leg name as a folder name: anything but `[A-Za-z0-9_-]` becomes `_`.
fn audit_one(setup: &AuditSetup, leg: &Leg, root: &Path) -> Result<Row> {
    let fail = |message: String| Error::Audit { leg: leg.name.clone(), message };
    let files = leg_files(leg, root).map_err(|e| fail(format!("leg folder: {e}")))?;
    let acked = run_and_kill(setup, &leg_child(&setup.child, leg), &files).map_err(&fail)?;
    let bytes = std::fs::read(&files.acks).map_err(|e| fail(format!("ack journal: {e}")))?;
    let journal = crate::journal::parse(&bytes).map_err(|e| fail(e.to_string()))?;
    let ready = journal.ready.ok_or_else(|| fail("the child wrote no ready record".into()))?;
    crate::pipeline::judge::verdict::check_protocol(&ready).map_err(|e| fail(e.to_string()))?;
    let audit = audit_leg(&files.db, &ready, leg);
    Ok(row(leg, &ready, audit, acked))
}

/// The child a leg runs: with its SQLite library's folder first on the
/// loader path, when it names one that this build has.
fn leg_child(child: &ChildCommand, leg: &Leg) -> ChildCommand {
    match &leg.placed {
        Some(Placement::Placed(p)) => child.with_env(LOADER_PATH, p.loader_path()),
        _ => child.clone(),
    }
}

/// Starts `append`, waits for [`AUDIT_ACKS`] acks, kills the group and
/// checks it died of the kill. Returns the acks seen at the kill.
fn run_and_kill(setup: &AuditSetup, child: &ChildCommand, f: &LegFiles) -> std::result::Result<u64, String> {
    let args: Vec<OsString> =
        vec!["append".into(), "--db".into(), f.db.clone().into(), "--acks".into(), f.acks.clone().into()];
    let mut child = Running::spawn(child.command(&args, &f.home), Some(&f.stderr))
        .map_err(|e| format!("could not start the child `{}`: {e}", setup.child.display()))?;
    let reached = match wait_for_acks(&mut child, &f.acks, AUDIT_ACKS, (setup.wait(), &setup.interrupt), None) {
        Ok(r) => r,
        Err(e @ (WaitError::Exited { .. } | WaitError::Io(_))) => return Err(e.to_string()),
        Err(WaitError::Deadline { acks }) => {
            return Err(format!("{acks} of {AUDIT_ACKS} acks within the {:?} deadline", setup.wait()));
        }
        Err(WaitError::Interrupted) => return Err("interrupted".into()),
    };
    child.kill_and_reap().check().map_err(|e| e.to_string())?;
    Ok(reached.acks)
}

/// The configuration a row's child applied, as its leg's probe: what
/// decides which legs' crash columns are judged once.
fn applied(r: &Row, leg: &Leg) -> crate::applied::Applied {
    crate::applied::Applied {
        journal_mode: r.ran_mode.clone(),
        synchronous: r.ran_synchronous.as_ref().map(|s| s.to_ascii_lowercase()),
        sqlite_version: r.sqlite_version.clone(),
        sqlite_source_id: r.sqlite_source_id.clone(),
        library: leg.sqlite.clone(),
    }
}

fn row(leg: &Leg, ready: &Ready, audit: legaudit::Audit, acked: u64) -> Row {
    let resolver = ready.resolver.as_ref().map(|d| ResolverRow {
        decided_by: d.decided_by,
        applied: d.applied,
        reason: d.reason.clone(),
    });
    let wal_reset_bug = Some(legaudit::wal_reset_note(&audit.effective, ready)).filter(|n| !n.is_empty());
    let reason = if audit.honored { audit.note } else { audit.reason };
    Row {
        leg: leg.name.clone(),
        requested_mode: leg.journal_mode,
        requested_synchronous: leg.synchronous.map(|s| s.to_string()),
        resolver,
        ran_mode: audit.reported,
        ran_synchronous: ready.synchronous.clone(),
        kept_synchronous: None,
        header: audit.family,
        artefacts: audit.artefacts,
        effective_mode: audit.effective,
        honored: audit.honored,
        reason,
        sqlite_version: ready.sqlite_version.clone(),
        sqlite_source_id: ready.sqlite_source_id.clone(),
        sqlite_library: leg.sqlite.as_ref().map(ToString::to_string),
        wal_reset_bug,
        acked,
        crash: crash::Columns::default(),
        judged_with: None,
    }
}

/// The filesystem type of `dir` as `statfs` reports it: a name for the
/// common ones, the magic number otherwise.
pub fn filesystem_name(dir: &Path) -> String {
    use nix::sys::statfs::{
        BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, NFS_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC,
        statfs,
    };
    let Ok(st) = statfs(dir) else { return "unknown".into() };
    let t = st.filesystem_type();
    let known = [
        (EXT4_SUPER_MAGIC, "ext2/3/4"),
        (TMPFS_MAGIC, "tmpfs"),
        (BTRFS_SUPER_MAGIC, "btrfs"),
        (XFS_SUPER_MAGIC, "xfs"),
        (OVERLAYFS_SUPER_MAGIC, "overlayfs"),
        (NFS_SUPER_MAGIC, "nfs"),
    ];
    known.iter().find(|(m, _)| *m == t).map_or_else(|| format!("{:#x}", t.0), |(_, n)| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed_row(leg: &str, requested: Option<JournalMode>, honored: bool) -> Row {
        let gate = requested.is_none_or(|m| m == JournalMode::Wal);
        let (decided_by, reason) = if gate {
            (Decider::WalResetGate, "WAL-reset gate: SQLite 3.40.1 is affected, so WAL is refused and DELETE applied")
        } else {
            (Decider::Config, "config asked for delete")
        };
        Row {
            leg: leg.into(),
            requested_mode: requested,
            requested_synchronous: Some("off".into()),
            resolver: Some(ResolverRow { decided_by, applied: JournalMode::Delete, reason: reason.into() }),
            ran_mode: "delete".into(),
            ran_synchronous: Some("off".into()),
            kept_synchronous: Some("off".into()),
            header: Family::Rollback,
            artefacts: Artefacts { wal: None, journal: Some(0), journal_zeroed: false },
            effective_mode: "delete".into(),
            honored,
            reason: if honored { String::new() } else { format!("requested wal, child ran delete: {reason}") },
            sqlite_version: "3.40.1".into(),
            sqlite_source_id: Some("2022-12-28 abc".into()),
            sqlite_library: None,
            wal_reset_bug: None,
            acked: 20,
            crash: crash::Columns::default(),
            judged_with: None,
        }
    }

    #[test]
    fn human_audit_shows_a_row_per_leg_and_why_not_honored() {
        let mut rows = vec![
            fixed_row("default", None, true),
            fixed_row("delete", Some(JournalMode::Delete), true),
            fixed_row("wal", Some(JournalMode::Wal), false),
        ];
        // A leg that reports FULL and whose commits' calls kept OFF.
        rows[1].ran_synchronous = Some("full".into());
        let report = AuditReport {
            schema: SCHEMA.into(),
            crashcells_version: "0.0.0".into(),
            matrix: "default".into(),
            workdir: "/tmp".into(),
            filesystem: "ext2/3/4".into(),
            child: "reference".into(),
            summary: AuditSummary { legs: 3, honored: 2, not_honored: 1 },
            rows,
        };
        crate::snapshots().bind(|| insta::assert_snapshot!("audit.human", report.to_human()));
        let back: AuditReport = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(back, report);
    }

    /// A leg whose crash columns another leg's sweeps judged says which,
    /// under its row, and in the JSON.
    #[test]
    fn a_row_judged_with_another_leg_says_so() {
        let mut twin = fixed_row("delete-sync-off", Some(JournalMode::Delete), true);
        let configuration = "delete/off, SQLite 3.40.1".to_string();
        twin.judged_with = Some(JudgedWith { leg: "delete".into(), configuration });
        let report = AuditReport {
            schema: SCHEMA.into(),
            crashcells_version: "0.0.0".into(),
            matrix: "audit".into(),
            workdir: "/tmp".into(),
            filesystem: "ext2/3/4".into(),
            child: "reference".into(),
            summary: AuditSummary { legs: 2, honored: 2, not_honored: 0 },
            rows: vec![fixed_row("delete", Some(JournalMode::Delete), true), twin],
        };
        let text = report.to_human();
        let line =
            "    crash columns judged with leg delete: the same applied configuration, delete/off, SQLite 3.40.1";
        assert_eq!(text.matches(line).count(), 1, "{text}");
        assert!(report.to_json().contains(r#""judged_with": {"#), "{}", report.to_json());
    }

    /// The audit matrix's table with its crash columns, each leg at its
    /// widest words (a zeroed journal of kilobytes, `truncate` applied,
    /// `LOSES`), fits a terminal of 120 columns; the words under the rows
    /// (reasons, repros) may not.
    #[test]
    fn the_audit_matrix_table_fits_120_columns() {
        let matrix = Matrix::load("audit").unwrap();
        let mut loses = crash::Columns::not_honored();
        for (_, c) in &mut loses.0 {
            (c.keeps, c.reason) = (Some(false), "2: lost".into());
        }
        let rows: Vec<Row> = matrix
            .legs
            .iter()
            .map(|leg| {
                let level = leg.synchronous.map(|l| l.as_str().to_string());
                let mut r = fixed_row(&leg.name, leg.journal_mode, true);
                r.requested_synchronous = level.clone();
                r.ran_mode = leg.journal_mode.unwrap_or(JournalMode::Wal).into();
                r.ran_synchronous = level.or(Some("full".into()));
                // Kept as reported: only a lie (`wal/full kept normal`) widens the table.
                r.kept_synchronous = r.ran_synchronous.clone();
                r.resolver.as_mut().unwrap().applied = JournalMode::Truncate;
                r.artefacts = Artefacts { wal: None, journal: Some(999_999), journal_zeroed: true };
                r.crash = loses.clone();
                r
            })
            .collect();
        let legs = rows.len();
        let report = AuditReport {
            schema: SCHEMA.into(),
            crashcells_version: "0.0.0".into(),
            matrix: "audit".into(),
            workdir: "/tmp".into(),
            filesystem: "ext2/3/4".into(),
            child: "reference".into(),
            summary: AuditSummary { legs, honored: legs, not_honored: 0 },
            rows,
        };
        let text = report.to_human();
        let table: Vec<&str> = text.lines().take_while(|l| !l.starts_with("process, power")).collect();
        let widest = table.iter().filter(|l| !l.starts_with("    ")).map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 120, "{widest} columns:\n{text}");
        assert!(table[0].ends_with("honored process power torn  fault"), "{}", table[0]);
        assert!(text.contains("rollback, -journal 976K zeroed") && text.contains("LOSES LOSES"), "{text}");
    }

    /// A leg and its bundled twin read side by side; a child that ran WAL
    /// on a library with the WAL-reset bug is named under its row.
    #[test]
    fn a_matrix_with_libraries_shows_each_rows_sqlite_and_the_wal_reset_bug() {
        let own = fixed_row("wal", Some(JournalMode::Wal), false);
        let twin = Row {
            sqlite_version: "3.45.1".into(),
            sqlite_library: Some("bundled".into()),
            effective_mode: "wal".into(),
            wal_reset_bug: Some("ran wal on SQLite 3.45.1, which has the WAL-reset bug (...)".into()),
            resolver: None,
            ..fixed_row("bundled-wal", Some(JournalMode::Wal), true)
        };
        let report = AuditReport {
            schema: SCHEMA.into(),
            crashcells_version: "0.0.0".into(),
            matrix: "libraries".into(),
            workdir: "/tmp".into(),
            filesystem: "tmpfs".into(),
            child: "python3 store.py".into(),
            summary: AuditSummary { legs: 2, honored: 1, not_honored: 1 },
            rows: vec![own.clone(), twin],
        };
        let text = report.to_human();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("leg         sqlite           requested"), "{text}");
        assert!(lines[1].starts_with("wal         3.40.1 (own)     "), "{text}");
        let twin_at = lines.iter().position(|l| l.starts_with("bundled-wal 3.45.1 (bundled) ")).expect("the twin");
        assert_eq!(
            lines[twin_at + 1],
            "    WAL-reset bug: ran wal on SQLite 3.45.1, which has the WAL-reset bug (...)"
        );
        // Without a library, no column: the other matrices' tables are as they were.
        let plain = AuditReport { rows: vec![own], ..report };
        assert!(plain.to_human().starts_with("leg requested"), "{}", plain.to_human());
    }

    #[test]
    fn the_filesystem_of_a_folder_has_a_name() {
        assert_ne!(filesystem_name(&std::env::temp_dir()), "unknown");
    }
}
