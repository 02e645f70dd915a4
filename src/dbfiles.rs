//! The files of a SQLite database as the harness sees them on disk: the
//! database and the journals beside it (`-wal`, `-journal`, `-shm`), the
//! journal family its header says, and what was left beside it after a
//! run. Every module that copies, rebuilds or audits a crash state names
//! these files the same way, from here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The files of a database: the file itself and every journal beside it,
/// by suffix.
pub const DB_FILES: [&str; 4] = ["", "-wal", "-journal", "-shm"];

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
        use std::io::Read;
        let mut head = Vec::with_capacity(28);
        let _ = std::fs::File::open(&journal_path).and_then(|f| f.take(28).read_to_end(&mut head));
        !head.is_empty() && head.iter().all(|&b| b == 0)
    };
    Artefacts { wal: len(sibling(db, "-wal")), journal, journal_zeroed }
}

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
