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

use std::ops::RangeInclusive;

use crate::kill::Ordinal;
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
    /// (`Goal::InjectAt` with `Injected::Failed`): `effect` is what it was about to do, `errno` what
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
            p.ordinal = Ordinal(self.points.len() as u64 + 1);
            self.at.push(self.events.len());
            self.points.push(p);
            self.points.len() as u64
        });
        self.events.push(Event { point: number, effect });
        self.ran = self.events.len();
    }

    /// Puts `effects` in as calls no kill point counts, before event
    /// `index` (what other processes did while the recorded one was
    /// stopped there): the states of every later point hold them.
    pub fn insert_uncounted(&mut self, index: usize, effects: Vec<Effect>) {
        let (index, n) = (index.min(self.events.len()), effects.len());
        let events = effects.into_iter().map(|effect| Event { point: None, effect });
        self.events.splice(index..index, events);
        self.at.iter_mut().filter(|a| **a >= index).for_each(|a| *a += n);
        if self.ran >= index {
            self.ran += n;
        }
    }

    /// The child was killed at the entry of the last logged call: it never ran.
    pub fn killed_at_last(&mut self) {
        self.ran = self.events.len().saturating_sub(1);
    }

    /// Kill point `n`: a counted call, or (one past the last) the end of a
    /// run that ended on its own.
    pub fn point(&self, n: u64) -> Point {
        self.points.get(n as usize - 1).cloned().unwrap_or_else(|| Point::end(Ordinal(n)))
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

    /// Where the run crossed an automatic checkpoint and the WAL's restart:
    /// the kill point of the WAL header written again after writes to the
    /// database (a checkpoint copies WAL frames into the database; in WAL
    /// mode nothing else writes it), once a frame followed it (later frames
    /// written from the WAL's beginning again). `None` if it did not.
    pub fn wal_restart(&self) -> Option<u64> {
        let (mut header, mut checkpointed, mut restart) = (false, false, None);
        for e in self.ran() {
            match &e.effect {
                Effect::Write { file: FileKind::Wal, at: At::Offset(0), .. } => {
                    if header && checkpointed {
                        restart = restart.or(e.point);
                    }
                    header = true;
                }
                Effect::Write { file: FileKind::Wal, .. } if restart.is_some() => return restart,
                Effect::Write { file: FileKind::Database, .. } if header => checkpointed = true,
                _ => {}
            }
        }
        None
    }

    /// The points a sweep of a workload grown to cross a checkpoint visits,
    /// of `total`: the first `ops` operations (the short sweep's, every
    /// shape of a WAL append); if the run crossed a restart
    /// ([`Log::wal_restart`]), from the commit frame of the transaction
    /// that checkpointed before it to the ack of the operation that
    /// restarted the WAL (the checkpoint, the restart, and a commit on the
    /// restarted WAL); and from the last ack to the child's own end (its
    /// close). The operations between append frames to the WAL as the
    /// first ones did. Sorted, disjoint.
    pub fn wal_windows(&self, ops: u64, total: u64) -> Vec<RangeInclusive<u64>> {
        let acks = self.ack_lines();
        // The ready record is the journal's first line; operation k's ack its (k+1)th.
        let acked = |lines: u64| acks.iter().find(|(_, n)| *n >= lines).map(|(p, _)| *p);
        let last = acks.last().map_or(1, |(p, _)| *p);
        let mut windows = vec![1..=acked(ops + 1).unwrap_or(total), last..=total];
        if let Some(restart) = self.wal_restart() {
            let at_restart = acks.iter().rev().find(|(p, _)| *p < restart).map_or(0, |(_, n)| *n);
            windows.push(self.checkpoint_before(restart)..=acked(at_restart + 1).unwrap_or(total));
        }
        merged(windows.into_iter().map(|w| *w.start()..=(*w.end()).min(total)))
    }

    /// The commit frame of the transaction whose checkpoint let the WAL
    /// restart at `restart`: the last WAL write before the last database
    /// write before it (in WAL mode only a checkpoint writes the database).
    fn checkpoint_before(&self, restart: u64) -> u64 {
        let last_write = |file: FileKind, before: u64| {
            self.ran()
                .iter()
                .filter(|e| matches!(&e.effect, Effect::Write { file: f, .. } if *f == file))
                .filter_map(|e| e.point.filter(|&p| p < before))
                .next_back()
        };
        let checkpoint = last_write(FileKind::Database, restart).unwrap_or(restart);
        last_write(FileKind::Wal, checkpoint).unwrap_or(checkpoint)
    }

    /// How many WAL frames each acknowledged operation wrote, on average:
    /// the WAL's bytes past its header over the frame size its header
    /// names (its page size and a frame's 24-byte header, walformat.html),
    /// per ack line after the ready record. `None` without a WAL header or
    /// an ack.
    pub fn wal_pages_per_op(&self) -> Option<f64> {
        let (mut page, mut bytes) = (None, 0u64);
        for e in self.ran() {
            if let Effect::Write { file: FileKind::Wal, at: At::Offset(at), data } = &e.effect {
                match (at, data.get(8..12)) {
                    (0, Some(b)) => page = Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                    _ => bytes += data.len() as u64,
                }
            }
        }
        let ops = self.ack_lines().last()?.1.checked_sub(1).filter(|&n| n > 0)?;
        let frame = u64::from(page.filter(|&p| p >= 512)?) + 24;
        Some(bytes as f64 / frame as f64 / ops as f64).filter(|&r| r > 0.0)
    }

    /// Each write to the ack journal that completed a line: its point and
    /// how many lines the journal then held.
    fn ack_lines(&self) -> Vec<(u64, u64)> {
        let mut lines = 0;
        let mut out = Vec::new();
        for e in self.ran() {
            if let (Effect::Write { file: FileKind::Acks, data, .. }, Some(p)) = (&e.effect, e.point) {
                let n = data.iter().filter(|&&b| b == b'\n').count() as u64;
                if n > 0 {
                    lines += n;
                    out.push((p, lines));
                }
            }
        }
        out
    }
}

/// `ranges` sorted and merged where they touch or overlap.
fn merged(ranges: impl Iterator<Item = RangeInclusive<u64>>) -> Vec<RangeInclusive<u64>> {
    let mut all: Vec<RangeInclusive<u64>> = ranges.filter(|r| !r.is_empty()).collect();
    all.sort_by_key(|r| *r.start());
    let mut out: Vec<RangeInclusive<u64>> = Vec::new();
    for r in all {
        match out.last_mut() {
            Some(l) if *r.start() <= l.end() + 1 => *l = *l.start()..=(*l.end()).max(*r.end()),
            _ => out.push(r),
        }
    }
    out
}

/// For each event, the kill point whose crash instants include the moment
/// just before it: the first counted call at or after it.
pub(crate) fn next_points(events: &[Event]) -> Vec<Option<u64>> {
    let mut next = vec![None; events.len()];
    let mut upcoming = None;
    for (i, e) in events.iter().enumerate().rev() {
        upcoming = e.point.or(upcoming);
        next[i] = upcoming;
    }
    next
}

/// Where an event is, for a reader: its point, or the point it precedes.
pub(crate) fn place(point: Option<u64>, last: u64, events: &[Event], i: usize) -> String {
    match point {
        Some(n) => format!("#{n}"),
        None => match events[i..].iter().find_map(|e| e.point) {
            Some(next) => format!("before #{next}"),
            None => format!("after #{last}"),
        },
    }
}

/// Events as the crash models' unit tests write logs by hand.
#[cfg(test)]
pub(crate) mod build {
    use super::{At, Effect, Event};
    use crate::kill::syscall::FileKind;

    pub fn ev(point: Option<u64>, effect: Effect) -> Event {
        Event { point, effect }
    }

    /// `file` opened (created if missing), at no kill point.
    pub fn open(file: FileKind) -> Event {
        ev(None, Effect::Open { file, create: true, truncate: false })
    }

    /// Kill point `point`: `data` written to `file` at `offset`.
    pub fn put(point: u64, file: FileKind, offset: u64, data: &[u8]) -> Event {
        ev(Some(point), Effect::Write { file, at: At::Offset(offset), data: data.to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls put in before an event shift every later kill point's event
    /// (their numbers stay), so the states after it hold them and the ones
    /// before do not.
    #[test]
    fn uncounted_calls_put_in_reach_only_the_later_points() {
        use crate::kill::syscall::{FileKind, Point};
        let mut log = Log::default();
        let write = |data: &[u8]| Effect::Write { file: FileKind::Database, at: At::Offset(0), data: data.to_vec() };
        let point = |n| Point::end(Ordinal(n));
        log.push(Some(point(1)), write(b"a"));
        log.push(Some(point(2)), write(b"b"));
        log.insert_uncounted(1, vec![write(b"other"), Effect::SyncDir]);
        assert_eq!((log.total(), log.events.len(), log.ran), (2, 4, 4));
        assert_eq!(log.before(1).len(), 0);
        assert_eq!(log.before(2).len(), 3, "point 2's state holds the other process's write");
        assert_eq!(log.events[log.at[1]].effect, write(b"b"));
    }
    use crate::kill::syscall::Call;

    fn point() -> Point {
        Point {
            ordinal: Ordinal(0),
            syscall: Call::Sys("pwrite64"),
            file: Some(FileKind::Database),
            offset: Some(0),
            len: Some(1),
        }
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
        assert_eq!(log.points[1].ordinal, Ordinal(2));
        assert_eq!(log.before(1).len(), 1, "point 1 leaves only the create");
        assert_eq!(log.before(2).len(), 3, "point 2 leaves the create, write 1 and the folder's fsync");
        assert_eq!(log.ran().len(), 3, "the call the child was killed at never ran");
    }

    #[test]
    fn a_restart_is_a_wal_header_written_again_after_a_checkpoint_and_a_frame_after_it() {
        let wal = |at: u64, n: u8| Effect::Write { file: FileKind::Wal, at: At::Offset(at), data: vec![n] };
        let db = Effect::Write { file: FileKind::Database, at: At::Offset(0), data: vec![0] };
        let mut log = Log::default();
        for e in [wal(0, 1), wal(32, 2), db.clone(), wal(32, 3)] {
            log.push(Some(point()), e);
        }
        assert_eq!(log.wal_restart(), None, "frames after a checkpoint, but no new header: no restart");
        log.push(Some(point()), wal(0, 4));
        assert_eq!(log.wal_restart(), None, "a restart's header alone: no frame followed it yet");
        log.push(Some(point()), wal(32, 5));
        assert_eq!(log.wal_restart(), Some(5), "the restart is the header's point");
    }

    #[test]
    fn a_grown_sweep_visits_the_first_operations_the_checkpoint_and_restart_and_the_close() {
        let wal = |at: u64| Effect::Write { file: FileKind::Wal, at: At::Offset(at), data: vec![1] };
        let db = Effect::Write { file: FileKind::Database, at: At::Offset(4096), data: vec![2] };
        let ack = Effect::Write { file: FileKind::Acks, at: At::End, data: b"{}\n".to_vec() };
        let mut log = Log::default();
        // 1 ready; op k (k = 1..=6): a frame, then its ack; op 4's commit checkpoints.
        let mut effects = vec![ack.clone(), wal(0)];
        for k in 1..=6 {
            if k == 5 {
                effects.push(wal(0));
            }
            effects.push(wal(32 * k));
            if k == 4 {
                effects.push(db.clone());
            }
            effects.push(ack.clone());
        }
        effects.push(db.clone());
        for e in effects {
            log.push(Some(point()), e);
        }
        // Points: 1 ready, 2 header, 3-4 op 1, 5-6 op 2, 7-8 op 3, 9-11 op 4 (10 the checkpoint),
        // 12-14 op 5 (12 the restart's header), 15-16 op 6, 17 the close's checkpoint, 18 the end.
        assert_eq!(log.wal_restart(), Some(12));
        // Ops 1-2; op 4's commit frame (before the checkpoint) to op 5's ack (the restart's
        // operation); the last ack to the end: the close.
        assert_eq!(log.wal_windows(2, 18), vec![1..=6, 9..=14, 16..=18]);
        assert_eq!(log.wal_windows(1, 18), vec![1..=4, 9..=14, 16..=18]);
        // Without a restart (the WAL never checkpointed): the first operations and the close.
        let mut short = Log::default();
        for e in log.ran().iter().take(11) {
            short.push(e.point.map(|_| point()), e.effect.clone());
        }
        assert_eq!(short.wal_windows(2, 12), vec![1..=6, 11..=12]);
        assert_eq!(log.wal_pages_per_op(), None, "no page size: the header here is one byte");
    }

    #[test]
    fn the_wal_rate_is_its_frames_over_the_acked_operations() {
        let mut header = vec![0u8; 32];
        header[8..12].copy_from_slice(&4096u32.to_be_bytes());
        let ack = Effect::Write { file: FileKind::Acks, at: At::End, data: b"{}\n".to_vec() };
        let frame = |k: u64| Effect::Write { file: FileKind::Wal, at: At::Offset(32 + k * 4120), data: vec![0; 4120] };
        let mut log = Log::default();
        let header = Effect::Write { file: FileKind::Wal, at: At::Offset(0), data: header };
        for e in [ack.clone(), header, frame(0), frame(1), ack.clone(), frame(2), frame(3), ack] {
            log.push(Some(point()), e);
        }
        assert_eq!(log.wal_pages_per_op(), Some(2.0));
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
