//! The report model: one structure for a run, rendered four ways (human,
//! JSON, JUnit, Markdown). The JSON rendering is the canonical one; `report
//! --from` reads it back and renders it again.

pub mod human;
pub mod junit;
pub mod markdown;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const SCHEMA: &str = "crashcells.report.v1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fire,
    Skip,
    Stub,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fire => "fire",
            Verdict::Skip => "skip",
            Verdict::Stub => "stub",
            Verdict::Error => "error",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KillMode {
    Timed,
    Syscall,
    /// Power loss at each kill point (`--kill power`): the durable states of
    /// the recorded run, not a kill of any process.
    Power,
}

impl KillMode {
    pub fn as_str(self) -> &'static str {
        match self {
            KillMode::Timed => "timed",
            KillMode::Syscall => "syscall",
            KillMode::Power => "power",
        }
    }
}

/// Where a trial's kill landed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillPoint {
    pub trial: u32,
    /// Acknowledged operations seen when the kill was sent.
    pub after_acks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
}

impl KillPoint {
    /// One line for a reader: the trial, the acks seen, and where the
    /// syscall kill mode stopped the child when it did.
    pub fn describe(&self) -> String {
        let mut s = format!("trial {}, after {} acks", self.trial, self.after_acks);
        if self.ordinal.is_some() || self.syscall.is_some() {
            s.push_str(", at");
            if let Some(n) = self.ordinal {
                s.push_str(&format!(" syscall #{n}"));
            }
            if let Some(name) = &self.syscall {
                s.push_str(&format!(" {name}"));
            }
        }
        let mut place = Vec::new();
        if let Some(f) = &self.file {
            place.push(f.clone());
        }
        if let Some(o) = self.offset {
            place.push(format!("offset {o}"));
        }
        if let Some(n) = self.len {
            place.push(format!("{n} bytes"));
        }
        if !place.is_empty() {
            s.push_str(&format!(" ({})", place.join(", ")));
        }
        s
    }
}

/// One cell × leg × kill mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell: String,
    pub number: u32,
    #[serde(default)]
    pub clause: String,
    pub leg: String,
    pub requested_mode: Option<String>,
    pub effective_mode: Option<String>,
    #[serde(default)]
    pub synchronous: Option<String>,
    pub kill: KillMode,
    pub verdict: Verdict,
    pub reason: String,
    pub trials: u32,
    pub kill_points: Vec<KillPoint>,
    pub acked: u64,
    pub duration_ms: u64,
    pub evidence: Option<String>,
    pub repro: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutant: Option<String>,
    /// What `PRAGMA integrity_check` said after recovery, if recovery ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// Facts a reader of a fire needs: what was acked, what was recovered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl CellResult {
    /// The deciding kill point: the last trial's (a result stops at its first
    /// fire, error or skip).
    pub fn deciding_kill(&self) -> Option<&KillPoint> {
        self.kill_points.last()
    }

    /// Reads a result written before the integrity check had a field of its
    /// own, when it travelled as an `integrity_check: ...` detail.
    fn upgrade(&mut self) {
        const OLD: &str = "integrity_check: ";
        if let Some(i) = self.details.iter().position(|d| d.starts_with(OLD)) {
            let old = self.details.remove(i);
            self.integrity.get_or_insert_with(|| old[OLD.len()..].to_string());
        }
    }

    /// The leg as a reader needs it: what was asked for and what ran.
    pub fn mode_line(&self) -> String {
        let requested = self.requested_mode.as_deref().unwrap_or("resolver default");
        let effective = self.effective_mode.as_deref().unwrap_or("not audited");
        let mut s = format!("requested {requested}, effective {effective}");
        if let Some(sync) = &self.synchronous {
            s.push_str(&format!(", synchronous {sync}"));
        }
        s
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub pass: usize,
    pub fire: usize,
    pub skip: usize,
    pub stub: usize,
    pub error: usize,
}

impl Summary {
    pub fn of(results: &[CellResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            *match r.verdict {
                Verdict::Pass => &mut s.pass,
                Verdict::Fire => &mut s.fire,
                Verdict::Skip => &mut s.skip,
                Verdict::Stub => &mut s.stub,
                Verdict::Error => &mut s.error,
            } += 1;
        }
        s
    }

    /// The exit code of `run`: 1 if anything fired; else 2 on an error; else
    /// 3 if nothing ran (every leg skipped); else 0.
    pub fn exit_code(&self) -> i32 {
        if self.fire > 0 {
            1
        } else if self.error > 0 {
            2
        } else if self.pass == 0 {
            3
        } else {
            0
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub crashcells_version: String,
    pub sqlite_version: String,
    pub seed: u64,
    pub matrix: String,
    pub duration_ms: u64,
    #[serde(default)]
    pub run_id: String,
    /// Where trials ran (the work folder's parent).
    #[serde(default)]
    pub workdir: String,
    #[serde(default)]
    pub child: String,
    #[serde(default)]
    pub interrupted: bool,
    /// The operating system the run was on (name, kernel release, machine);
    /// empty in reports written before it was recorded.
    #[serde(default)]
    pub os: String,
    pub results: Vec<CellResult>,
    pub summary: Summary,
}

impl Report {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }

    /// The journal modes the results effectively ran in, as audited, sorted.
    pub fn journal_modes(&self) -> Vec<&str> {
        let mut modes: Vec<&str> = self.results.iter().filter_map(|r| r.effective_mode.as_deref()).collect();
        modes.sort_unstable();
        modes.dedup();
        modes
    }

    /// The mutants the results ran with, in order of first appearance.
    pub fn mutants(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for m in self.results.iter().filter_map(|r| r.mutant.as_deref()) {
            if !seen.contains(&m) {
                seen.push(m);
            }
        }
        seen
    }

    pub fn from_json(file: &str, text: &str) -> Result<Report> {
        let report: Report =
            serde_json::from_str(text).map_err(|e| Error::Report { file: file.to_string(), message: e.to_string() })?;
        if report.schema != SCHEMA {
            let message = format!("schema `{}` is not {SCHEMA}", report.schema);
            return Err(Error::Report { file: file.to_string(), message });
        }
        // The verdicts are the results'; a summary edited or left stale in
        // the file must not decide the exit code.
        let mut report = report;
        report.results.iter_mut().for_each(CellResult::upgrade);
        report.summary = Summary::of(&report.results);
        Ok(report)
    }
}

/// The output formats of `run` and `report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Junit,
    Markdown,
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format, color: bool) -> Result<String> {
    match format {
        Format::Human => Ok(human::render(report, color)),
        Format::Json => Ok(report.to_json()),
        Format::Junit => junit::render(report),
        Format::Markdown => Ok(markdown::render(report)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_point_names_the_syscall_fields_it_has() {
        let timed = KillPoint { trial: 2, after_acks: 292, ..KillPoint::default() };
        assert_eq!(timed.describe(), "trial 2, after 292 acks");
        let syscall = KillPoint {
            trial: 17,
            after_acks: 3,
            ordinal: Some(17),
            syscall: Some("pwrite64".into()),
            file: Some("store.db-wal".into()),
            offset: Some(4096),
            len: Some(4120),
        };
        assert_eq!(
            syscall.describe(),
            "trial 17, after 3 acks, at syscall #17 pwrite64 (store.db-wal, offset 4096, 4120 bytes)"
        );
    }

    #[test]
    fn a_report_without_the_newer_fields_still_reads() {
        let old = r#"{"schema":"crashcells.report.v1","crashcells_version":"0.1.0","sqlite_version":"3.54.1",
            "seed":1,"matrix":"default","duration_ms":5,"results":[],
            "summary":{"pass":0,"fire":0,"skip":0,"stub":0,"error":0}}"#;
        let r = Report::from_json("old.json", old).unwrap();
        assert_eq!((r.os.as_str(), r.run_id.as_str()), ("", ""));
        assert!(markdown::render(&r).contains("| OS | not recorded |"));
    }
}
