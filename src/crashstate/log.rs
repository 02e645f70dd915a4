//! The log of a recorded run: every call of the child that changed (or made
//! durable) one of the trial's files, in the order the tracer saw them, with
//! the data it wrote.
//!
//! Crash model: the tracer stops the child at the entry of each trapped call
//! and logs what the call is about to do; the calls run one at a time, in
//! that order (a traced child's calls on one file do not overlap), each
//! whole (a short write is not modelled: the self-check after the run sees
//! it). Counted calls are the kill points of [`crate::kill::syscall`], with
//! the same numbering; the other logged calls (a create, a directory
//! `fsync`) are never kill points, so adding them changed no point's number.
//! A call that fault injection made fail ([`Effect::Failed`]) is logged as
//! failed: it never ran, and no model applies it as if it had.

use crate::kill::syscall::{FileKind, Point};

/// Where a write lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Offset(u64),
    /// At the end of the file (`O_APPEND`).
    End,
}

/// What one logged call does to the trial's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Write {
        file: FileKind,
        at: At,
        data: Vec<u8>,
    },
    Truncate {
        file: FileKind,
        len: u64,
    },
    /// `open` with `O_CREAT` (creates the file if it is missing) or
    /// `O_TRUNC` (empties it).
    Open {
        file: FileKind,
        create: bool,
        truncate: bool,
    },
    Unlink {
        file: FileKind,
    },
    /// A rename whose source or target is one of the trial's files; `None`
    /// is a file the model does not follow.
    Rename {
        from: Option<FileKind>,
        to: Option<FileKind>,
    },
    /// `fsync` (`data_only`: `fdatasync`) of a file.
    Sync {
        file: FileKind,
        data_only: bool,
    },
    /// `fsync` of the trial's folder: its names become durable.
    SyncDir,
    /// A counted call whose effect the model could not read (the child's
    /// memory was not readable): the model goes on without it, and the
    /// self-check after the run says whether that mattered.
    Unread {
        syscall: &'static str,
    },
    /// A counted call that fault injection made fail without running
    /// (`Goal::FailAt`): `effect` is what it was about to do, `errno` what
    /// it returned instead. The files are as the calls before it left them;
    /// for a failed sync the power model says what became of the writes it
    /// was to make durable ([`super::power::FailedSync`]).
    Failed {
        effect: Box<Effect>,
        errno: nix::errno::Errno,
    },
}

impl Effect {
    /// One line for a reader: what the call does, where.
    pub fn describe(&self) -> String {
        match self {
            Effect::Write { file, at: At::Offset(o), data } => {
                format!("write of {} to the {} at offset {o}", bytes(data.len()), file.as_str())
            }
            Effect::Write { file, at: At::End, data } => {
                format!("append of {} to the {}", bytes(data.len()), file.as_str())
            }
            Effect::Truncate { file, len } => format!("truncation of the {} to {len} bytes", file.as_str()),
            Effect::Open { file, truncate: true, .. } => format!("open of the {} with O_TRUNC", file.as_str()),
            Effect::Open { file, .. } => format!("creation of the {}", file.as_str()),
            Effect::Unlink { file } => format!("unlink of the {}", file.as_str()),
            Effect::Rename { from, to } => {
                let name = |f: &Option<FileKind>| f.map_or("another file", |f| f.as_str());
                format!("rename of the {} to the {}", name(from), name(to))
            }
            Effect::Sync { file, data_only: false } => format!("fsync of the {}", file.as_str()),
            Effect::Sync { file, data_only: true } => format!("fdatasync of the {}", file.as_str()),
            Effect::SyncDir => "fsync of the trial's folder".into(),
            Effect::Unread { syscall } => format!("{syscall} (not read)"),
            Effect::Failed { effect, errno } => format!("{} (made to fail with {errno:?})", effect.describe()),
        }
    }
}

/// A length for a reader: "1 byte", "4096 bytes".
fn bytes(n: usize) -> String {
    if n == 1 { "1 byte".into() } else { format!("{n} bytes") }
}

/// One logged call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its kill point's number, if it is a counted call.
    pub point: Option<u64>,
    pub effect: Effect,
}

/// A recorded run.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub events: Vec<Event>,
    /// The counted calls in order: `points[n - 1]` is kill point n.
    pub points: Vec<Point>,
    /// `at[n - 1]`: the index in `events` of kill point n's call.
    pub at: Vec<usize>,
    /// How many events ran: all of them, unless the child was killed at the
    /// entry of the last one.
    pub ran: usize,
}

impl Log {
    /// Logs a call; a counted one (`point`) gets the next number.
    pub fn push(&mut self, point: Option<Point>, effect: Effect) {
        let number = point.map(|mut p| {
            p.ordinal = self.points.len() as u64 + 1;
            self.at.push(self.events.len());
            self.points.push(p);
            self.points.len() as u64
        });
        self.events.push(Event { point: number, effect });
        self.ran = self.events.len();
    }

    /// The child was killed at the entry of the last logged call: it never ran.
    pub fn killed_at_last(&mut self) {
        self.ran = self.events.len().saturating_sub(1);
    }

    /// Kill point `n`: a counted call, or (one past the last) the end of a
    /// run that ended on its own.
    pub fn point(&self, n: u64) -> Point {
        self.points.get(n as usize - 1).cloned().unwrap_or_else(|| Point::end(n))
    }

    /// How many kill points the run has.
    pub fn total(&self) -> u64 {
        self.points.len() as u64
    }

    /// The events that ran before kill point `n` (what a kill there leaves).
    pub fn before(&self, n: u64) -> &[Event] {
        let end = self.at.get(n as usize - 1).copied().unwrap_or(self.ran);
        &self.events[..end.min(self.ran)]
    }

    /// The events that ran.
    pub fn ran(&self) -> &[Event] {
        &self.events[..self.ran]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> Point {
        Point { ordinal: 0, syscall: "pwrite64", file: Some(FileKind::Database), offset: Some(0), len: Some(1) }
    }

    fn write(b: u8) -> Effect {
        Effect::Write { file: FileKind::Database, at: At::Offset(0), data: vec![b] }
    }

    #[test]
    fn counted_calls_are_numbered_and_others_are_kept_between_them() {
        let mut log = Log::default();
        log.push(None, Effect::Open { file: FileKind::Database, create: true, truncate: false });
        log.push(Some(point()), write(1));
        log.push(None, Effect::SyncDir);
        log.push(Some(point()), write(2));
        log.killed_at_last();
        assert_eq!(log.total(), 2);
        assert_eq!(log.points[1].ordinal, 2);
        assert_eq!(log.before(1).len(), 1, "point 1 leaves only the create");
        assert_eq!(log.before(2).len(), 3, "point 2 leaves the create, write 1 and the folder's fsync");
        assert_eq!(log.ran().len(), 3, "the call the child was killed at never ran");
    }

    #[test]
    fn every_effect_says_what_it_does() {
        assert_eq!(write(1).describe(), "write of 1 byte to the database at offset 0");
        assert_eq!(Effect::Unlink { file: FileKind::Journal }.describe(), "unlink of the journal");
        assert_eq!(Effect::SyncDir.describe(), "fsync of the trial's folder");
        let failed = Effect::Failed {
            effect: Box::new(Effect::Sync { file: FileKind::Wal, data_only: false }),
            errno: nix::errno::Errno::EIO,
        };
        assert_eq!(failed.describe(), "fsync of the wal (made to fail with EIO)");
    }
}
