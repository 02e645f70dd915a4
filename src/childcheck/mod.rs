//! `crashcells child-check`: the conformance check of an adapter itself. It
//! runs each operation of the child protocol once, without a kill (`append`
//! and `rotate` end by `--stop-after`), and reports which parts of
//! docs/PROTOCOL.md the child gets wrong, so that an adapter's author hears
//! "no ready record" or "dump not canonical" rather than a cell's error.
//!
//! Crash model: none; nothing here is killed. The one clause that needs a
//! moment in time, "an ack is written only after its operation's effect is
//! visible", is sampled: each time a new ack appears the child's group is
//! stopped (`SIGSTOP`), a fresh `dump` reads the store, and the group resumes.
//!
//! Every check of [`known::KNOWN`] is reported, as `ok`, `FAIL` or `not
//! run` with the reason (an earlier failure, or an operation the child does
//! not list in its ready record): a report never shrinks silently. The
//! checks are split by what they look at: [`clauses`] (exits, records, acks,
//! states, canonical bytes), [`states`] (`rotate`, and `dump` on every state
//! an operation that succeeded left), [`claim`] (the barrier and the race),
//! [`config`] (the config home), [`sampling`] (acks against a stopped
//! child's store) and [`forkserver`] (a fork server's forks against exec).

mod batch;
mod claim;
mod clauses;
mod config;
mod effects;
mod forkserver;
pub mod known;
mod sampling;
mod states;

use std::path::Path;
use std::time::Duration;

use crashcells_protocol::{Op, OpArgs, Ready};
use serde::Serialize;

use crate::harness::{ChildCommand, Exit, run_to_end};
use crate::journal::{self, JournalError};
use crate::probe::{Scratch, no_ready};
use clauses::{ack_sequence, append_state, expect_exit, ready_fields};
use states::State;

pub const SCHEMA: &str = "crashcells.child-check.v1";
/// Appends and rotations of the plain runs.
const APPENDS: u64 = 5;
const ROTATIONS: u64 = 3;
/// Acks sampled for the ack-after-effect check, and the most samples that may
/// be inconclusive (a dump that could not read the paused store in time).
const SAMPLES: u32 = 30;
const MAX_INCONCLUSIVE: u32 = 3;
/// How long a dump of a paused store may take before the sample is
/// inconclusive. Generous: a Python adapter on a loaded machine takes
/// seconds to start, and a longer wait only keeps the child stopped longer.
const SAMPLE_DUMP: Duration = Duration::from_secs(10);

/// What became of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    Fail,
    /// Not run: what it needs did not happen (the detail says what).
    NotRun,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "FAIL",
            Status::NotRun => "not run",
        }
    }
}

/// One clause of the protocol and whether the child keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub check: &'static str,
    /// True only for `ok` (a check that did not run is not ok).
    pub ok: bool,
    pub status: Status,
    pub detail: String,
}

impl Finding {
    fn of(check: &'static str, result: Result<String, String>) -> Finding {
        match result {
            Ok(detail) => Finding { check, ok: true, status: Status::Ok, detail },
            Err(detail) => Finding { check, ok: false, status: Status::Fail, detail },
        }
    }

    fn not_run(check: &'static str, why: String) -> Finding {
        Finding { check, ok: false, status: Status::NotRun, detail: why }
    }
}

/// What `child-check` found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub schema: &'static str,
    pub child: String,
    /// The version the child's ready record says it speaks (null without one).
    pub protocol: Option<u32>,
    pub sqlite_version: Option<String>,
    pub journal_mode: Option<String>,
    pub conforming: bool,
    pub checks: Vec<Finding>,
}

impl CheckReport {
    /// `0` conforming, `1` not.
    pub fn exit_code(&self) -> i32 {
        if self.conforming { 0 } else { 1 }
    }

    pub fn to_human(&self) -> String {
        let mut out = format!(
            "child-check: {} (protocol {}, SQLite {}, journal_mode {})\n",
            self.child,
            self.protocol.map_or("?".into(), |p| p.to_string()),
            self.sqlite_version.as_deref().unwrap_or("?"),
            self.journal_mode.as_deref().unwrap_or("?")
        );
        for f in &self.checks {
            out.push_str(&format!("{:<7} {:<20} {}\n", f.status.label(), f.check, f.detail));
        }
        let count = |s: Status| self.checks.iter().filter(|f| f.status == s).count();
        let verdict = if self.conforming { "conforming" } else { "NOT conforming" };
        out.push_str(&format!(
            "{verdict}: {} of {} checks pass, {} fail, {} not run\n",
            count(Status::Ok),
            self.checks.len(),
            count(Status::Fail),
            count(Status::NotRun)
        ));
        out
    }
}

/// Runs the whole check of `child`, with trials in `work`.
pub fn check(child: &ChildCommand, work: &Path, deadline: Duration) -> CheckReport {
    let mut c = Checker { child, work, deadline, findings: Vec::new(), skipped: Vec::new(), states: Vec::new() };
    let ready = c.append();
    if let Some(ready) = &ready {
        c.ack_after_effect();
        c.when(ready, &[Op::Rotate], &["rotate", "rotate-state"], Checker::rotate);
        let claims = ["park", "claim-barrier", "claim-exit-codes", "claim-state"];
        c.when(ready, &[Op::Park, Op::Claim], &claims, Checker::claim);
        c.dumps();
        c.config_home(ready);
        c.dump_batch(ready);
        effects::check(&mut c, ready);
        c.fork_server(ready);
    }
    let checks = c.every_check();
    let conforming = ready.is_some() && checks.iter().all(|f| f.status != Status::Fail);
    CheckReport {
        schema: SCHEMA,
        child: child.display(),
        protocol: ready.as_ref().map(|r| r.protocol),
        sqlite_version: ready.as_ref().map(|r| r.sqlite_version.clone()),
        journal_mode: ready.as_ref().map(|r| r.journal_mode.clone()),
        conforming,
        checks,
    }
}

struct Checker<'a> {
    child: &'a ChildCommand,
    work: &'a Path,
    deadline: Duration,
    findings: Vec<Finding>,
    /// Checks not run for a reason of their own, with it.
    skipped: Vec<(&'static str, String)>,
    /// Stores left by operations that succeeded, for the `dump` checks.
    states: Vec<State>,
}

impl Checker<'_> {
    /// Records a check's result; a check noted twice keeps its first
    /// failure.
    fn note(&mut self, check: &'static str, result: Result<String, String>) -> bool {
        let finding = Finding::of(check, result);
        let ok = finding.ok;
        match self.findings.iter_mut().find(|f| f.check == check) {
            Some(earlier) if earlier.ok && !ok => *earlier = finding,
            Some(_) => {}
            None => self.findings.push(finding),
        }
        ok
    }

    /// Runs `run` if the child implements every operation of `ops`; else
    /// says of each of `checks` that it did not run, and why.
    pub(super) fn when(&mut self, ready: &Ready, ops: &[Op], checks: &[&'static str], run: fn(&mut Self)) {
        match ops.iter().find(|&&op| !ready.implements(op)) {
            None => run(self),
            Some(op) => {
                let why = format!("the child does not implement `{op}` (its ready record does not list it)");
                self.skipped.extend(checks.iter().map(|&c| (c, why.clone())));
            }
        }
    }

    /// Every known check, in order: its finding, or `not run` with why;
    /// then any finding of no known check (a folder that could not be made).
    fn every_check(&self) -> Vec<Finding> {
        let mut out: Vec<Finding> = known::KNOWN
            .iter()
            .map(|k| match self.findings.iter().find(|f| f.check == k.name) {
                Some(f) => f.clone(),
                None => {
                    let why = self.skipped.iter().find(|(c, _)| *c == k.name).map(|(_, w)| w.clone());
                    Finding::not_run(k.name, why.unwrap_or_else(|| format!("needs {}", k.needs)))
                }
            })
            .collect();
        out.extend(self.findings.iter().filter(|f| known::find(f.check).is_none()).cloned());
        out
    }

    fn scratch(&mut self, label: &str, config: Option<&str>) -> Option<Scratch> {
        match Scratch::new(self.work, label, config) {
            Ok(s) => Some(s),
            Err(e) => {
                self.note("scratch", Err(format!("could not make a folder in {}: {e}", self.work.display())));
                None
            }
        }
    }

    /// Runs a short operation to its end; `Err` if it could not start or overstayed.
    fn run_op(&self, s: &Scratch, args: &OpArgs, label: &str) -> Result<(Exit, String), String> {
        let cmd = self.child.command(&args.to_args(), &s.home);
        let (stdout, stderr) = (s.path(&format!("{label}.stdout")), s.path(&format!("{label}.stderr")));
        let (exit, tail) =
            run_to_end(cmd, &stdout, &stderr, self.deadline).map_err(|e| format!("`{label}` could not start: {e}"))?;
        let exit = exit.map_err(|_| format!("`{label}` did not end within {:?}", self.deadline))?;
        Ok((exit, tail))
    }

    /// One `dump` pass of the store in `s`: its stdout text.
    fn dump(&self, s: &Scratch, label: &str) -> Result<String, String> {
        match self.run_op(s, &s.op(Op::Dump), label)? {
            (Exit::Code(0), _) => {
                std::fs::read_to_string(s.path(&format!("{label}.stdout"))).map_err(|e| e.to_string())
            }
            (exit, tail) => Err(format!("`dump` ended with {exit}: {tail}")),
        }
    }

    /// `append --stop-after 5`: the ready record, the acks, the state.
    fn append(&mut self) -> Option<Ready> {
        let s = self.scratch("append", None)?;
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Append).acks(&acks).stop_after(APPENDS);
        let ran = self.run_op(&s, &args, "append");
        let bytes = std::fs::read(&acks).unwrap_or_default();
        let journal = match journal::parse(&bytes) {
            Ok(j) => j,
            Err(e) => {
                self.journal_error(e);
                return None;
            }
        };
        let Some(ready) = journal.ready.clone() else {
            let stdout = std::fs::read(s.path("append.stdout")).unwrap_or_default();
            let (exit, tail) = ran.clone().map_or((None, String::new()), |(e, t)| (Some(e), t));
            self.note("ready", Err(no_ready(&bytes, &stdout, exit, &tail, self.deadline)));
            return None;
        };
        self.note("ready", Ok(format!("first line is a ready record for `{}`", ready.op)));
        self.note("protocol-version", Ok(format!("protocol {}", ready.protocol)));
        self.note("ready-fields", ready_fields(&ready, "append"));
        let stopped = ran.and_then(|(exit, tail)| expect_exit(exit, 0, &tail, "append --stop-after 5"));
        let finished = self.note("stop-after", stopped);
        self.note("acks", ack_sequence(&journal, "append", APPENDS));
        let first = self.dump(&s, "append-dump");
        self.note("append-state", first.clone().and_then(|t| append_state(&t, &journal.acks)));
        if finished {
            self.states.push(State { op: "append", scratch: s, first });
        }
        Some(ready)
    }

    fn journal_error(&mut self, e: JournalError) {
        let check = match e {
            JournalError::WrongProtocol { .. } => "protocol-version",
            JournalError::NotReady { .. } => "ready",
            JournalError::BadReady { .. } => "ready-fields",
            _ => "acks",
        };
        self.note(check, Err(e.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_report() -> CheckReport {
        let finding = |check, result| Finding::of(check, result);
        CheckReport {
            schema: SCHEMA,
            child: "python3 adapter.py".into(),
            protocol: Some(1),
            sqlite_version: Some("3.40.1".into()),
            journal_mode: Some("delete".into()),
            conforming: false,
            checks: vec![
                finding("ready", Ok("first line is a ready record for `append`".into())),
                finding("rotate", Err("rotate --stop-after 3 ended with exit code 1, expected exit code 0".into())),
                Finding::not_run("rotate-state", "needs a successful `rotate`".into()),
                finding("dump-canonical", Err("append state: sessions are not sorted by id".into())),
            ],
        }
    }

    #[test]
    fn report_formats() {
        crate::snapshots().bind(|| {
            insta::assert_snapshot!("child_check.human", sample_report().to_human());
            insta::assert_json_snapshot!("child_check.json", sample_report());
        });
        assert_eq!(sample_report().exit_code(), 1);
    }

    fn checker<'a>(child: &'a ChildCommand, work: &'a Path) -> Checker<'a> {
        Checker { child, work, deadline: Duration::from_secs(1), findings: vec![], skipped: vec![], states: vec![] }
    }

    #[test]
    fn every_known_check_is_listed_and_those_that_did_not_run_say_why() {
        let child = ChildCommand { program: "child".into(), prefix: vec![] };
        let mut c = checker(&child, Path::new("."));
        c.note("ready", Ok("yes".into()));
        c.note("rotate", Ok("ran".into()));
        c.note("rotate", Err("but its journal is torn".into()));
        c.note("rotate", Ok("ignored: a failure stands".into()));
        c.skipped.push(("park", "the child does not implement `park`".into()));
        let all = c.every_check();
        let names: Vec<&str> = all.iter().map(|f| f.check).collect();
        assert_eq!(names, known::KNOWN.iter().map(|k| k.name).collect::<Vec<_>>());
        let of = |name: &str| all.iter().find(|f| f.check == name).unwrap();
        assert_eq!((of("rotate").status, of("rotate").detail.as_str()), (Status::Fail, "but its journal is torn"));
        assert_eq!(of("rotate-state").status, Status::NotRun);
        assert_eq!(of("rotate-state").detail, "needs a successful `rotate`");
        assert_eq!(of("park").detail, "the child does not implement `park`");
    }
}
