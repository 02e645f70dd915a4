//! `child-check`'s `syscall-determinism`: the same operation recorded
//! twice, traced as a recorded syscall sweep records it (docs/DESIGN.md,
//! "Recorded crash states"), must make the same counted calls in the same
//! order (kind, file, offset, length: docs/PROTOCOL.md §1, "The same bytes
//! twice"). A store that does not (writes from a thread pool, a random
//! number of writes, a time-driven checkpoint) still conforms: the check
//! warns, names the first call that differs, and says what a run does
//! about it, so that an adapter's author hears it before a run's error.
//!
//! Crash model: none; nothing is killed. Each recording runs `append
//! --stop-after 3` exec'd to its end in a folder of its own.

use crashcells_protocol::{Op, OpArgs};

use super::checker::Checker;
use crate::harness::{Exit, Launch, TraceError};
use crate::kill::syscall::{Driven, FileKind, Goal, Point, Targets, trap_set, unsupported_arch};

/// Appends of each recording.
const APPENDS: u64 = 3;
/// The check's name.
pub(super) const CHECK: &str = "syscall-determinism";

/// What a run does with a store whose recordings differ.
const CONSEQUENCE: &str = "a run's recorded sweep rebuilds crash states from one recording and confirms a \
                           state that did not pass by a real kill at its point, which in this store may land \
                           elsewhere; it then runs the workload again (up to 3 times), killed where the store's \
                           files first hold that state again or at the same call once the ack journal holds the \
                           same acks, and says in the result how the fire was confirmed; a fire none of those \
                           kills repeats is reported as an `error` naming the non-determinism, never as a fire \
                           (docs/PROTOCOL.md §1, \"The same bytes twice\"); make the store's writes \
                           synchronous, or run with `--replay off` to re-run the child to every point";

impl Checker<'_> {
    /// Records `append --stop-after 3` twice and compares the calls.
    pub(super) fn syscall_determinism(&mut self) {
        if let Some(why) = unsupported_arch() {
            self.skip(&[CHECK], &format!("the syscall kill mode does not run here: {why}"));
            return;
        }
        let recordings = [self.recording("recording-1"), self.recording("recording-2")];
        match recordings {
            [Err(Recorded::Refused(why)), _] | [_, Err(Recorded::Refused(why))] => {
                self.skip(&[CHECK], &format!("the machine refuses tracing: {why}"));
            }
            [Err(Recorded::Failed(why)), _] | [_, Err(Recorded::Failed(why))] => drop(self.note(CHECK, Err(why))),
            [Ok(first), Ok(second)] => match first_difference(&first, &second) {
                None => drop(self.note(
                    CHECK,
                    Ok(format!(
                        "two recordings of `append --stop-after {APPENDS}` made the same {} counted calls",
                        first.len()
                    )),
                )),
                Some(what) => self.warn(
                    CHECK,
                    format!(
                        "two recordings of `append --stop-after {APPENDS}` differ ({} and {} counted calls): {what}; \
                         {CONSEQUENCE}",
                        first.len(),
                        second.len()
                    ),
                ),
            },
        }
    }

    /// One recording: the counted calls, the ready record's length masked
    /// (it holds the process's pid, whose digits differ from run to run).
    fn recording(&mut self, label: &str) -> Result<Vec<Point>, Recorded> {
        let s = self.scratch(label, None).ok_or_else(|| Recorded::Failed("no scratch folder".into()))?;
        let (db, acks, stderr) = (s.path("store.db"), s.path("acks.ndjson"), s.path("append.stderr"));
        let args = OpArgs::new(Op::Append).db(&db).acks(&acks).stop_after(APPENDS).to_args();
        let launch = Launch { args: &args, home: &s.home, trial: &s.path(""), stdout: None, stderr: Some(&stderr) };
        let traps = trap_set().map_err(Recorded::Refused)?;
        let mut child = match self.child.spawn_traced(&launch, traps, self.deadline, &self.interrupt) {
            Ok(child) => child,
            Err(TraceError::NotPermitted(why)) => return Err(Recorded::Refused(why)),
            Err(e) => return Err(Recorded::Failed(format!("traced `append` could not start: {}", said(&e)))),
        };
        let recorded = crate::crashstate::record::record(&mut child, &Targets::new(&db, &acks), Goal::ToEnd);
        match recorded {
            Ok((Driven::Exited { exit: Exit::Code(0), .. }, log)) => Ok(masked(log.points)),
            Ok((driven, _)) => Err(Recorded::Failed(format!(
                "traced `append --stop-after {APPENDS}` did not end with exit code 0 ({driven:?}): {}",
                child.stderr_tail()
            ))),
            Err(TraceError::NotPermitted(why)) => Err(Recorded::Refused(why)),
            Err(e) => Err(Recorded::Failed(format!("recording `append`: {}", said(&e)))),
        }
    }
}

/// Why a recording was not made.
enum Recorded {
    /// The machine refuses tracing: the check does not run.
    Refused(String),
    Failed(String),
}

/// A tracing error in words.
fn said(e: &TraceError) -> String {
    match e {
        TraceError::NotPermitted(why) | TraceError::Io(why) => why.clone(),
        TraceError::Deadline => "the deadline passed".into(),
        TraceError::Interrupted => "interrupted".into(),
    }
}

fn masked(mut points: Vec<Point>) -> Vec<Point> {
    if let Some(p) = points.iter_mut().find(|p| p.file == Some(FileKind::Acks)) {
        p.len = None;
    }
    points
}

/// The first counted call that differs, in words; `None` when the two are
/// the same calls in the same order.
fn first_difference(first: &[Point], second: &[Point]) -> Option<String> {
    let same = |a: &Point, b: &Point| (a.syscall, a.file, a.offset, a.len) == (b.syscall, b.file, b.offset, b.len);
    let at = first.iter().zip(second).position(|(a, b)| !same(a, b));
    let call = |p: Option<&Point>| p.map_or("no call (it had ended)".to_string(), Point::call);
    match at {
        Some(i) => Some(format!(
            "counted call {} is {} in the first, {} in the second",
            i + 1,
            call(first.get(i)),
            call(second.get(i))
        )),
        None if first.len() == second.len() => None,
        None => {
            let i = first.len().min(second.len());
            Some(format!(
                "counted call {} is {} in the first, {} in the second",
                i + 1,
                call(first.get(i)),
                call(second.get(i))
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::Ordinal;
    use crate::kill::syscall::Call;

    fn p(n: u64, syscall: &'static str, offset: u64) -> Point {
        Point {
            ordinal: Ordinal(n),
            syscall: Call::Sys(syscall),
            file: Some(FileKind::Database),
            offset: Some(offset),
            len: Some(4096),
        }
    }

    #[test]
    fn the_first_differing_call_is_named_and_equal_recordings_pass() {
        let a = vec![p(1, "pwrite64", 0), p(2, "fdatasync", 0), p(3, "pwrite64", 4096)];
        assert_eq!(first_difference(&a, &a.clone()), None);
        let mut b = a.clone();
        b[2].offset = Some(8192);
        let d = first_difference(&a, &b).unwrap();
        assert_eq!(
            d,
            "counted call 3 is pwrite64 database offset 4096 length 4096 in the first, pwrite64 database offset \
             8192 length 4096 in the second"
        );
        let d = first_difference(&a, &a[..2]).unwrap();
        assert!(d.ends_with("in the first, no call (it had ended) in the second"), "{d}");
    }
}
