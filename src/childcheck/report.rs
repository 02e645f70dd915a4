//! What `child-check` reports: each check's status and detail, the whole
//! report, and its human rendering.
//!
//! A check fails (`FAIL`) on a protocol fault, which makes the adapter not
//! conforming. A check whose failure is the store's own finding (its
//! recovery resends what arrived: cell 5's clause, seen without a kill) is
//! a `finding`, with the cell that would fire on it: the adapter keeps the
//! protocol and conforms; the cell is where the finding is judged
//! (docs/PROTOCOL.md §7 says which checks can be findings, and why). A
//! `warning` is a check the adapter keeps at a cost to a run (recordings
//! of one operation that differ): it conforms.

use serde::Serialize;

use crate::model::ExitCode;

/// The schema of the JSON report.
pub const SCHEMA: &str = "crashcells.child-check.v1";

/// What became of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Ok,
    Fail,
    /// The store's finding, not the adapter's fault: a cell would fire.
    Finding,
    /// Not run: what it needs did not happen (the detail says what).
    NotRun,
    /// Kept, but a run will pay for it (the detail says how): the adapter
    /// conforms.
    Warning,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "FAIL",
            Status::Finding => "finding",
            Status::NotRun => "not run",
            Status::Warning => "warning",
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
    /// A finding's cell: the one that fires on it under a kill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<&'static str>,
}

impl Finding {
    pub(super) fn of(check: &'static str, result: Result<String, String>) -> Finding {
        match result {
            Ok(detail) => Finding { check, ok: true, status: Status::Ok, detail, cell: None },
            Err(detail) => Finding { check, ok: false, status: Status::Fail, detail, cell: None },
        }
    }

    pub(super) fn not_run(check: &'static str, why: String) -> Finding {
        Finding { check, ok: false, status: Status::NotRun, detail: why, cell: None }
    }

    /// A warning under `check`: the adapter conforms, a run pays.
    pub(super) fn warning(check: &'static str, detail: String) -> Finding {
        Finding { check, ok: false, status: Status::Warning, detail, cell: None }
    }

    /// The store's finding under `check`: `cell` would fire on it.
    pub(super) fn store_finding(check: &'static str, cell: &'static str, detail: String) -> Finding {
        Finding { check, ok: false, status: Status::Finding, detail, cell: Some(cell) }
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
    /// A pass when the child conforms, a fire when it does not.
    pub fn exit_code(&self) -> ExitCode {
        if self.conforming { ExitCode::Pass } else { ExitCode::Fire }
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
            let cell = f.cell.map_or(String::new(), |c| format!(" (the store's finding: cell `{c}` fires on it)"));
            out.push_str(&format!("{:<7} {:<20} {}{cell}\n", f.status.label(), f.check, f.detail));
        }
        let count = |s: Status| self.checks.iter().filter(|f| f.status == s).count();
        let verdict = if self.conforming { "conforming" } else { "NOT conforming" };
        let findings = match count(Status::Finding) {
            0 => String::new(),
            n => format!(", {} of the store (not the adapter's fault)", crate::report::words::plural(n, "finding")),
        };
        let warnings = match count(Status::Warning) {
            0 => String::new(),
            1 => ", 1 warning".into(),
            n => format!(", {n} warnings"),
        };
        out.push_str(&format!(
            "{verdict}: {} of {} checks pass, {} fail{findings}{warnings}, {} not run\n",
            count(Status::Ok),
            self.checks.len(),
            count(Status::Fail),
            count(Status::NotRun)
        ));
        out
    }
}
