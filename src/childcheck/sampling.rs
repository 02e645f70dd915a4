//! `child-check`'s one clause that needs a moment in time: an ack is written
//! only after its operation's effect is visible. It is sampled: each time a
//! new ack appears during a long `append`, the child's group is stopped
//! (`SIGSTOP`), a fresh `dump` reads the store, and the group resumes.
//!
//! Crash model: none; nothing is killed. A stop that lands inside a
//! rollback-mode commit is let go and retried at the next ack, since no
//! reader can get in until the commit is done.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use crashcells_protocol::{APPEND_SESSION, Op};

use super::checker::{Checker, MAX_INCONCLUSIVE, SAMPLE_DUMP, SAMPLES};
use super::clauses::parse_dump;
use crate::harness::{Exit, POLL, Running, run_to_end};
use crate::journal::{self, Tail};
use crate::probe::Scratch;

impl Checker<'_> {
    /// Samples acks of a long `append` run while the group is stopped.
    pub(super) fn ack_after_effect(&mut self) {
        let Some(s) = self.scratch("sampling", None) else { return };
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Append).acks(&acks).stop_after(100_000);
        let result = match s.spawn(self.child, &args, "append", self.deadline, &self.interrupt) {
            Ok(mut running) => self.sample(&s, &mut running, &acks),
            Err(e) => Err(format!("could not start append: {e}")),
        };
        self.note("ack-after-effect", result);
    }

    fn sample(&self, s: &Scratch, running: &mut Running, acks: &Path) -> Result<String, String> {
        let (mut tail, mut seen, mut conclusive, mut inconclusive) = (Tail::default(), 0, 0, 0);
        let end = Instant::now() + self.deadline;
        while conclusive < SAMPLES && inconclusive < MAX_INCONCLUSIVE && Instant::now() < end {
            let lines = tail.poll(acks).map_err(|e| format!("ack journal: {e}"))?;
            if lines.saturating_sub(1) <= seen {
                if let Some(exit) = running.try_exit() {
                    return Err(format!("append ended ({exit}) after {seen} acks: {}", running.stderr_tail()));
                }
                std::thread::sleep(POLL);
                continue;
            }
            running.pause_group(true);
            if mid_commit(&s.path("store.db")) {
                // Stopped inside a rollback-mode commit, where no reader can
                // get in: let it finish and stop it at the next ack instead.
                running.pause_group(false);
                std::thread::sleep(POLL);
                continue;
            }
            let probe = self.probe(s, acks, conclusive + inconclusive);
            running.pause_group(false);
            match probe? {
                Some(acked) => (seen, conclusive) = (acked, conclusive + 1),
                None => (seen, inconclusive) = (lines.saturating_sub(1), inconclusive + 1),
            }
        }
        if conclusive == 0 {
            return Err(format!("no sample could read the paused store ({inconclusive} inconclusive)"));
        }
        Ok(format!(
            "{conclusive} acks sampled with the child stopped, each effect visible ({inconclusive} inconclusive)"
        ))
    }

    /// With the group stopped: the acks on disk against a fresh dump. `None`
    /// when the dump could not read the paused store in time.
    fn probe(&self, s: &Scratch, acks: &Path, n: u32) -> Result<Option<u64>, String> {
        let bytes = std::fs::read(acks).unwrap_or_default();
        let journal = journal::parse(&bytes).map_err(|e| e.to_string())?;
        let acked = journal.acks.len() as u64;
        let cmd = self.child.command(&s.op(Op::Dump).to_args(), &s.home);
        let (stdout, stderr) = (s.path(&format!("sample-{n}.json")), s.path(&format!("sample-{n}.stderr")));
        let Ok((Ok(Exit::Code(0)), _)) = run_to_end(cmd, &stdout, &stderr, SAMPLE_DUMP, &self.interrupt) else {
            return Ok(None);
        };
        let dump = parse_dump(&std::fs::read_to_string(&stdout).unwrap_or_default())?;
        let visible = dump.messages.iter().filter(|m| m.session_id == APPEND_SESSION).count();
        if (visible as u64) < acked {
            return Err(format!(
                "ack of m{} was in the journal while a fresh dump saw only {visible} appends: an ack was written before its operation's effect",
                acked - 1
            ));
        }
        Ok(Some(acked))
    }
}

/// SQLite's lock bytes in a database file (os_unix.c): PENDING at 1 GiB,
/// RESERVED after it, then the 510 bytes of the SHARED range. A writer in a
/// rollback journal mode holds a write lock on PENDING or on the SHARED range
/// only while it commits, and a reader cannot get in until it is done.
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

/// Whether some process holds SQLite's PENDING or EXCLUSIVE lock on `db`.
fn mid_commit(db: &Path) -> bool {
    let Ok(file) = File::open(db) else { return false };
    write_locked(&file, PENDING_BYTE, 1) || write_locked(&file, SHARED_FIRST, SHARED_SIZE)
}

/// Whether a POSIX record lock of another process would block a read lock
/// on `len` bytes at `start` (`F_GETLK` only asks; it takes nothing).
fn write_locked(file: &File, start: i64, len: i64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is plain old data; F_GETLK only fills it in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_RDLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    // SAFETY: a valid descriptor and a valid flock for the call's duration.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut fl) };
    r == 0 && fl.l_type != libc::F_UNLCK as libc::c_short
}
