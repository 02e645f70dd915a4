//! The wal-index (the `-shm`) of a recorded WAL race: its bytes at each
//! stop of the recorded claimant, and the dead-man's-switch lock that makes
//! the racers who outlive it map those bytes as they are.
//!
//! Crash model: SQLite writes the `-shm` through a shared `mmap`, so no
//! system call logs it, but the page cache holds every store to it: reading
//! the file while the traced claimant is stopped at the entry of its Nth
//! call gives exactly what a survivor of a kill there maps. A survivor that
//! was connected when the claimant died finds that index and trusts it: a
//! commit the claimant wrote to the WAL but had not yet indexed stays
//! invisible to it. Only the first connection to find no lock on the
//! `-shm`'s dead-man's-switch byte (SQLite's `UNIX_SHM_DMS`) truncates the
//! file and rebuilds the index from the WAL. So a rebuilt state whose
//! survivors were connected before the kill is laid with the `-shm` read at
//! its stop and a shared lock held on that byte while they start, as their
//! own open connections held it. The claimant's other locks (the writer's,
//! the readers') died with it, and so does no lock here.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

/// The byte of the `-shm` whose locks say whether any connection has it
/// mapped: SQLite's `UNIX_SHM_DMS`, `(22 + 8) * 4 + 8` (`os_unix.c`).
pub const DMS_BYTE: i64 = 128;

/// The `-shm` as it was at each stop of a recording, and at its end; `None`
/// where there was no `-shm` (a rollback journal, or before the first
/// connection made it). Equal consecutive snapshots share their bytes.
#[derive(Clone, Debug, Default)]
pub struct WalIndex {
    /// `stops[n - 1]`: the `-shm` at the entry of kill point n.
    stops: Vec<Option<Arc<[u8]>>>,
    /// After the recorded claimant ended.
    end: Option<Arc<[u8]>>,
}

impl WalIndex {
    /// Reads the `-shm` at `path` for the next stop.
    pub fn see(&mut self, path: &Path) {
        let seen = self.read(path);
        self.stops.push(seen);
    }

    /// The `-shm` as the claimant's end left it ([`snapshot`], read there).
    pub fn ended(&mut self, end: Option<Arc<[u8]>>) {
        self.end = end;
    }

    /// The `-shm` a kill at point `n` leaves (n = stops + 1: the end).
    pub fn at(&self, n: u64) -> Option<&[u8]> {
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        match self.stops.get(i) {
            Some(stop) => stop.as_deref(),
            None if i == self.stops.len() => self.end.as_deref(),
            None => None,
        }
    }

    /// The stops seen.
    pub fn stops(&self) -> u64 {
        self.stops.len() as u64
    }

    /// The file's bytes, sharing the previous snapshot's when unchanged
    /// (most calls of a claim leave the index as it was).
    fn read(&self, path: &Path) -> Option<Arc<[u8]>> {
        let bytes = snapshot(path)?;
        match self.stops.last() {
            Some(Some(last)) if **last == *bytes => Some(Arc::clone(last)),
            _ => Some(bytes),
        }
    }
}

/// The `-shm` at `path` as it is now, if there is one.
pub fn snapshot(path: &Path) -> Option<Arc<[u8]>> {
    std::fs::read(path).ok().map(Into::into)
}

/// A shared lock on the `-shm`'s dead-man's-switch byte: while it is held,
/// a connection that opens the store keeps the index it finds. Dropping it
/// releases the lock.
#[derive(Debug)]
pub struct DmsHold {
    _file: File,
}

/// Writes `bytes` as the `-shm` at `path` and holds a shared lock on its
/// dead-man's-switch byte. An open-file-description lock: it is this
/// descriptor's, so a driver thread that opens and closes the same file
/// cannot drop it (a process-owned `fcntl` lock dies with any close), and
/// SQLite's process-owned locks see it all the same on Linux.
pub fn lay_and_hold(path: &Path, bytes: &[u8]) -> io::Result<DmsHold> {
    std::fs::write(path, bytes)?;
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    // SAFETY: a plain C struct, every field then set.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_RDLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = DMS_BYTE;
    lock.l_len = 1;
    // SAFETY: a valid descriptor and a lock description that outlives the call.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(DmsHold { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SQLite asks before it resets a `-shm` (`F_GETLK` for a write
    /// lock on the dead-man's-switch byte, on a descriptor of its own):
    /// whether some lock is in the way. Asked here through another open
    /// file, which an OFD lock conflicts with as another process's would.
    fn someone_holds_dms(path: &Path) -> bool {
        let file = OpenOptions::new().read(true).write(true).open(path).unwrap();
        // SAFETY: a plain C struct, every field then set.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        lock.l_start = DMS_BYTE;
        lock.l_len = 1;
        // SAFETY: a valid descriptor and a lock description it fills in.
        assert_eq!(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) }, 0);
        lock.l_type != libc::F_UNLCK as libc::c_short
    }

    #[test]
    fn a_laid_index_is_locked_while_held_and_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let shm = dir.path().join("store.db-shm");
        let hold = lay_and_hold(&shm, &[7u8; 32768]).unwrap();
        assert_eq!(std::fs::read(&shm).unwrap(), vec![7u8; 32768]);
        // Another descriptor of this process opened and closed: an OFD lock survives it.
        drop(std::fs::read(&shm).unwrap());
        assert!(someone_holds_dms(&shm), "a racer would reset the index");
        drop(hold);
        assert!(!someone_holds_dms(&shm), "the lock outlived its hold");
    }

    #[test]
    fn snapshots_are_per_stop_shared_when_unchanged_and_the_end_follows_them() {
        let dir = tempfile::tempdir().unwrap();
        let shm = dir.path().join("store.db-shm");
        let mut w = WalIndex::default();
        w.see(&shm);
        std::fs::write(&shm, b"one").unwrap();
        w.see(&shm);
        w.see(&shm);
        std::fs::write(&shm, b"two").unwrap();
        w.ended(snapshot(&shm));
        assert_eq!(
            (w.at(1), w.at(2), w.at(3), w.at(4), w.at(5)),
            (None, Some(&b"one"[..]), Some(&b"one"[..]), Some(&b"two"[..]), None)
        );
        assert!(Arc::ptr_eq(w.stops[1].as_ref().unwrap(), w.stops[2].as_ref().unwrap()));
        assert_eq!(w.at(0), None);
    }
}
