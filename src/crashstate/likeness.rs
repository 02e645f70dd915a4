//! A recorded crash state as another run of the same store can reach it
//! again: for a store whose calls differ from run to run (a thread pool
//! takes the store's lock in whatever order the scheduler gives), the real
//! kill at a recorded fire's ordinal may land elsewhere, so the run that
//! confirms it is killed where its files first are the recorded state, or
//! at the recorded call once its ack journal holds what it held there.
//!
//! Crash model: the process crash's ([`super::files`]): a state is the
//! files the calls before a point left. Clause: none of its own; this only
//! places a kill, and the killed run is judged for real like any trial, so
//! a likeness that is wrong costs a try, never a verdict.
//!
//! What two runs cannot share is left out: the ready record (its pid), and
//! the bytes SQLite draws at random (the WAL's salts and the checksums that
//! depend on them; the rollback journal's nonce and its records' checksums).

use std::hash::{Hash, Hasher};

use super::files::{Files, MODELLED};
use crate::kill::syscall::{FileKind, Point};

/// How a run was found to reach a recorded state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Likeness {
    /// Its files, as two runs can share them, hash to the recorded state's.
    State,
    /// The call is the recorded point's (kind, file, offset, length) and its
    /// ack journal holds the recorded state's acks.
    Write,
}

/// A recorded state to find again in another run.
#[derive(Clone, Debug)]
pub struct Sought {
    /// The recorded point: the call the state was killed at.
    pub point: Point,
    /// Each modelled file's length (the acks' after the ready record), to
    /// rule most states out without hashing them.
    lens: Vec<Option<usize>>,
    digest: u64,
    acks: Vec<u8>,
}

impl Sought {
    /// The state `files` at `point`, as the run that confirms it seeks it.
    pub fn new(files: &Files, point: &Point) -> Sought {
        Sought { point: point.clone(), lens: lens(files), digest: digest(files), acks: acks_after_ready(files) }
    }

    /// How the files before `call` (which has not run) are like the sought
    /// state, if they are: the whole state first, then the call.
    pub fn like(&self, files: &Files, call: &Point) -> Option<Likeness> {
        if lens(files) == self.lens && digest(files) == self.digest {
            return Some(Likeness::State);
        }
        let p = &self.point;
        let same_call = (call.syscall, call.file, call.offset, call.len) == (p.syscall, p.file, p.offset, p.len);
        (same_call && acks_after_ready(files) == self.acks).then_some(Likeness::Write)
    }
}

fn lens(files: &Files) -> Vec<Option<usize>> {
    let len = |kind| match kind {
        FileKind::Acks => Some(acks_after_ready(files).len()),
        kind => files.len_of(kind),
    };
    MODELLED.into_iter().chain(files.sidecars()).map(len).collect()
}

/// A hash of every modelled file as two runs can share it.
fn digest(files: &Files) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for kind in MODELLED.into_iter().chain(files.sidecars()) {
        let bytes = match kind {
            FileKind::Acks => Some(acks_after_ready(files)),
            kind => files.get(kind).map(|b| shareable(kind, b)),
        };
        (kind, bytes).hash(&mut h);
    }
    h.finish()
}

/// The ack journal after its first line, the ready record, whose pid
/// differs from run to run (docs/PROTOCOL.md §3: it is the first write).
fn acks_after_ready(files: &Files) -> Vec<u8> {
    let acks = files.get(FileKind::Acks).unwrap_or_default();
    match acks.iter().position(|&b| b == b'\n') {
        Some(end) => acks[end + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// A file's bytes without what SQLite draws at random.
fn shareable(kind: FileKind, mut bytes: Vec<u8>) -> Vec<u8> {
    match kind {
        FileKind::Wal => wal(&mut bytes),
        FileKind::Journal => journal(&mut bytes),
        _ => {}
    }
    bytes
}

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize
}

/// The WAL's salts and checksums zeroed: in its header (bytes 16-31) and
/// in each frame's header (bytes 8-23), walformat.html.
fn wal(b: &mut [u8]) {
    if b.len() < 32 || !matches!(be32(b, 0), 0x377f_0682 | 0x377f_0683) {
        return;
    }
    let page = be32(b, 8);
    b[16..32].fill(0);
    let mut at = 32;
    while page > 0 && at + 24 <= b.len() {
        b[at + 8..at + 24].fill(0);
        at += 24 + page;
    }
}

/// The rollback journal's magic, fileformat2.html.
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// The rollback journal's nonce (header bytes 12-15) and each record's
/// checksum (its last 4 bytes) zeroed; records start one sector in. Its
/// magic is zero until the journal is synced (pager.c, `writeJournalHdr`).
fn journal(b: &mut [u8]) {
    if b.len() < 28 || (b[..8] != JOURNAL_MAGIC && b[..8] != [0; 8]) {
        return;
    }
    b[12..16].fill(0);
    let (sector, page) = (be32(b, 20), be32(b, 24));
    let record = page + 8;
    let mut at = sector;
    while sector > 0 && page > 0 && at + record <= b.len() {
        b[at + record - 4..at + record].fill(0);
        at += record;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::{At, Effect};
    use crate::kill::Ordinal;
    use crate::kill::syscall::Call;

    fn files(parts: &[(FileKind, &[u8])]) -> Files {
        let mut f = Files::default();
        for (file, data) in parts {
            f.apply(&Effect::Write { file: *file, at: At::Offset(0), data: data.to_vec() });
        }
        f
    }

    fn call(syscall: &'static str, file: FileKind, offset: u64) -> Point {
        Point {
            ordinal: Ordinal(9),
            syscall: Call::Sys(syscall),
            file: Some(file),
            offset: Some(offset),
            len: Some(512),
        }
    }

    /// A WAL of one 8-byte frame with the given salt and checksum byte.
    fn wal_bytes(salt: u8, page: u8) -> Vec<u8> {
        let mut b = vec![0x37, 0x7f, 0x06, 0x82, 0, 0x2d, 0xe2, 0x18, 0, 0, 0, 8, 0, 0, 0, 0];
        b.extend([salt; 16]);
        b.extend([0, 0, 0, 1, 0, 0, 0, 1]);
        b.extend([salt; 16]);
        b.extend([page; 8]);
        b
    }

    #[test]
    fn two_runs_states_that_differ_in_salts_and_pid_alone_are_alike() {
        let ready = |pid: &str| format!("{{\"kind\":\"ready\",\"pid\":{pid}}}\n{{\"kind\":\"ack\",\"i\":0}}\n");
        let ack = ready("41");
        let a = files(&[(FileKind::Wal, &wal_bytes(1, 7)), (FileKind::Acks, ack.as_bytes())]);
        let at = call("pwrite64", FileKind::Wal, 4152);
        let sought = Sought::new(&a, &at);
        let other = ready("40417");
        let b = files(&[(FileKind::Wal, &wal_bytes(2, 7)), (FileKind::Acks, other.as_bytes())]);
        assert_eq!(sought.like(&b, &call("fsync", FileKind::Wal, 0)), Some(Likeness::State));
        // Another page: not the state; the same call with the same acks is.
        let c = files(&[(FileKind::Wal, &wal_bytes(2, 8)), (FileKind::Acks, other.as_bytes())]);
        assert_eq!(sought.like(&c, &call("fsync", FileKind::Wal, 0)), None);
        assert_eq!(sought.like(&c, &at), Some(Likeness::Write));
        // The same call before the ack was written: not yet.
        let d = files(&[(FileKind::Wal, &wal_bytes(2, 8)), (FileKind::Acks, b"{\"kind\":\"ready\"}\n")]);
        assert_eq!(sought.like(&d, &at), None);
    }

    #[test]
    fn a_journals_nonce_and_checksums_are_left_out_and_its_pages_kept() {
        let journal = |nonce: u8, page: u8| {
            let mut b = JOURNAL_MAGIC.to_vec();
            b.extend([0, 0, 0, 1, nonce, nonce, nonce, nonce, 0, 0, 0, 2, 0, 0, 0, 32, 0, 0, 0, 4]);
            b.resize(32, 0);
            b.extend([0, 0, 0, 1, page, page, page, page, nonce, 0, nonce, 0]);
            b
        };
        let (mut a, mut b, mut c) = (journal(1, 5), journal(9, 5), journal(9, 6));
        // Before its first sync, SQLite leaves the magic zero.
        let mut unsynced = journal(3, 5);
        unsynced[..8].fill(0);
        for j in [&mut a, &mut b, &mut c, &mut unsynced] {
            super::journal(j);
        }
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(&a[36..40], &[5; 4], "the page is kept");
        assert_eq!(unsynced[8..], a[8..]);
    }
}
