//! The drive loop of syscall kill points: a traced child resumed at every
//! trapped call until its goal (the Nth point, a census's count, its own
//! end, an injection, or a point its caller asks for), counting the calls
//! that are kill points.
//!
//! Crash model: at the point sought the child is left stopped at the
//! call's entry, before it runs, for the caller to `SIGKILL` its group; an
//! injecting goal changes that call instead ([`Injected`]) and the child
//! runs on. Every drive counts points the same way, so a point's number is
//! the same in a census, a sweep, a recording and a held schedule.
//!
//! Clause: none of its own; the cells judge the states these points leave.

use crate::harness::{TraceError, TraceEvent, Traced};
use crate::kill::Ordinal;

use super::files::{FileKind, Targets};
use super::point::{Point, classify, created};

/// What the tracer is after.
#[derive(Clone, Copy, Debug)]
pub enum Goal {
    /// Kill at the Nth counted point.
    KillAt(u64),
    /// Count the points until `acks` acks were written, and one more.
    Census { acks: u64 },
    /// Count every point until the child ends on its own.
    ToEnd,
    /// Change the Nth counted call as [`Injected`] says (make it fail
    /// without running, [`Traced::fail`]), and count on until the child
    /// ends on its own: `Driven::Exited` with `counted` of at least N if
    /// the injection was made.
    InjectAt(u64, Injected),
    /// Kill at the first counted call its asker says ([`drive_asking`]):
    /// a point that no ordinal names, such as where a run that does not
    /// make the same calls twice reaches a recorded fire's state again.
    /// Under [`drive`] or [`drive_observed`], which ask nothing, the child
    /// runs to its end.
    Asked,
}

/// What the tracer does to a call it injects into, at its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The call does not run and returns `-errno` (`crate::harness::Traced::fail`).
    Failed(nix::errno::Errno),
    /// A single-buffer write (`write`, `pwrite64`) of two or more bytes
    /// writes only its first [`short_count`] and returns that count
    /// (`crate::harness::Traced::shorten`): the child runs on with a short
    /// write, as write(2) may return one.
    Short,
}

/// How many of a write's `len` bytes a short write keeps: the first half,
/// at least one and never all of two or more.
pub fn short_count(len: u64) -> u64 {
    len / 2
}

impl Injected {
    /// Whether the call returned an error: an operation in flight then
    /// must not be acknowledged.
    pub fn is_error(self) -> bool {
        matches!(self, Injected::Failed(_))
    }

    /// What the call returned, as a finding says it: `failed with EIO`.
    pub fn returned(self) -> String {
        match self {
            Injected::Failed(errno) => format!("failed with {errno:?}"),
            Injected::Short => {
                "was cut short to those bytes, the first half of its count, and returned that count".into()
            }
        }
    }

    /// What became of the call, for a fire's evidence note.
    pub fn note(self) -> String {
        match self {
            Injected::Failed(errno) => format!("the call never ran: it returned -{errno:?} to the child"),
            Injected::Short => "the call ran on the first half of its bytes and returned that short count".into(),
        }
    }
}

/// How a traced run ended.
#[derive(Debug)]
pub enum Driven {
    /// The child is stopped at `point`, which has not run.
    At(Point),
    /// The child ended on its own after `counted` points.
    Exited { exit: crate::harness::Exit, counted: u64 },
}

/// Drives `child` to its goal, resuming it at every trapped call that is not
/// the point sought.
pub fn drive(child: &mut Traced, targets: &Targets, goal: Goal) -> Result<Driven, TraceError> {
    drive_observed(child, targets, goal, &mut |_, _, _, _| {})
}

/// What a recording is shown of each trapped call, before the call runs:
/// the stopped process, the call's number and arguments, and its kill point
/// if it is one (numbered).
pub type Observer<'a> = dyn FnMut(u32, i64, [u64; 6], Option<&Point>) + 'a;

/// What [`drive_asking`] shows each trapped call, as [`Observer`]; its
/// answer, for a kill point, is whether to kill there.
pub type Asker<'a> = dyn FnMut(u32, i64, [u64; 6], Option<&Point>) -> bool + 'a;

/// [`drive`], showing every trapped call to `observe` first (the one the
/// child is killed at included).
pub fn drive_observed(
    child: &mut Traced,
    targets: &Targets,
    goal: Goal,
    observe: &mut Observer,
) -> Result<Driven, TraceError> {
    drive_with(child, targets, goal, &mut |pid, nr, args, point| {
        observe(pid, nr, args, point);
        false
    })
}

/// Drives `child` to the first counted call `ask` answers `true` for
/// ([`Goal::Asked`]), showing it every trapped call first; `Driven::At`
/// that call, which has not run, or the child's own end.
pub fn drive_asking(child: &mut Traced, targets: &Targets, ask: &mut Asker) -> Result<Driven, TraceError> {
    drive_with(child, targets, Goal::Asked, ask)
}

fn drive_with(child: &mut Traced, targets: &Targets, goal: Goal, observe: &mut Asker) -> Result<Driven, TraceError> {
    let mut counted = 0;
    let mut ack_writes = 0;
    let mut census_end = None;
    crate::kill::outside::traced();
    loop {
        let (nr, args) = match child.next_syscall()? {
            TraceEvent::Exited(exit) => return Ok(Driven::Exited { exit, counted }),
            TraceEvent::Syscall { nr, args } => (nr, args),
        };
        let pid = child.stopped_pid();
        if let (Some(folder), Some(path)) = (targets.dir.as_deref(), created(pid, nr, args)) {
            crate::kill::outside::keep(path, folder);
        }
        let point = classify(pid, targets, nr, args).map(|mut p| {
            counted += 1;
            p.ordinal = Ordinal(counted);
            p
        });
        let asked = observe(pid, nr, args, point.as_ref());
        if let (Some(_), Goal::InjectAt(n, injected)) = (&point, goal)
            && counted == n
        {
            match injected {
                Injected::Failed(errno) => child.fail(errno)?,
                // write and pwrite64 both take their count third.
                Injected::Short => child.shorten(short_count(args[2]))?,
            }
            continue;
        }
        if let Some(p) = point {
            let at = match goal {
                Goal::KillAt(n) => counted == n,
                Goal::Census { acks } => {
                    if p.file == Some(FileKind::Acks) && p.syscall.name().contains("write") {
                        ack_writes += 1;
                    }
                    // The ready record is the first write on the ack journal.
                    if census_end.is_none() && ack_writes > acks {
                        census_end = Some(counted);
                    }
                    census_end.is_some_and(|m| counted == m + 1)
                }
                Goal::Asked => asked,
                Goal::ToEnd | Goal::InjectAt(..) => false,
            };
            if at {
                return Ok(Driven::At(p));
            }
        }
        child.resume()?;
    }
}

/// Where [`drive_until`] left the child.
#[derive(Debug)]
pub enum Halted {
    /// Stopped at the entry of a trapped call `ask` chose (a kill point or
    /// not: a lock call), which has not run; `counted` points passed, that
    /// call included if it is one.
    At {
        counted: u64,
    },
    Exited {
        exit: crate::harness::Exit,
        counted: u64,
    },
}

/// Drives `child` to the first trapped call `ask` answers `true` for,
/// whether or not it is a kill point (a controlled schedule holds a process
/// at a lock call, or just after one), counting kill points as every drive
/// does: a lock call is never one, so their numbers stay a sweep's.
pub fn drive_until(child: &mut Traced, targets: &Targets, ask: &mut Asker) -> Result<Halted, TraceError> {
    let mut counted = 0;
    crate::kill::outside::traced();
    loop {
        let (nr, args) = match child.next_syscall()? {
            TraceEvent::Exited(exit) => return Ok(Halted::Exited { exit, counted }),
            TraceEvent::Syscall { nr, args } => (nr, args),
        };
        let pid = child.stopped_pid();
        if let (Some(folder), Some(path)) = (targets.dir.as_deref(), created(pid, nr, args)) {
            crate::kill::outside::keep(path, folder);
        }
        let point = classify(pid, targets, nr, args).map(|mut p| {
            counted += 1;
            p.ordinal = Ordinal(counted);
            p
        });
        if ask(pid, nr, args, point.as_ref()) {
            return Ok(Halted::At { counted });
        }
        child.resume()?;
    }
}
