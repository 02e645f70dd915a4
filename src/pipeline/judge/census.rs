//! What a sweep learns before its points: whether syscall kill points can
//! run here at all (the filter, [`preflight`]), and, from a run of the
//! workload to its end, how many points it has, the child's ready record
//! and the leg audit that stands for every point ([`Census`]); and what a
//! failure to trace means for a result ([`trace_outcome`]).
//!
//! Crash model: see [`crate::kill::syscall`]. The census's leg audit is
//! taken once the workload has run to its end, when the header and the
//! ready record are final: a kill point may land before either exists.

use crashcells_protocol::Ready;

use crate::harness::{TraceError, Traps};
use crate::kill::syscall::{trap_set, unsupported_arch};
use crate::legaudit::Audit;
use crate::pipeline::outcome::{Failure, Interruption, Outcome, Skip};
use crate::pipeline::run::context::Context;

/// What every traced child stops at: the compiled seccomp filter an exec'd
/// child installs, and its test for a process a fork server forked.
pub type Filter = Traps;

/// What a sweep learns from its census: how many kill points the workload
/// has, the child's ready record, and the leg audit of the finished census
/// (the mode the leg really ran in: a kill point may land before the header
/// or the ready record reach their final state).
#[derive(Clone, Debug)]
pub struct Census {
    pub points: u64,
    pub ready: Ready,
    pub audit: Audit,
    /// The points a sweep visits, when not every one: a workload grown to
    /// cross a WAL checkpoint ([`crate::crashstate::Log::wal_windows`]).
    pub windows: Option<Vec<std::ops::RangeInclusive<u64>>>,
}

impl Census {
    /// The points a sweep of this census visits (before `--point` and
    /// `--points`): its windows', or every one.
    pub fn candidates(&self) -> Vec<u64> {
        match &self.windows {
            Some(w) => w.iter().flat_map(|r| r.clone()).collect(),
            None => (1..=self.points).collect(),
        }
    }
}

/// Whether syscall kill points can run here at all; `Err` is the skip or
/// error outcome that ends the result.
pub fn preflight() -> Result<Filter, Outcome> {
    if let Some(why) = unsupported_arch() {
        return Err(Outcome::Skip(Skip::Architecture(why)));
    }
    trap_set().map_err(|why| Outcome::Error(Failure::Filter(why)))
}

/// What a trace failure means for a trial: refused tracing is a skip with
/// the reason; anything else is the harness's error.
pub fn trace_outcome(e: TraceError, ctx: &Context) -> Outcome {
    match e {
        TraceError::NotPermitted(why) => Outcome::Skip(Skip::NoTracing(why)),
        TraceError::Deadline => {
            Outcome::Error(Failure::TraceDeadline { deadline: ctx.deadline, start: ctx.start, path: ctx.start_path() })
        }
        TraceError::Interrupted => Outcome::Interrupted(Interruption::TracedChild),
        TraceError::Io(why) => Outcome::Error(Failure::Tracing(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn refused_tracing_skips_with_the_reason_and_a_deadline_is_an_error() {
        let ctx = Context::for_tests(2, None);
        let skip = trace_outcome(TraceError::NotPermitted("PTRACE_TRACEME is not permitted here".into()), &ctx);
        assert!(matches!(&skip, Outcome::Skip(Skip::NoTracing(r)) if r.contains("PTRACE_TRACEME")), "{skip:?}");
        let over = trace_outcome(TraceError::Deadline, &Context { start: Duration::from_millis(190), ..ctx });
        assert!(matches!(over, Outcome::Error(Failure::TraceDeadline { .. })), "{over:?}");
        let said = over.to_string();
        assert!(said.ends_with("deadline (scaled from the child's exec'd start of 190ms)"), "{said}");
    }
}
