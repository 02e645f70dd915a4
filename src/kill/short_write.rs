//! `--kill short-write`'s injection: at each single-buffer write of the
//! store's files, one run in which that write writes only the first half
//! of its bytes and returns that short count.
//!
//! Crash model: none; nothing is killed and nothing fails. write(2) may
//! return fewer bytes than it was asked for, and a caller must write the
//! rest: SQLite does (os_unix.c, `unixWrite`, loops over `seekAndWrite`
//! while it wrote fewer than it asked and more than none), so a store that
//! lets SQLite do its writes is immune; a store that writes one of its
//! files itself with one `write` and ignores the count leaves that file
//! short. The clause (the store stays whole and keeps every ack it gave) is
//! the injecting sweep's, `crate::pipeline::workload::fault` (clause (b)); no call
//! fails, so no ack is wrong for its operation's sake (clause (a)) and no
//! sync loses writes (clause (c)).

use super::fault::STORE_FILES;
use super::inject::{Injected, Injection};
use super::syscall::{Call, Point};

/// The injection of `--kill short-write`.
pub struct ShortWrite;

/// Its one value, which the kill-mode table names.
pub static SHORT_WRITE: ShortWrite = ShortWrite;

impl Injection for ShortWrite {
    fn at(&self, p: &Point) -> Option<Injected> {
        let store = p.file.is_some_and(|f| STORE_FILES.contains(&f));
        let single = matches!(p.syscall, Call::Sys("write" | "pwrite64"));
        (store && single && p.len.is_some_and(|l| l >= 2)).then_some(Injected::Short)
    }

    fn changes(&self) -> &'static str {
        "cuts short only single-buffer writes (write, pwrite64) of two bytes or more to the store's files"
    }

    fn summary(&self, writes: usize, _syncs: usize, failed_ends: usize, _power_states: usize) -> String {
        format!(
            "cut {writes} writes of the store's files short (each wrote the first half of its bytes and returned \
             that count), one run each; after it the child ended with an error in {failed_ends} of them"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::Ordinal;
    use crate::kill::syscall::FileKind;

    fn point(syscall: &'static str, file: FileKind, len: Option<u64>) -> Point {
        Point { ordinal: Ordinal(1), syscall: Call::Sys(syscall), file: Some(file), offset: None, len }
    }

    #[test]
    fn only_single_buffer_writes_of_the_stores_files_are_cut_short() {
        let short = |p| SHORT_WRITE.at(&p);
        assert_eq!(short(point("pwrite64", FileKind::Database, Some(4096))), Some(Injected::Short));
        assert_eq!(short(point("write", FileKind::Wal, Some(32))), Some(Injected::Short));
        assert_eq!(short(point("write", FileKind::Journal, Some(1))), None, "one byte cannot be cut");
        assert_eq!(short(point("write", FileKind::Acks, Some(40))), None, "the acks stand for the world");
        assert_eq!(short(point("writev", FileKind::Database, None)), None);
        assert_eq!(short(point("fsync", FileKind::Database, None)), None);
    }
}
