//! From a crash to a verdict: the one step every trial of every cell ends
//! with, whatever made its crash state: a timed kill, a kill at a syscall
//! point, a race, a process-crash state rebuilt from a recording, or a
//! power-loss state.
//!
//! Crash model: the child (or, in a race, each racer) has ended, by the
//! driver's `SIGKILL` or on its own, and has been reaped, or the state was
//! rebuilt from a log of its writes; nothing writes the files any more.
//! Each process's ack journal says what it promised; the journal's last
//! line may be torn by the kill. Clause (every cell): recovery is
//! deterministic and the recovered file passes `PRAGMA integrity_check`;
//! then the cell's own clause, on what was acked and what was recovered.
//!
//! [`conclude`] is the whole step. A caller that recovers many states in
//! one batch runs its two halves, [`prepare`] (journals, ready record,
//! leg audit) and [`judged`] (the judgement of a recovered state), with the
//! batch's recovery between them.

use std::borrow::Borrow;
use std::path::{Path, PathBuf};

use crashcells_protocol::{Ready, speaks};

use crate::cells::{Cell, End, Process, Seen, Violation};
use crate::journal;
use crate::legaudit::audit_leg;
use crate::matrix::Leg;
use crate::pipeline::judge::census::Census;
use crate::pipeline::outcome::{Failure, Finding, Outcome, Skip};
use crate::pipeline::trial::Trial;
use crate::recovery::Recovered;

/// Where a process's ack journal is: the file a process wrote, or the bytes
/// a rebuilt crash state holds.
#[derive(Clone, Debug)]
pub enum Acks<'a> {
    File(PathBuf),
    Bytes(&'a [u8]),
}

/// One process of a crash, before anything of it was read.
#[derive(Clone, Debug)]
pub struct Ended<'a> {
    pub name: String,
    pub acks: Acks<'a>,
    pub end: End,
}

impl Ended<'_> {
    /// The one child of a workload, killed, with its journal at `path`.
    pub fn killed(path: &Path) -> Ended<'static> {
        Ended { name: "child".into(), acks: Acks::File(path.to_path_buf()), end: End::Killed }
    }
}

/// What a crash left to judge.
pub struct Crash<'a> {
    pub cell: &'a dyn Cell,
    pub leg: &'a Leg,
    /// The state's database, for the leg audit when there is no census.
    pub db: &'a Path,
    pub ended: Vec<Ended<'a>>,
    /// The workload's `--seed` (0 for an operation without one).
    pub seed: u64,
    /// A sweep's census: its ready record stands in for a state killed
    /// before the child wrote one, and its leg audit for every point.
    pub census: Option<&'a Census>,
}

/// Judges a crash: [`prepare`], then `recover` (run only if the trial was
/// not already decided), then [`judged`].
pub fn conclude<R: Borrow<Recovered>>(
    crash: &Crash,
    trial: &mut Trial,
    recover: impl FnOnce() -> Result<R, Outcome>,
) -> Outcome {
    match prepare(crash, trial) {
        Ok(processes) => match recover() {
            Ok(recovered) => judged(crash.cell, &processes, recovered.borrow(), crash.seed, trial),
            Err(outcome) => outcome,
        },
        Err(outcome) => outcome,
    }
}

/// Everything [`conclude`] does before recovery: reads each process's
/// journal, takes the ready record (the first process's that has one, else
/// the census's: a kill point may land before any was written), checks the
/// protocol, and audits the leg (a leg the child did not honor is
/// skipped). The processes to judge once the state is recovered, or the
/// outcome that ends the trial first.
pub fn prepare(crash: &Crash, trial: &mut Trial) -> Result<Vec<Process>, Outcome> {
    let (processes, ready) = read_journals(&crash.ended).map_err(Outcome::Error)?;
    let Some(ready) = ready.as_ref().or(crash.census.map(|c| &c.ready)) else {
        return Err(Outcome::Error(Failure::NoReady));
    };
    check_protocol(ready).map_err(Outcome::Error)?;
    trial.acked = crash.cell.acked(&processes);
    trial.synchronous = ready.synchronous.clone();
    let audit = crash.census.map_or_else(|| audit_leg(crash.db, ready, crash.leg), |c| c.audit.clone());
    let skip = (!audit.honored).then(|| audit.reason.clone());
    trial.audit = Some(audit);
    match skip {
        Some(reason) => Err(Outcome::Skip(Skip::NotHonored(reason))),
        None => Ok(processes),
    }
}

/// The child must speak a protocol version this driver speaks.
pub fn check_protocol(ready: &Ready) -> Result<(), Failure> {
    if speaks(ready.protocol) { Ok(()) } else { Err(Failure::Protocol { version: ready.protocol }) }
}

/// Each process's acks, and the first ready record among them.
fn read_journals(ended: &[Ended]) -> Result<(Vec<Process>, Option<Ready>), Failure> {
    let mut processes = Vec::new();
    let mut ready = None;
    for e in ended {
        let file;
        let bytes: &[u8] = match &e.acks {
            Acks::File(path) => {
                file = std::fs::read(path).unwrap_or_default();
                &file
            }
            Acks::Bytes(b) => b,
        };
        let process = (ended.len() > 1).then(|| e.name.clone());
        let j = journal::parse(bytes).map_err(|error| Failure::Journal { process, error })?;
        ready = ready.or(j.ready);
        processes.push(Process { name: e.name.clone(), acks: j.acks, end: e.end });
    }
    Ok((processes, ready))
}

/// The rest of [`conclude`]: determinism, integrity, then the cell's own
/// check, on a recovered state. The first violation is the reason; the
/// others are kept in the details, so that a reader sees every one.
pub fn judged(cell: &dyn Cell, processes: &[Process], recovered: &Recovered, seed: u64, trial: &mut Trial) -> Outcome {
    let dump = &recovered.dump;
    if recovered.missing_db {
        trial.details.push("the crash left no database file: recovered as an empty store".into());
    }
    let v = cell.check(&Seen { processes, dump, seed, deliveries: &recovered.deliveries });
    trial.details.extend(v.details);
    trial.integrity = Some(dump.integrity.clone());
    let mut found = v.found;
    if let Some(why) = &recovered.nondeterministic {
        found.insert(0, Violation::new(crate::cells::NONDETERMINISTIC, why.clone()));
    }
    if dump.integrity != "ok" {
        found.insert(0, Violation::new(crate::cells::CORRUPT, format!("integrity_check says {}", dump.integrity)));
    }
    trial.details.extend(found.iter().skip(1).map(|f| format!("also: {f}")));
    if found.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fire(Finding { violations: found, power: None, fault: None })
    }
}
