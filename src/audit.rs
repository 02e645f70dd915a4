//! The leg audit: did the child really run in the journal mode the leg asked for?
//!
//! Only WAL persists in the file (header bytes 18 and 19 are 2 in WAL, 1 in
//! the rollback modes); DELETE, TRUNCATE, PERSIST, MEMORY and OFF are
//! per-connection, so a fresh connection reports `delete` for all of them.
//! The audit therefore combines what the child's own connection reported
//! with the header and the journal files left beside the database, and never
//! takes a fresh connection's word alone. A leg that ran in another mode is
//! skipped: it never counts as evidence for the mode it advertises.

use std::path::{Path, PathBuf};

use crashcells_child::config::JournalMode;
use crashcells_child::protocol::Ready;
use serde::{Deserialize, Serialize};

/// What the database header says about the journal family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Wal,
    Rollback,
    /// No file, a file too short for a header, or header bytes of neither kind.
    Unknown,
}

/// The journal files found beside the database after the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artefacts {
    /// Length of `-wal`, if present.
    pub wal: Option<u64>,
    /// Length of `-journal`, if present.
    pub journal: Option<u64>,
    /// True if `-journal` is present and its header is zeroed (PERSIST's mark).
    pub journal_zeroed: bool,
}

/// The audit of one trial's database against the leg's request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    pub requested: Option<JournalMode>,
    /// What the child's own connection reported.
    pub reported: String,
    pub family: Family,
    pub artefacts: Artefacts,
    /// The mode the trial ran in, as far as the evidence agrees.
    pub effective: String,
    pub honored: bool,
    /// Why not honored (empty when honored).
    pub reason: String,
}

/// Path of a file beside the database: `-wal`, `-journal`, `-shm`.
pub fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Reads the journal family from the header of the database at `db`.
pub fn header_family(db: &Path) -> Family {
    use std::io::Read;
    let mut header = [0u8; 20];
    match std::fs::File::open(db).and_then(|mut f| f.read_exact(&mut header)) {
        Ok(()) => match (header[18], header[19]) {
            (2, 2) => Family::Wal,
            (1, 1) => Family::Rollback,
            _ => Family::Unknown,
        },
        Err(_) => Family::Unknown,
    }
}

/// Looks at the files beside the database.
pub fn artefacts(db: &Path) -> Artefacts {
    let len = |p: PathBuf| std::fs::metadata(p).ok().map(|m| m.len());
    let journal_path = sibling(db, "-journal");
    let journal = len(journal_path.clone());
    let journal_zeroed = journal.is_some_and(|n| n > 0) && {
        let head = std::fs::read(&journal_path).unwrap_or_default();
        head.iter().take(28).all(|&b| b == 0)
    };
    Artefacts { wal: len(sibling(db, "-wal")), journal, journal_zeroed }
}

/// Audits a trial: the child's `ready` record, the header and the artefacts,
/// against what the leg `requested`. Must run after the child is reaped and
/// before any recovery pass opens the database.
pub fn audit(db: &Path, ready: &Ready, requested: Option<JournalMode>) -> Audit {
    let family = header_family(db);
    let artefacts = artefacts(db);
    let reported = ready.journal_mode.to_ascii_lowercase();
    let contradiction = contradiction(&reported, family, &artefacts);
    let effective = if contradiction.is_some() { format!("{reported}?") } else { reported.clone() };
    let reason = match (requested, contradiction) {
        (_, Some(c)) => c,
        (Some(want), None) if want.as_str() != reported => not_honored(want, &reported, ready),
        _ => String::new(),
    };
    Audit { requested, reported, family, artefacts, effective, honored: reason.is_empty(), reason }
}

fn not_honored(want: JournalMode, ran: &str, ready: &Ready) -> String {
    match &ready.resolver {
        Some(d) => {
            let who = serde_json::to_value(d.decided_by).ok().and_then(|v| v.as_str().map(String::from));
            format!("requested {want}, child ran {ran}: {} (decided by {})", d.reason, who.unwrap_or_default())
        }
        None => format!("requested {want}, child ran {ran} (the child reported no resolver decision)"),
    }
}

/// What on disk contradicts the child's own report, if anything.
fn contradiction(reported: &str, family: Family, a: &Artefacts) -> Option<String> {
    let wal = reported == "wal";
    match family {
        Family::Unknown => Some("the database header shows no journal family (no file, or not SQLite)".into()),
        Family::Wal if !wal => Some(format!("child reported {reported} but the header says WAL")),
        Family::Rollback if wal => Some("child reported wal but the header says rollback".into()),
        _ if !wal && a.wal.is_some() => Some(format!("child reported {reported} but a -wal file was left")),
        _ if matches!(reported, "memory" | "off") && a.journal.is_some() => {
            Some(format!("child reported {reported} but a -journal file was left"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_child::config::DatabaseConfig;
    use crashcells_child::resolver::{SqliteVersion, resolve};

    fn ready(mode: &str, requested: Option<JournalMode>, v: SqliteVersion) -> Ready {
        let decision = resolve(DatabaseConfig { journal_mode: requested, synchronous: None }, v, false);
        Ready {
            protocol: 1,
            pid: 1,
            op: "append".into(),
            sqlite_version: v.to_string(),
            sqlite_source_id: None,
            journal_mode: mode.into(),
            synchronous: None,
            resolver: Some(decision),
        }
    }

    fn db_with_header(name: &str, byte: u8) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cc-audit-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("s.db");
        let mut header = vec![0u8; 100];
        header[18] = byte;
        header[19] = byte;
        std::fs::write(&db, header).unwrap();
        db
    }

    #[test]
    fn honored_when_report_and_header_agree() {
        let db = db_with_header("ok", 2);
        let a = audit(&db, &ready("wal", Some(JournalMode::Wal), SqliteVersion(3, 54, 1)), Some(JournalMode::Wal));
        assert!(a.honored, "{}", a.reason);
        assert_eq!((a.family, a.effective.as_str()), (Family::Wal, "wal"));
    }

    #[test]
    fn gate_downgrade_is_not_honored_and_says_who_decided() {
        let db = db_with_header("gate", 1);
        let a = audit(&db, &ready("delete", Some(JournalMode::Wal), SqliteVersion(3, 40, 1)), Some(JournalMode::Wal));
        assert!(!a.honored);
        assert!(a.reason.contains("requested wal, child ran delete"), "{}", a.reason);
        assert!(a.reason.contains("WAL-reset") && a.reason.contains("3.40.1"), "{}", a.reason);
    }

    #[test]
    fn header_contradicting_the_report_is_not_honored() {
        let db = db_with_header("contra", 2);
        let a =
            audit(&db, &ready("delete", Some(JournalMode::Delete), SqliteVersion(3, 54, 1)), Some(JournalMode::Delete));
        assert!(!a.honored);
        assert!(a.reason.contains("header says WAL"), "{}", a.reason);
    }

    #[test]
    fn stray_journal_contradicts_memory_and_off() {
        let db = db_with_header("stray", 1);
        std::fs::write(sibling(&db, "-journal"), [1u8; 512]).unwrap();
        let a = audit(&db, &ready("off", Some(JournalMode::Off), SqliteVersion(3, 54, 1)), Some(JournalMode::Off));
        assert!(!a.honored && a.reason.contains("-journal"), "{}", a.reason);
        let a =
            audit(&db, &ready("delete", Some(JournalMode::Delete), SqliteVersion(3, 54, 1)), Some(JournalMode::Delete));
        assert!(a.honored, "a hot journal after a kill is DELETE's own: {}", a.reason);
    }

    #[test]
    fn default_leg_is_honored_in_whatever_mode_the_resolver_chose() {
        let db = db_with_header("default", 1);
        let a = audit(&db, &ready("delete", None, SqliteVersion(3, 40, 1)), None);
        assert!(a.honored);
        assert_eq!(a.effective, "delete");
    }
}
