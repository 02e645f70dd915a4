//! A fire's call trace, as its timeline shows it: the calls the store made
//! on its files (the database, its journal or WAL, the ack journal, the
//! transport, the trial's folder), in order, each with its file, offset,
//! length and whether it syncs, and the one call where the crash was put.
//!
//! Crash model, as the trace says it: a process kill (`SIGKILL` at the
//! entry of the marked call: it never ran, every call before it did), a
//! power cut (the same instant; what no sync made durable may be lost),
//! torn writes (the same, with unsynced writes torn or reordered), a failed
//! call (it returned an error instead of running; the child went on), or
//! the child's own end (every call ran). Taken from the real kill's traced
//! run ([`Trace::of_points`]) or from the recorded run a state was rebuilt
//! from ([`Trace::of_log`]).

use serde::Serialize;

use crate::crashstate::{At, Effect, Event, Log};
use crate::kill::syscall::Point;

/// One call of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Call {
    /// Its kill point's number, if it is one (a counted call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<u64>,
    /// The system call (`pwrite64`, `fsync`, ...), or what it does when
    /// only that is known (`write`, `open`).
    pub call: String,
    /// `database`, `journal`, `wal`, `acks`, `transport`, `folder`, or `-`.
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    /// An `fsync`/`fdatasync`: what it covers becomes durable.
    pub sync: bool,
    /// What else a reader needs (an append, `O_TRUNC`, the errno it was made to fail with).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Where the crash was put, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Crash {
    Kill,
    PowerCut,
    Torn,
    Failed,
    /// The child ended on its own: the state is what its last call left.
    End,
}

impl Crash {
    /// What the mark means, for the page.
    pub fn meaning(self) -> &'static str {
        match self {
            Crash::Kill => "SIGKILL at this call's entry: it never ran; every call above it did",
            Crash::PowerCut => {
                "power lost at this call's entry: the calls above it ran, and what no sync above made durable may be lost"
            }
            Crash::Torn => {
                "power lost at this call's entry, with the writes no sync above made durable torn in sectors or reordered"
            }
            Crash::Failed => {
                "this call was made to fail: it returned an error instead of running, and the child went on"
            }
            Crash::End => "the child ended on its own after the last call: the state is what every call left",
        }
    }
}

/// The calls of a fire's run and where its crash was put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub calls: Vec<Call>,
    /// The index in `calls` of the call the crash was put at
    /// (`calls.len()` for the child's own end).
    pub at: usize,
    pub crash: Crash,
    /// Where the calls come from, for the page.
    pub source: &'static str,
}

impl Trace {
    /// The counted calls a traced run made up to its kill at point `kill`
    /// (the last of `points`), or to its own end when `kill` is `None`.
    pub fn of_points(points: &[Point], kill: Option<u64>) -> Trace {
        let calls: Vec<Call> = points.iter().map(call_of_point).collect();
        let (at, crash) = match kill.and_then(|n| points.iter().position(|p| p.ordinal.0 == n)) {
            Some(i) => (i, Crash::Kill),
            None => (calls.len(), Crash::End),
        };
        Trace { calls, at, crash, source: "the calls of the killed run itself, traced up to its kill point" }
    }

    /// A recorded run's calls, with the crash put at kill point `n` (one
    /// past the last: the run's own end). A failed call's run went on, so
    /// its later calls are kept; any other crash ends the trace there.
    pub fn of_log(log: &Log, n: u64, crash: Crash) -> Trace {
        let ran = log.ran();
        let at = log.at.get(n as usize - 1).copied().filter(|&i| i < ran.len());
        let (at, crash) = match at {
            Some(i) => (i, crash),
            None => (ran.len(), Crash::End),
        };
        let shown = if crash == Crash::Failed { ran } else { &ran[..(at + 1).min(ran.len())] };
        let calls = shown.iter().map(|e| call_of_event(e, log)).collect();
        Trace { calls, at, crash, source: "the recorded run's log, from which the crash state was rebuilt" }
    }
}

fn is_sync(syscall: &str) -> bool {
    matches!(syscall, "fsync" | "fdatasync")
}

fn call_of_point(p: &Point) -> Call {
    Call {
        point: Some(p.ordinal.0),
        call: p.syscall.to_string(),
        file: p.file.map_or("-", |f| f.as_str()).to_string(),
        offset: p.offset,
        len: p.len,
        sync: is_sync(p.syscall.name()),
        note: String::new(),
    }
}

/// A logged call; a counted one is named by its kill point's system call.
fn call_of_event(e: &Event, log: &Log) -> Call {
    let mut call = call_of_effect(&e.effect);
    if let Some(p) = e.point.and_then(|n| log.points.get(n as usize - 1)) {
        call.call = p.syscall.to_string();
    }
    call.point = e.point;
    call
}

fn call_of_effect(effect: &Effect) -> Call {
    let call = |name: &str, file: &str| Call {
        point: None,
        call: name.to_string(),
        file: file.to_string(),
        offset: None,
        len: None,
        sync: false,
        note: String::new(),
    };
    match effect {
        Effect::Write { file, at, data } => {
            let mut c = call("write", file.as_str());
            c.len = Some(data.len() as u64);
            match at {
                At::Offset(o) => c.offset = Some(*o),
                At::End => c.note = "append".into(),
            }
            c
        }
        Effect::Truncate { file, len } => Call { note: format!("to {len} bytes"), ..call("ftruncate", file.as_str()) },
        Effect::Open { file, create, truncate } => {
            let flags = [(*create, "O_CREAT"), (*truncate, "O_TRUNC")];
            let note = flags.iter().filter(|(on, _)| *on).map(|(_, f)| *f).collect::<Vec<_>>().join("|");
            Call { note, ..call("open", file.as_str()) }
        }
        Effect::Unlink { file } => call("unlink", file.as_str()),
        Effect::Rename { from, to } => {
            let name = |f: &Option<crate::kill::syscall::FileKind>| f.map_or("another file", |f| f.as_str());
            Call { note: format!("{} to {}", name(from), name(to)), ..call("rename", to.map_or("-", |f| f.as_str())) }
        }
        Effect::Sync { file, data_only } => {
            Call { sync: true, ..call(if *data_only { "fdatasync" } else { "fsync" }, file.as_str()) }
        }
        Effect::SyncDir => Call { sync: true, ..call("fsync", "folder") },
        Effect::Unread { syscall } => Call { note: "not read".into(), ..call(syscall, "-") },
        Effect::Failed { effect, errno } => {
            let mut c = call_of_effect(effect);
            c.note = [c.note.as_str(), &format!("made to fail with {errno:?}")]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join("; ");
            c
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::log::build::{ev, open, put};
    use crate::kill::Ordinal;
    use crate::kill::syscall::{Call, FileKind};

    fn point(ordinal: u64, syscall: &'static str, file: FileKind) -> Point {
        Point {
            ordinal: Ordinal(ordinal),
            syscall: Call::Sys(syscall),
            file: Some(file),
            offset: Some(0),
            len: Some(4096),
        }
    }

    fn log_of(events: Vec<Event>) -> Log {
        let mut log = Log::default();
        for e in events {
            let p = e.point.map(|_| point(0, "pwrite64", FileKind::Database));
            log.push(p, e.effect);
        }
        log
    }

    #[test]
    fn a_killed_run_ends_at_its_kill_point_and_one_that_ended_is_marked_at_its_end() {
        let points = [point(1, "pwrite64", FileKind::Wal), point(2, "fsync", FileKind::Wal)];
        let t = Trace::of_points(&points, Some(2));
        assert_eq!((t.at, t.crash), (1, Crash::Kill));
        assert_eq!((t.calls[1].call.as_str(), t.calls[1].sync, t.calls[0].sync), ("fsync", true, false));
        assert_eq!(Trace::of_points(&points, None).at, 2);
        assert_eq!(Trace::of_points(&points, None).crash, Crash::End);
    }

    #[test]
    fn a_recorded_crash_shows_the_calls_up_to_it_and_a_failed_call_the_run_after_it() {
        let sync = ev(Some(3), Effect::Sync { file: FileKind::Database, data_only: true });
        let events = vec![
            open(FileKind::Database),
            put(1, FileKind::Database, 0, b"ab"),
            put(2, FileKind::Database, 2, b"c"),
            sync,
        ];
        let log = log_of(events);
        let cut = Trace::of_log(&log, 2, Crash::PowerCut);
        assert_eq!((cut.calls.len(), cut.at, cut.crash), (3, 2, Crash::PowerCut));
        assert_eq!(cut.calls[0].note, "O_CREAT");
        assert_eq!((cut.calls[1].point, cut.calls[1].offset, cut.calls[1].len), (Some(1), Some(0), Some(2)));
        assert_eq!(cut.calls[1].call, "pwrite64", "a counted call is named by its system call");
        let failed = Trace::of_log(&log, 2, Crash::Failed);
        assert_eq!(failed.calls.len(), 4, "the run went on after the failed call");
        let end = Trace::of_log(&log, 4, Crash::Kill);
        assert_eq!((end.at, end.crash), (4, Crash::End));
    }

    #[test]
    fn a_failed_call_says_its_errno_and_a_sync_of_the_folder_is_a_sync() {
        let failed = Effect::Failed {
            effect: Box::new(Effect::Write { file: FileKind::Acks, at: At::End, data: b"x\n".to_vec() }),
            errno: nix::errno::Errno::EIO,
        };
        let c = call_of_effect(&failed);
        assert_eq!((c.file.as_str(), c.note.as_str(), c.len), ("acks", "append; made to fail with EIO", Some(2)));
        let dir = call_of_effect(&Effect::SyncDir);
        assert_eq!((dir.file.as_str(), dir.sync), ("folder", true));
    }
}
