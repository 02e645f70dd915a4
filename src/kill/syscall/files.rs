//! The file classes of syscall kill points: which of the trial's files a
//! trapped call touched (the database, its `-journal`, `-wal` or `-shm`, the
//! ack journal, the transport a workload adds, or another file of the
//! store's folder), read from the stopped child's descriptors and memory.
//!
//! Crash model: a call counts as a kill point only when it touches one of
//! these files, and every file directly in the store's folder is the
//! store's ([`FileKind::Other`]; the harness's own files aside), so a crash
//! state holds every byte a recovery may read and no call of the child's
//! elsewhere moves a point's number.
//!
//! Clause: none of its own; the cells judge the states these points leave.

use std::path::{Path, PathBuf};

/// Which of the trial's files a call touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    Database,
    Journal,
    Wal,
    Shm,
    Acks,
    /// The fake provider's log of a child that sends (cell 5): a send is a
    /// kill point, so a sweep visits the instants before and after it.
    Transport,
    /// Any other file directly in the store's folder: the store's too (a
    /// recovery that reads a marker beside its database must see it), so
    /// its calls are kill points and its bytes part of every state.
    Other(Sidecar),
}

/// The name of a file of the store's folder that is none of the trial's
/// known files, interned so that a [`FileKind`] stays `Copy`: the names a
/// store uses are few and the same in every trial, so the table stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sidecar(u32);

impl Sidecar {
    /// The sidecar named `name` (a file name, no folder).
    pub fn named(name: &str) -> Sidecar {
        let mut names = sidecar_names();
        let at = names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(Box::leak(name.to_owned().into_boxed_str()));
            names.len() - 1
        });
        Sidecar(at as u32)
    }

    /// Its file name.
    pub fn name(self) -> &'static str {
        sidecar_names().get(self.0 as usize).copied().unwrap_or("?")
    }
}

impl FileKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Database => "database",
            FileKind::Journal => "journal",
            FileKind::Wal => "wal",
            FileKind::Shm => "shm",
            FileKind::Acks => "acks",
            FileKind::Transport => "transport",
            FileKind::Other(s) => s.name(),
        }
    }

    /// Whether it is a wal-index: the database's `-shm`, or another
    /// database's in the folder (an `ATTACH`ed one's, a sidecar named
    /// `*-shm`). SQLite rebuilds a wal-index from the WAL whenever the
    /// first connection opens it, so no recovery reads one: it is no part
    /// of a crash state, and no loss of its bytes or names is a loss.
    pub fn is_index(self) -> bool {
        match self {
            FileKind::Shm => true,
            FileKind::Other(s) => is_index_name(s.name()),
            _ => false,
        }
    }
}

/// Whether a file of the store's folder named `name` is a wal-index.
pub fn is_index_name(name: &str) -> bool {
    name.ends_with("-shm")
}

fn sidecar_names() -> std::sync::MutexGuard<'static, Vec<&'static str>> {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The files whose calls count as kill points, and the trial's folder
/// (whose `fsync` makes their names durable).
#[derive(Clone, Debug)]
pub struct Targets {
    files: Vec<(PathBuf, FileKind)>,
    pub(super) dir: Option<PathBuf>,
}

impl Targets {
    pub fn new(db: &Path, acks: &Path) -> Targets {
        let sib = crate::dbfiles::sibling;
        let files = vec![
            (db.to_path_buf(), FileKind::Database),
            (sib(db, "-journal"), FileKind::Journal),
            (sib(db, "-wal"), FileKind::Wal),
            (sib(db, "-shm"), FileKind::Shm),
            (acks.to_path_buf(), FileKind::Acks),
        ];
        Targets { files, dir: db.parent().map(Path::to_path_buf) }
    }

    /// Whether `path` is the trial's folder.
    pub fn is_dir(&self, path: &Path) -> bool {
        self.dir.as_deref() == Some(path)
    }

    /// These targets and `path`, as a file of `kind`.
    pub fn with(mut self, path: &Path, kind: FileKind) -> Targets {
        self.files.push((path.to_path_buf(), kind));
        self
    }

    /// The kind of `path`; a relative path is matched on its file name (the
    /// trial's folder is private, so names are unique within it).
    /// Any other file directly in the folder (not in a folder below it,
    /// such as the config home) is the store's: [`FileKind::Other`].
    pub fn kind(&self, path: &Path) -> Option<FileKind> {
        let by_name = path.is_relative();
        let known =
            self.files.iter().find(|(p, _)| if by_name { p.file_name() == path.file_name() } else { p == path });
        known.map(|f| f.1).or_else(|| self.sidecar(path))
    }

    fn sidecar(&self, path: &Path) -> Option<FileKind> {
        let beside = path.is_absolute() && path.parent() == self.dir.as_deref();
        let name = path.file_name()?.to_str()?;
        (beside && !crate::trialdir::is_harness_file(name)).then(|| FileKind::Other(Sidecar::named(name)))
    }
}

pub(crate) fn fd_kind(pid: u32, targets: &Targets, fd: u64) -> Option<FileKind> {
    targets.kind(&fd_path(pid, fd)?)
}

/// The path an open descriptor of the stopped child names.
pub(crate) fn fd_path(pid: u32, fd: u64) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{}", fd as i32)).ok()
}

pub(super) fn path_kind(pid: u32, targets: &Targets, addrs: &[u64]) -> Option<FileKind> {
    addrs.iter().find_map(|&a| read_path(pid, a).and_then(|p| targets.kind(&p)))
}

/// Reads a NUL-terminated path from the stopped child's memory, a page at
/// most at a time (a read may not cross into an unmapped page).
pub(crate) fn read_path(pid: u32, addr: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    const PAGE: u64 = 4096;
    let mut bytes = Vec::new();
    let mut at = addr;
    while bytes.len() < libc::PATH_MAX as usize {
        let mut chunk = vec![0u8; (PAGE - at % PAGE) as usize];
        let local = libc::iovec { iov_base: chunk.as_mut_ptr().cast(), iov_len: chunk.len() };
        let remote = libc::iovec { iov_base: at as *mut libc::c_void, iov_len: chunk.len() };
        // SAFETY: reads into our own buffer of the stated length.
        let n = unsafe { libc::process_vm_readv(pid as i32, &local, 1, &remote, 1, 0) };
        if n <= 0 {
            return None;
        }
        chunk.truncate(n as usize);
        if let Some(end) = chunk.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&chunk[..end]);
            return Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)));
        }
        bytes.extend_from_slice(&chunk);
        at += n as u64;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_match_the_store_files_and_the_acks() {
        let t = Targets::new(Path::new("/t/store.db"), Path::new("/t/acks.ndjson"));
        assert_eq!(t.kind(Path::new("/t/store.db-wal")), Some(FileKind::Wal));
        assert_eq!(t.kind(Path::new("/t/store.db-journal")), Some(FileKind::Journal));
        assert_eq!(t.kind(Path::new("/t/acks.ndjson")), Some(FileKind::Acks));
        assert_eq!(t.kind(Path::new("store.db")), Some(FileKind::Database));
        assert_eq!(t.kind(Path::new("/other/store.db")), None);
        assert_eq!(t.kind(Path::new("/t/child.stderr")), None, "the child's stderr is not the store's");
        assert_eq!(t.kind(Path::new("/t/home/config.toml")), None, "a folder below is not the store's");
        let marker = t.kind(Path::new("/t/store.db.dirty")).unwrap();
        assert_eq!((marker, marker.as_str()), (FileKind::Other(Sidecar::named("store.db.dirty")), "store.db.dirty"));
        let t = t.with(Path::new("/t/transport.ndjson"), FileKind::Transport);
        assert_eq!(t.kind(Path::new("/t/transport.ndjson")), Some(FileKind::Transport));
        assert_eq!(t.kind(Path::new("/t/acks.ndjson")), Some(FileKind::Acks));
    }
}
