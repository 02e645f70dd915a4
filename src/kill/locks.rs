//! Lock events: SQLite's POSIX advisory locks on the store's files, seen by
//! the tracer as points where a controlled schedule may hold a process
//! (issue 49), never as kill points.
//!
//! Crash model: nothing is killed at a lock call. SQLite's unix VFS takes
//! its locks with `fcntl` `F_SETLK`/`F_SETLKW` (the `F_OFD_*` forms where a
//! build asks for them) on byte ranges: on the database, a read lock on the
//! SHARED range (`PENDING_BYTE + 2`, 510 bytes) to read, a write lock on
//! the RESERVED byte (`PENDING_BYTE + 1`) to begin a write, then the
//! PENDING byte and the SHARED range to commit; the unlock to SHARED lets
//! go of PENDING and RESERVED (two bytes from `PENDING_BYTE`), the unlock to
//! none the whole file. In WAL mode the write lock is byte 120 of the
//! `-shm` (`WAL_WRITE_LOCK`, the first of its lock bytes); the database
//! keeps its SHARED lock for the connection's life.
//!
//! A schedule that holds a process "between two transactions" must hold it
//! where it keeps no lock a writer waits for: after it let go of the write
//! lock and, in rollback mode, of its SHARED lock too (a held SHARED lock
//! would make every other writer's commit wait for it). [`Tracker`] follows
//! a process's lock calls to say where that is. A call is seen at its entry
//! and taken as granted: the schedule releases the held process alone, so
//! its calls after its barrier meet no other process's lock.
//!
//! Clause: none of its own; the schedule that holds judges.

use crate::kill::syscall::{FileKind, Targets, fd_kind};

/// Where SQLite's rollback locks sit in the database (os.h): its
/// PENDING byte, the RESERVED byte after it.
pub const PENDING_BYTE: u64 = 0x4000_0000;
pub const RESERVED_BYTE: u64 = PENDING_BYTE + 1;
/// The `-shm`'s write lock (`WAL_WRITE_LOCK`): the first lock byte, 120.
pub const WAL_WRITE_BYTE: u64 = 120;

/// The `fcntl` commands that set a lock: the only ones trapped, so that an
/// interpreter's `F_GETFD`/`F_SETFL` never stop the child.
pub const LOCK_CMDS: [i32; 4] = [libc::F_SETLK, libc::F_SETLKW, libc::F_OFD_SETLK, libc::F_OFD_SETLKW];

/// What a lock call asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Unlock,
}

/// One lock call on a file of the store: what it asks, on which bytes
/// (`len` 0: to the end of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub file: FileKind,
    pub kind: Kind,
    pub start: u64,
    pub len: u64,
}

impl Lock {
    fn covers(&self, byte: u64) -> bool {
        byte >= self.start && (self.len == 0 || byte < self.start + self.len)
    }

    /// The call in words: `fcntl database unlock at 1073741824 length 2`.
    pub fn call(&self) -> String {
        let kind = match self.kind {
            Kind::Read => "read lock",
            Kind::Write => "write lock",
            Kind::Unlock => "unlock",
        };
        let len = if self.len == 0 { "to the end".to_string() } else { format!("length {}", self.len) };
        format!("fcntl {} {kind} at {} {len}", self.file.as_str(), self.start)
    }
}

/// Whether `nr` with `args` is a lock call: `fcntl` with one of [`LOCK_CMDS`]
/// (its command compared on its low 32 bits, as the filter's `Dword` does).
pub fn is_lock_call(nr: i64, args: &[u64; 6]) -> bool {
    FCNTL.is_some_and(|f| f == nr) && LOCK_CMDS.contains(&(args[1] as u32 as i32))
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub const FCNTL: Option<i64> = Some(libc::SYS_fcntl);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const FCNTL: Option<i64> = None;

/// The lock call the stopped process `pid` makes, if it is one on a file of
/// `targets` (its `struct flock` read from the process's memory).
pub fn lock_of(pid: u32, targets: &Targets, nr: i64, args: [u64; 6]) -> Option<Lock> {
    if !is_lock_call(nr, &args) {
        return None;
    }
    let file = fd_kind(pid, targets, args[0])?;
    let flock = read_flock(pid, args[2])?;
    // SQLite always locks from the file's start (SEEK_SET); another whence is no lock of its.
    if flock.l_whence != libc::SEEK_SET as i16 {
        return None;
    }
    let kind = match flock.l_type as i32 {
        libc::F_RDLCK => Kind::Read,
        libc::F_WRLCK => Kind::Write,
        libc::F_UNLCK => Kind::Unlock,
        _ => return None,
    };
    Some(Lock { file, kind, start: flock.l_start as u64, len: flock.l_len as u64 })
}

fn read_flock(pid: u32, addr: u64) -> Option<libc::flock> {
    // SAFETY: flock is plain data; all-zero is a valid value.
    let mut flock: libc::flock = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::flock>();
    let local = libc::iovec { iov_base: (&raw mut flock).cast(), iov_len: size };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: size };
    // SAFETY: reads at most `size` bytes into our own flock.
    let n = unsafe { libc::process_vm_readv(pid as i32, &local, 1, &remote, 1, 0) };
    (n == size as isize).then_some(flock)
}

/// What a lock call did to the process's write lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    TookWrite,
    /// It let go of the write lock: its transaction committed or rolled back.
    ReleasedWrite,
}

/// A process's locks on the store, as its lock calls leave them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tracker {
    /// Any lock on the database (SHARED or more).
    db_held: bool,
    /// RESERVED or more on the database (rollback), or the `-shm`'s write lock (WAL).
    writing: bool,
    /// The write lock was last the `-shm`'s: the database's SHARED lock
    /// then stays for the connection's life and blocks no writer.
    wal: bool,
    /// Write locks let go so far.
    pub released: u32,
}

impl Tracker {
    /// Follows one lock call; what it did to the write lock, if anything.
    pub fn see(&mut self, lock: &Lock) -> Option<Event> {
        let (write_byte, on_db, on_shm) = match lock.file {
            FileKind::Database => (RESERVED_BYTE, true, false),
            FileKind::Shm => (WAL_WRITE_BYTE, false, true),
            _ => return None,
        };
        if on_db {
            self.db_held = match lock.kind {
                Kind::Unlock => !(lock.start == 0 && lock.len == 0),
                Kind::Read | Kind::Write => true,
            };
        }
        match lock.kind {
            Kind::Write if lock.covers(write_byte) && !self.writing => {
                (self.writing, self.wal) = (true, on_shm);
                Some(Event::TookWrite)
            }
            // The write lock let go on the file it was taken on.
            Kind::Unlock if lock.covers(write_byte) && self.writing && self.wal == on_shm => {
                self.writing = false;
                self.released += 1;
                Some(Event::ReleasedWrite)
            }
            _ => None,
        }
    }

    /// Whether the process holds no lock another writer waits for: no
    /// write lock, and in rollback mode no SHARED lock either (a writer's
    /// commit waits for every reader of the database).
    pub fn quiet(&self) -> bool {
        !self.writing && (self.wal || !self.db_held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(kind: Kind, start: u64, len: u64) -> Lock {
        Lock { file: FileKind::Database, kind, start, len }
    }

    fn shm(kind: Kind, start: u64, len: u64) -> Lock {
        Lock { file: FileKind::Shm, kind, start, len }
    }

    /// A rollback-journal write transaction as os_unix.c takes it: SHARED,
    /// RESERVED, PENDING and EXCLUSIVE, unlock to SHARED, unlock to none.
    #[test]
    fn a_rollback_commit_releases_the_write_lock_at_the_unlock_to_shared_and_is_quiet_after_the_last() {
        let mut t = Tracker::default();
        assert_eq!(t.see(&db(Kind::Read, PENDING_BYTE, 1)), None);
        assert_eq!(t.see(&db(Kind::Read, PENDING_BYTE + 2, 510)), None);
        assert_eq!(t.see(&db(Kind::Unlock, PENDING_BYTE, 1)), None, "SHARED's PENDING byte let go");
        assert!(!t.quiet(), "SHARED blocks a writer's commit");
        assert_eq!(t.see(&db(Kind::Write, RESERVED_BYTE, 1)), Some(Event::TookWrite));
        assert_eq!(t.see(&db(Kind::Write, PENDING_BYTE, 1)), None);
        assert_eq!(t.see(&db(Kind::Write, PENDING_BYTE + 2, 510)), None);
        assert_eq!(t.see(&db(Kind::Read, PENDING_BYTE + 2, 510)), None, "down to SHARED");
        assert_eq!(t.see(&db(Kind::Unlock, PENDING_BYTE, 2)), Some(Event::ReleasedWrite));
        assert!(!t.quiet());
        assert_eq!(t.see(&db(Kind::Unlock, 0, 0)), None);
        assert!(t.quiet());
        assert_eq!(t.released, 1);
    }

    #[test]
    fn a_read_transactions_unlock_to_none_is_no_release() {
        let mut t = Tracker::default();
        t.see(&db(Kind::Read, PENDING_BYTE + 2, 510));
        assert_eq!(t.see(&db(Kind::Unlock, 0, 0)), None);
        assert_eq!(t.released, 0);
        assert!(t.quiet());
    }

    #[test]
    fn a_wal_commit_releases_the_shm_write_lock_and_the_databases_shared_lock_blocks_nobody() {
        let mut t = Tracker::default();
        t.see(&db(Kind::Read, PENDING_BYTE + 2, 510));
        assert_eq!(t.see(&shm(Kind::Read, 123, 1)), None, "a read mark");
        assert_eq!(t.see(&shm(Kind::Write, WAL_WRITE_BYTE, 1)), Some(Event::TookWrite));
        assert!(!t.quiet());
        assert_eq!(t.see(&shm(Kind::Unlock, WAL_WRITE_BYTE, 1)), Some(Event::ReleasedWrite));
        assert!(t.quiet(), "the database's SHARED lock stays in WAL, and blocks no writer");
        assert_eq!(t.see(&shm(Kind::Unlock, 123, 1)), None);
    }

    #[test]
    fn a_lock_call_says_what_it_asks() {
        assert_eq!(db(Kind::Unlock, PENDING_BYTE, 2).call(), "fcntl database unlock at 1073741824 length 2");
        assert_eq!(db(Kind::Unlock, 0, 0).call(), "fcntl database unlock at 0 to the end");
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn only_fcntls_that_set_a_lock_are_lock_calls() {
        let with = |cmd: i32| [3, cmd as u64, 0, 0, 0, 0];
        assert!(is_lock_call(libc::SYS_fcntl, &with(libc::F_SETLK)));
        assert!(is_lock_call(libc::SYS_fcntl, &with(libc::F_OFD_SETLKW)));
        assert!(!is_lock_call(libc::SYS_fcntl, &with(libc::F_GETFD)));
        assert!(!is_lock_call(libc::SYS_fcntl, &with(libc::F_GETLK)));
        assert!(!is_lock_call(libc::SYS_write, &with(libc::F_SETLK)));
    }
}
