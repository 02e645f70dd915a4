//! The report model: one structure for a run, rendered four ways (human,
//! JSON, JUnit, Markdown). The JSON rendering is the canonical one; `report
//! --from` reads it back and renders it again.

pub mod human;

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
}

impl KillMode {
    pub fn as_str(self) -> &'static str {
        match self {
            KillMode::Timed => "timed",
            KillMode::Syscall => "syscall",
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

/// A syscall kill point in words: `#12 pwrite64 on journal at 512, 4096 bytes (after 1 acks)`.
pub fn describe_point(kp: &KillPoint) -> String {
    let mut s = format!(
        "#{} {} on {}",
        kp.ordinal.unwrap_or(0),
        kp.syscall.as_deref().unwrap_or("?"),
        kp.file.as_deref().unwrap_or("?")
    );
    if let Some(o) = kp.offset {
        s.push_str(&format!(" at {o}"));
    }
    if let Some(l) = kp.len {
        s.push_str(&format!(", {l} bytes"));
    }
    s.push_str(&format!(" (after {} acks)", kp.after_acks));
    s
}

/// One cell × leg × kill mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell: String,
    pub number: u32,
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
    /// Facts a reader of a fire needs: what was acked, what was recovered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
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
    pub results: Vec<CellResult>,
    pub summary: Summary,
}

impl Report {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }

    pub fn from_json(file: &str, text: &str) -> Result<Report> {
        let report: Report =
            serde_json::from_str(text).map_err(|e| Error::Report { file: file.to_string(), message: e.to_string() })?;
        if report.schema != SCHEMA {
            let message = format!("schema `{}` is not {SCHEMA}", report.schema);
            return Err(Error::Report { file: file.to_string(), message });
        }
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
        Format::Junit | Format::Markdown => {
            Err(Error::Usage(format!("format {format:?} is not implemented yet").to_lowercase()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_point_is_described_in_words() {
        let kp = KillPoint {
            trial: 3,
            after_acks: 1,
            ordinal: Some(12),
            syscall: Some("pwrite64".into()),
            file: Some("journal".into()),
            offset: Some(512),
            len: Some(4096),
        };
        assert_eq!(describe_point(&kp), "#12 pwrite64 on journal at 512, 4096 bytes (after 1 acks)");
    }
}
