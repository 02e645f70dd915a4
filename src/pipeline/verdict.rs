//! From a crash to a verdict: the one step every trial of every cell ends
//! with, whatever killed its child.
//!
//! Crash model: the child (or, in a race, each racer) has ended, by the
//! driver's `SIGKILL` or on its own, and has been reaped; nothing writes the
//! files any more. Its ack journal says what it promised; the journal's last
//! line may be torn by the kill. Clause (every cell): recovery is
//! deterministic and the recovered file passes `PRAGMA integrity_check`;
//! then the cell's own clause, on what was acked and what was recovered.

use std::path::PathBuf;

use crashcells_protocol::{Ready, speaks, spoken};

use super::sweep::Census;
use super::{Context, Outcome, Trial};
use crate::cells::{Cell, End, Process, Seen};
use crate::journal;
use crate::legaudit::audit_leg;
use crate::matrix::Leg;
use crate::recovery::Recovered;
use crate::trialdir::TrialEnv;

/// One process of a crashed trial, before anything of it was read.
#[derive(Clone, Debug)]
pub struct Ended {
    pub name: String,
    pub journal: PathBuf,
    pub end: End,
}

/// Judges what a crash left in `env`: reads each process's journal, takes
/// the ready record (the first process's that has one, else the census's:
/// a kill point may land before any was written), audits the leg (a leg the
/// child did not honor is skipped), recovers twice and applies the cell's
/// check. A sweep passes its census, whose leg audit stands for every point.
pub fn conclude(
    cell: &dyn Cell,
    leg: &Leg,
    ctx: &Context,
    env: &TrialEnv,
    ended: &[Ended],
    census: Option<&Census>,
    trial: &mut Trial,
) -> Outcome {
    match prepare(cell, leg, env, ended, census, trial) {
        Ok(processes) => {
            recovered(cell, &processes, crate::recovery::recover(&ctx.child, ctx.deadline, env), env, trial)
        }
        Err(outcome) => outcome,
    }
}

/// Everything [`conclude`] does before recovery: the processes to judge
/// once the state is recovered, or the outcome that ends the trial first
/// (an error, or the skip of a leg the child did not honor). A caller that
/// recovers many trials' states in one batch runs this, then [`recovered`].
pub fn prepare(
    cell: &dyn Cell,
    leg: &Leg,
    env: &TrialEnv,
    ended: &[Ended],
    census: Option<&Census>,
    trial: &mut Trial,
) -> Result<Vec<Process>, Outcome> {
    let (processes, ready) = read_journals(ended).map_err(Outcome::Error)?;
    let Some(ready) = ready.as_ref().or(census.map(|c| &c.ready)) else {
        return Err(Outcome::Error("the child wrote no ready record".into()));
    };
    check_protocol(ready).map_err(Outcome::Error)?;
    trial.acked = cell.acked(&processes);
    trial.synchronous = ready.synchronous.clone();
    let audit = census.map_or_else(|| audit_leg(&env.db, ready, leg), |c| c.audit.clone());
    let skip = (!audit.honored).then(|| audit.reason.clone());
    trial.audit = Some(audit);
    match skip {
        Some(reason) => Err(Outcome::Skip(reason)),
        None => Ok(processes),
    }
}

/// The rest of [`conclude`]: a prepared trial's verdict from its state's
/// recovery (a failed recovery is the harness's error, or the interrupt's).
pub fn recovered(
    cell: &dyn Cell,
    processes: &[Process],
    recovery: Result<Recovered, crate::recovery::RecoveryError>,
    env: &TrialEnv,
    trial: &mut Trial,
) -> Outcome {
    match recovery {
        Ok(recovered) => judge(cell, processes, &recovered, env.seed, trial),
        Err(e @ crate::recovery::RecoveryError::Interrupted { .. }) => Outcome::Interrupted(e.to_string()),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// Judges a crash state rebuilt from a recording (no process ran to leave
/// it): its ack journal's bytes, the census's ready record and leg audit
/// (the sweep ran only on a leg the census showed honored), and its
/// recovery, done in a batch with other states.
pub fn judge_state(
    cell: &dyn Cell,
    census: &Census,
    (acks, seed): (&[u8], u64),
    recovered: Result<&Recovered, String>,
    trial: &mut Trial,
) -> Outcome {
    let journal = match journal::parse(acks) {
        Ok(j) => j,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let ready = journal.ready.as_ref().unwrap_or(&census.ready);
    if let Err(why) = check_protocol(ready) {
        return Outcome::Error(why);
    }
    let processes = [Process { name: "child".into(), acks: journal.acks, end: End::Killed }];
    trial.acked = cell.acked(&processes);
    trial.synchronous = ready.synchronous.clone();
    trial.audit = Some(census.audit.clone());
    match recovered {
        Ok(r) => judge(cell, &processes, r, seed, trial),
        Err(why) => Outcome::Error(why),
    }
}

/// The child must speak our protocol version; anything else is an error.
pub fn check_protocol(ready: &Ready) -> Result<(), String> {
    if speaks(ready.protocol) {
        Ok(())
    } else {
        Err(format!("the child speaks protocol {} but this driver speaks {}", ready.protocol, spoken()))
    }
}

/// Each process's acks, and the first ready record among them.
fn read_journals(ended: &[Ended]) -> Result<(Vec<Process>, Option<Ready>), String> {
    let mut processes = Vec::new();
    let mut ready = None;
    for e in ended {
        let bytes = std::fs::read(&e.journal).unwrap_or_default();
        let j = journal::parse(&bytes).map_err(|err| prefixed(ended.len(), &e.name, &err.to_string()))?;
        ready = ready.or(j.ready);
        processes.push(Process { name: e.name.clone(), acks: j.acks, end: e.end });
    }
    Ok((processes, ready))
}

/// A message about one of several processes names it.
fn prefixed(processes: usize, name: &str, message: &str) -> String {
    if processes > 1 { format!("{name}: {message}") } else { message.to_string() }
}

/// Determinism, integrity, then the cell's own check. The first finding is
/// the reason; any others are kept in the details, so that a reader sees
/// every one of them.
fn judge(cell: &dyn Cell, processes: &[Process], recovered: &Recovered, seed: u64, trial: &mut Trial) -> Outcome {
    let dump = &recovered.dump;
    if recovered.missing_db {
        trial.details.push("the crash left no database file: recovered as an empty store".into());
    }
    let v = cell.check(&Seen { processes, dump, seed, deliveries: &recovered.deliveries });
    trial.details.extend(v.details);
    trial.integrity = Some(dump.integrity.clone());
    let mut found = v.found;
    if let Some(why) = &recovered.nondeterministic {
        found.insert(0, why.clone());
    }
    if dump.integrity != "ok" {
        found.insert(0, format!("integrity_check says {}", dump.integrity));
    }
    let more = found.len().saturating_sub(1);
    trial.details.extend(found.iter().skip(1).map(|f| format!("also: {f}")));
    match found.first() {
        None => Outcome::Pass,
        Some(first) if more == 0 => Outcome::Fire(first.clone()),
        Some(first) => Outcome::Fire(format!("{first} (and {more} more, in the details)")),
    }
}
