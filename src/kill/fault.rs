//! `--kill fault`'s injection: at each write or sync of the store's files,
//! one run in which that call fails without running (issue 24).
//!
//! Crash model: no crash but a fault. A sync fails as a failing disk makes
//! it (`EIO`), a write as a full disk does (`ENOSPC`); other calls
//! (truncations, unlinks, renames) get none, and the ack journal and the
//! transport stand for the world, not the disk, and are never failed. The
//! clause (an operation whose call failed is never acknowledged; the store
//! stays whole; a power loss after a failed sync keeps every ack) is
//! judged by the injecting sweep, `crate::pipeline::workload::fault`.

use nix::errno::Errno;

use super::inject::{Injected, Injection};
use super::syscall::{FileKind, Point};

/// The injection of `--kill fault`.
pub struct Fault;

/// Its one value, which the kill-mode table names.
pub static FAULT: Fault = Fault;

/// The errno a call by this name gets under fault injection, if any.
pub fn fault_for(syscall: &str) -> Option<Errno> {
    match syscall {
        "fsync" | "fdatasync" => Some(Errno::EIO),
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => Some(Errno::ENOSPC),
        _ => None,
    }
}

/// The files whose calls fault injection fails: the store's own.
pub const STORE_FILES: [FileKind; 4] = [FileKind::Database, FileKind::Journal, FileKind::Wal, FileKind::Shm];

/// The errno kill point `p`'s call is made to fail with, if it gets one.
pub fn fault_of(p: &Point) -> Option<Errno> {
    p.file.filter(|f| STORE_FILES.contains(f)).and(fault_for(p.syscall.name()))
}

impl Injection for Fault {
    fn at(&self, p: &Point) -> Option<Injected> {
        fault_of(p).map(Injected::Failed)
    }

    fn changes(&self) -> &'static str {
        "fails only writes (ENOSPC) and syncs (EIO) of the store's files"
    }

    fn summary(&self, writes: usize, syncs: usize, failed_ends: usize, power_states: usize) -> String {
        format!(
            "faulted {writes} writes (ENOSPC) and {syncs} syncs (EIO) of the store's files, one run each; after the \
             fault the child ended with an error in {failed_ends} of them; {power_states} distinct power-loss states \
             after a fault were recovered and judged"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::Ordinal;
    use crate::kill::syscall::Call;

    fn point(syscall: &'static str, file: FileKind) -> Point {
        Point { ordinal: Ordinal(1), syscall: Call::Sys(syscall), file: Some(file), offset: None, len: None }
    }

    #[test]
    fn only_writes_and_syncs_of_the_stores_files_are_made_to_fail() {
        assert_eq!(fault_of(&point("fdatasync", FileKind::Wal)), Some(Errno::EIO));
        assert_eq!(fault_of(&point("pwrite64", FileKind::Database)), Some(Errno::ENOSPC));
        assert_eq!(fault_of(&point("write", FileKind::Acks)), None, "the acks stand for the world");
        assert_eq!(fault_of(&point("write", FileKind::Transport)), None, "so does the transport");
        assert_eq!(fault_of(&point("unlink", FileKind::Journal)), None);
        assert_eq!(fault_of(&Point::end(Ordinal(9))), None);
        assert_eq!(fault_for("writev"), Some(Errno::ENOSPC));
    }
}
