//! The points a fault sweep faults, and how its findings read
//! ([`super::fault`]): clause (a)'s
//! violation (an operation acked though its write or sync failed), a fire
//! or an error that names the fault and the power loss after it, the rules
//! of what a power state after the fault lost, and the evidence's note.
//!
//! Crash model: the fault sweep's: a call made to fail, the child running
//! on, and for a failed sync the power-loss states the failure added.

use crate::cells::Violation;
use crate::crashstate::Log;
use crate::crashstate::power::{AtPoint, Model, Pending};
use crate::kill::inject::Injection;
use crate::kill::syscall::sweep_points;

use super::outcome::{Failure, Fault, Finding, Outcome, PowerLoss, Skip};

/// The points a sweep injects into: `--point N` if the injection changes
/// its call (else the skip that says why not); else a sample of `--points`
/// of those whose call it changes, drawn with the seed; else all of them.
pub(super) fn planned(
    log: &Log,
    injection: &dyn Injection,
    mode: &'static str,
    only: Option<u64>,
    sample: Option<u32>,
    seed: u64,
) -> Result<Vec<u64>, Outcome> {
    let faulted: Vec<u64> = (1..=log.total()).filter(|&n| injection.at(&log.point(n)).is_some()).collect();
    if let Some(n) = only {
        if faulted.contains(&n) {
            return Ok(vec![n]);
        }
        let p = log.point(n);
        let call = match p.file {
            Some(f) => format!("{} of the {}", p.syscall, f.as_str()),
            None => "child's own end".into(),
        };
        return Err(Outcome::Skip(Skip::NothingToInject { point: n, call, mode, changes: injection.changes() }));
    }
    let drawn = sweep_points((1..=faulted.len() as u64).collect(), None, sample, seed);
    Ok(drawn.into_iter().map(|i| faulted[i as usize - 1]).collect())
}

/// The violation kind of clause (a).
pub use crate::cells::ACKED_DESPITE_IO_ERROR as ACKED_DESPITE;

/// Clause (a): the ack of operation `in_flight`, whose write or sync was
/// made to fail, if the journal holds one.
pub(super) fn acked_despite(acks: &[crashcells_protocol::Ack], in_flight: u64, fault: &Fault) -> Option<Violation> {
    let ack = acks.iter().find(|a| a.i == in_flight)?;
    Some(Violation::new(
        ACKED_DESPITE,
        format!(
            "{} {} was acknowledged, though the {} at #{} {} while it was in flight",
            ack.op,
            ack.i,
            fault.call,
            fault.point,
            fault.injected.returned()
        ),
    ))
}

/// The rules of what a state lost, the cause first: the writes the failed
/// sync lost for good, then the operations the power loss dropped; for a
/// store that changed its journal mode, the power loss's first (the lost
/// writes were the change's occasion, not its cause).
pub(super) fn lost_rules(
    m: &Model,
    at: &AtPoint,
    dropped: &crate::crashstate::power::Dropped,
    changed: bool,
) -> Vec<String> {
    let (failed, later) = (&m.lost[..at.lost], m.dropped(dropped));
    let rules: Vec<&Pending> =
        if changed { later.iter().chain(failed).collect() } else { failed.iter().chain(&later).collect() };
    rules.into_iter().map(Pending::rule).collect()
}

/// A fire of these violations, with the fault and the power loss that made
/// its state.
pub(super) fn fire(violations: Vec<Violation>, power: Option<PowerLoss>, fault: Option<Fault>) -> Outcome {
    Outcome::Fire(Finding { violations, power, fault: fault.map(Box::new) })
}

/// `outcome` with the fault (and power loss) that led to it: a fire names
/// them; the harness's error says where it arose.
pub(super) fn with_fault(outcome: Outcome, fault: &Fault, power: Option<PowerLoss>) -> Outcome {
    match outcome {
        Outcome::Fire(f) => fire(f.violations, power.or(f.power), Some(fault.clone())),
        Outcome::Error(error) => {
            let error = match power {
                Some(power) => Failure::PowerLoss { power, error: Box::new(error) },
                None => error,
            };
            Outcome::Error(Failure::Fault { fault: fault.clone(), error: Box::new(error) })
        }
        other => other,
    }
}

/// The evidence's note: the call that was made to fail, and what followed.
pub(super) fn fault_note(fault: &Fault, details: &[String]) -> String {
    let mut text = format!("{fault}\n{}\n", fault.injected.note());
    for d in details {
        text.push_str(&format!("{d}\n"));
    }
    text
}
