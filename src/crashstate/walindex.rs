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

/// What a survivor's index leaves out of the WAL: a kill between writing a
/// commit's frames and indexing them (SQLite syncs the WAL between the two
/// under `synchronous=FULL`) leaves a whole commit that the `-shm` r0 left
/// does not show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unindexed {
    /// Frames the `-shm`'s header shows (its `mxFrame`).
    pub indexed: u32,
    /// Frames up to the WAL's last valid commit frame, as a recovery finds.
    pub committed: u32,
    /// The WAL's length with only the indexed frames.
    pub indexed_len: u64,
}

/// The commit the WAL holds past the `-shm`'s index, if it holds one: the
/// `-shm`'s header valid (both copies alike, initialised) and a recovery of
/// the WAL reaching further than its `mxFrame`. A header a survivor would
/// not trust makes it rebuild the index from the WAL, so then nothing is
/// left out. An index of no frames may carry other salts than the WAL's
/// (a first WAL's salts are drawn when its header is written, and reach
/// the `-shm` with its first commit's index): a reader of it sees no frame
/// of that WAL all the same. An index of frames with other salts is not
/// this WAL's, and nothing is said of it.
pub fn unindexed(shm: &[u8], wal: &[u8]) -> Option<Unindexed> {
    let (indexed, salts) = index_header(shm)?;
    let (committed, page) = recovered(wal)?;
    if committed <= indexed || (indexed > 0 && wal[16..24] != salts) {
        return None;
    }
    let indexed_len = 32 + u64::from(indexed) * (24 + page as u64);
    Some(Unindexed { indexed, committed, indexed_len })
}

/// The `-shm` header's `mxFrame` and salts (`WalIndexHdr`, wal.c: two
/// 48-byte copies, native byte order; `isInit` at 12, `mxFrame` at 16,
/// `aSalt` at 32 as the WAL's header bytes 16-23), if both copies agree.
fn index_header(shm: &[u8]) -> Option<(u32, [u8; 8])> {
    let (first, second) = (shm.get(..48)?, shm.get(48..96)?);
    if first != second || first[12] != 1 {
        return None;
    }
    let mx = u32::from_ne_bytes(first[16..20].try_into().ok()?);
    Some((mx, first[32..40].try_into().ok()?))
}

/// The frames a recovery of `wal` keeps (up to its last valid commit
/// frame) and its page size, walformat.html: the header's checksum must
/// hold, and each frame's salts and cumulative checksum.
fn recovered(wal: &[u8]) -> Option<(u32, usize)> {
    let magic = be32(wal, 0)?;
    if magic & !1 != 0x377f_0682 {
        return None;
    }
    let big = magic & 1 == 1;
    let page = be32(wal, 8)? as usize;
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return None;
    }
    let mut sum = checksum(&wal[..24], (0, 0), big);
    if Some(sum) != pair(wal, 24) {
        return None;
    }
    let (mut frame, mut committed, mut at) = (0u32, 0u32, 32usize);
    while let Some(body) = wal.get(at..at + 24 + page) {
        if body[8..16] != wal[16..24] {
            break;
        }
        sum = checksum(&body[24..], checksum(&body[..8], sum, big), big);
        if Some(sum) != pair(body, 16) {
            break;
        }
        frame += 1;
        if be32(body, 4)? != 0 {
            committed = frame;
        }
        at += 24 + page;
    }
    Some((committed, page))
}

/// SQLite's WAL checksum (`walChecksumBytes`) of `data` from `seed`, its
/// words big-endian or little-endian as the WAL's magic says.
fn checksum(data: &[u8], seed: (u32, u32), big: bool) -> (u32, u32) {
    let word = |b: &[u8]| {
        let b: [u8; 4] = b.try_into().expect("4 bytes");
        if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }
    };
    data.chunks_exact(8).fold(seed, |(s0, s1), w| {
        let s0 = s0.wrapping_add(word(&w[..4])).wrapping_add(s1);
        (s0, s1.wrapping_add(word(&w[4..])).wrapping_add(s0))
    })
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn pair(b: &[u8], at: usize) -> Option<(u32, u32)> {
    Some((be32(b, at)?, be32(b, at + 4)?))
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

    /// A WAL store with one connection kept open (so its close does not
    /// checkpoint the WAL away), after `sql`: its `-wal` and `-shm` bytes.
    fn wal_files(conn: &rusqlite::Connection, db: &Path, sql: &str) -> (Vec<u8>, Vec<u8>) {
        conn.execute_batch(sql).unwrap();
        let read = |tail: &str| std::fs::read(crate::dbfiles::sibling(db, tail)).unwrap();
        (read("-wal"), read("-shm"))
    }

    #[test]
    fn a_commit_written_after_the_index_was_read_is_unindexed_and_one_indexed_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;").unwrap();
        let (_, shm0) = wal_files(&conn, &db, "SELECT 1 FROM sqlite_schema;");
        let (wal1, shm1) = wal_files(&conn, &db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
        // The index of no frames, before the WAL's first commit: all of it is past it.
        let first = unindexed(&shm0, &wal1).expect("the first commit is past an empty index");
        assert_eq!((first.indexed, first.indexed_len), (0, 32), "{first:?}");
        let (wal2, shm2) = wal_files(&conn, &db, "INSERT INTO t VALUES (zeroblob(5000));");
        // The index as it stood before the second commit: that commit is past it.
        let lag = unindexed(&shm1, &wal2).expect("the second commit is not in the first index");
        assert!(lag.committed > lag.indexed && lag.indexed > 0, "{lag:?}");
        let (indexed, _) = index_header(&shm1).unwrap();
        assert_eq!(recovered(&wal2[..lag.indexed_len as usize]).map(|(c, _)| c), Some(indexed));
        // Indexed as written: nothing left out.
        assert_eq!(unindexed(&shm2, &wal2), None);
        // The second commit's last frame cut short: a recovery stops before it.
        assert_eq!(unindexed(&shm1, &wal2[..wal2.len() - 1]), None);
        // A torn index header: a survivor rebuilds it from the WAL.
        let mut torn = shm1.clone();
        torn[16] ^= 1;
        assert_eq!(unindexed(&torn, &wal2), None);
        // Another generation's salts: the index is not this WAL's.
        let mut other = wal2.clone();
        other[16] ^= 1;
        assert_eq!(unindexed(&shm1, &other), None);
    }
}
