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
//! The checks are split by what they look at: [`clauses`] (exits, records,
//! acks, states, canonical bytes), [`claim`] (the barrier and the race) and
//! [`sampling`] (acks against a stopped child's store).

mod claim;
mod clauses;
mod effects;
mod sampling;

use std::path::Path;
use std::time::Duration;

use crashcells_protocol::{JournalMode, Op, OpArgs, Ready};
use serde::Serialize;

use crate::harness::{ChildCommand, Exit, run_to_end};
use crate::journal::{self, JournalError};
use crate::probe::{Scratch, no_ready};
use crate::recovery::where_differ;
use clauses::{ack_sequence, append_state, canonical, expect_exit, ready_fields, rotate_state};

pub const SCHEMA: &str = "crashcells.child-check.v1";
/// Appends and rotations of the plain runs.
const APPENDS: u64 = 5;
const ROTATIONS: u64 = 3;
/// Acks sampled for the ack-after-effect check, and the most samples that may
/// be inconclusive (a dump that could not read the paused store in time).
const SAMPLES: u32 = 30;
const MAX_INCONCLUSIVE: u32 = 3;
/// How long a dump of a paused store may take before the sample is inconclusive.
const SAMPLE_DUMP: Duration = Duration::from_secs(2);

/// One clause of the protocol and whether the child keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub ok: bool,
    pub detail: String,
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
            out.push_str(&format!("{:<5} {:<20} {}\n", if f.ok { "ok" } else { "FAIL" }, f.check, f.detail));
        }
        let passed = self.checks.iter().filter(|f| f.ok).count();
        let verdict = if self.conforming { "conforming" } else { "NOT conforming" };
        out.push_str(&format!("{verdict}: {passed} of {} checks pass\n", self.checks.len()));
        out
    }
}

/// Runs the whole check of `child`, with trials in `work`.
pub fn check(child: &ChildCommand, work: &Path, deadline: Duration) -> CheckReport {
    let mut c = Checker { child, work, deadline, findings: Vec::new() };
    let ready = c.append();
    if let Some(ready) = &ready {
        c.ack_after_effect();
        c.rotate();
        c.claim();
        c.config_home(ready);
        effects::check(&mut c, ready);
    }
    let conforming = ready.is_some() && c.findings.iter().all(|f| f.ok);
    CheckReport {
        schema: SCHEMA,
        child: child.display(),
        protocol: ready.as_ref().map(|r| r.protocol),
        sqlite_version: ready.as_ref().map(|r| r.sqlite_version.clone()),
        journal_mode: ready.as_ref().map(|r| r.journal_mode.clone()),
        conforming,
        checks: c.findings,
    }
}

struct Checker<'a> {
    child: &'a ChildCommand,
    work: &'a Path,
    deadline: Duration,
    findings: Vec<Finding>,
}

impl Checker<'_> {
    fn note(&mut self, check: &'static str, result: Result<String, String>) -> bool {
        let ok = result.is_ok();
        self.findings.push(Finding { check, ok, detail: result.unwrap_or_else(|e| e) });
        ok
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
        let exit = exit.ok_or_else(|| format!("`{label}` did not end within {:?}", self.deadline))?;
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
        self.note("stop-after", ran.and_then(|(exit, tail)| expect_exit(exit, 0, &tail, "append --stop-after 5")));
        self.note("acks", ack_sequence(&journal, "append", APPENDS));
        let state = self.dump(&s, "append-dump").and_then(|t| append_state(&t, &journal.acks));
        self.note("append-state", state);
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

    /// `rotate --stop-after 3`, then two dumps: canonical and deterministic.
    fn rotate(&mut self) {
        let Some(s) = self.scratch("rotate", None) else { return };
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Rotate).acks(&acks).stop_after(ROTATIONS);
        let ran = self.run_op(&s, &args, "rotate").and_then(|(e, t)| expect_exit(e, 0, &t, "rotate --stop-after 3"));
        if !self.note("rotate", ran) {
            return;
        }
        let journal = match journal::parse(&std::fs::read(&acks).unwrap_or_default()) {
            Ok(j) => j,
            Err(e) => {
                self.note("rotate", Err(e.to_string()));
                return;
            }
        };
        let first = self.dump(&s, "dump-1");
        let second = self.dump(&s, "dump-2");
        let (first, second) = match (first, second) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                self.note("dump-canonical", Err(e));
                return;
            }
        };
        self.note(
            "rotate-state",
            ack_sequence(&journal, "rotate", ROTATIONS).and_then(|_| rotate_state(&first, &journal)),
        );
        self.note("dump-canonical", canonical(&first));
        let same = if first == second {
            Ok("two passes print the same bytes".into())
        } else {
            Err(format!("the two passes differ {}", where_differ(&first, &second)))
        };
        self.note("dump-deterministic", same);
    }

    /// The config home: a leg asking for DELETE is honoured; an unknown value
    /// is an error, never a fallback.
    fn config_home(&mut self, default: &Ready) {
        let asked = self.ready_with("[database]\njournal_mode = \"delete\"\n", "config-delete").and_then(|(r, _)| {
            match r.map(|r| r.journal_mode) {
                Some(m) if m == JournalMode::Delete.as_str() => {
                    Ok(format!("journal_mode = \"delete\" ran delete (default ran {})", default.journal_mode))
                }
                Some(m) => Err(format!("journal_mode = \"delete\" was asked but the child reported {m}")),
                None => Err("with journal_mode = \"delete\" the child wrote no ready record".into()),
            }
        });
        self.note("config-home", asked);
        let bad = self.ready_with("[database]\njournal_mode = \"wall\"\n", "config-bad").and_then(|(r, exit)| {
            match (exit, r) {
                (Exit::Code(c), None) if c != 0 => Ok(format!("journal_mode = \"wall\" is refused (exit code {c})")),
                (exit, ready) => Err(format!(
                    "journal_mode = \"wall\" must be an error before any ready record, but the child ended with {exit}{}",
                    if ready.is_some() { " after writing a ready record" } else { "" }
                )),
            }
        });
        self.note("config-errors", bad);
    }

    /// Runs `append --stop-after 1` with `config` as config.toml.
    fn ready_with(&mut self, config: &str, label: &str) -> Result<(Option<Ready>, Exit), String> {
        let s = self.scratch(label, Some(config)).ok_or_else(|| "no scratch folder".to_string())?;
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Append).acks(&acks).stop_after(1);
        let (exit, _) = self.run_op(&s, &args, label)?;
        let journal = journal::parse(&std::fs::read(&acks).unwrap_or_default()).map_err(|e| e.to_string())?;
        Ok((journal.ready, exit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_report() -> CheckReport {
        let finding = |check, ok, detail: &str| Finding { check, ok, detail: detail.into() };
        CheckReport {
            schema: SCHEMA,
            child: "python3 adapter.py".into(),
            protocol: Some(1),
            sqlite_version: Some("3.40.1".into()),
            journal_mode: Some("delete".into()),
            conforming: false,
            checks: vec![
                finding("ready", true, "first line is a ready record for `append`"),
                finding("dump-canonical", false, "sessions are not sorted by id"),
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
}
