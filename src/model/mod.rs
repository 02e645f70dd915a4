//! The result model: what a run found, as data below both the pipeline
//! that finds it and the renderers that show it (`crate::report`): a
//! result's verdict and evidence ([`CellResult`]), a run's report
//! ([`Report`]), fingerprints and known findings, the counts and the exit
//! code they give. Its JSON form is the canonical one; `report --from`
//! reads it back and renders it again.

/// This build's version and commit, as `--version` and every report name
/// it: `0.1.0 (1a2b3c4)`, `unknown` for the commit of a build outside a git
/// checkout (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CRASHCELLS_COMMIT"), ")");

pub mod ci;
pub mod event;
mod exit;
pub mod fingerprint;
pub mod known;
pub mod merge;
mod path;
mod repro;
mod summary;
pub mod trace;

pub use ci::CiRun;
pub use event::{Event, Events, Fanout, Listener, Phase, Quiet};
pub use exit::ExitCode;
pub use fingerprint::Fingerprint;
pub use known::{Known, KnownEntry, KnownFinding, KnownStatus};
pub use merge::Partition;
pub use path::{Children, Refire, Spent, States};
pub use summary::Summary;
pub use trace::{Crash, Trace};

use crashcells_protocol::JournalMode;

use crate::journalmode::EffectiveMode;
use crate::kill::{KillPoint, TrialIndex};
use crate::plan::KillMode;

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
    /// Cut short by the user (`SIGINT`/`SIGTERM`) before a verdict: no
    /// evidence either way, and not the harness's error.
    Interrupted,
    /// A fire whose fingerprint a known-findings file lists (`--known`):
    /// still a finding about the store, already filed, so not a failure.
    Known,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fire => "fire",
            Verdict::Skip => "skip",
            Verdict::Stub => "stub",
            Verdict::Error => "error",
            Verdict::Interrupted => "interrupted",
            Verdict::Known => "known",
        }
    }

    /// A fire or an error: the results a reader must look at, with their
    /// kill point, evidence and repro. A known fire is not: its issue is
    /// where it is looked at.
    pub fn is_decisive(self) -> bool {
        matches!(self, Verdict::Fire | Verdict::Error)
    }

    /// A clause violated, known or not: what has a fingerprint.
    pub fn is_fire(self) -> bool {
        matches!(self, Verdict::Fire | Verdict::Known)
    }
}

/// One cell × leg × kill mode: what every result has, then its optional
/// parts in groups (each absent from the JSON when empty; the JSON stays
/// flat, its field names unchanged). Made by [`CellResult::new`], the one
/// constructor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell: String,
    pub number: u32,
    #[serde(default)]
    pub clause: String,
    pub leg: String,
    /// The mode the leg asked for; null for the resolver's default.
    pub requested_mode: Option<JournalMode>,
    /// The mode the deciding trial ran in, as its leg audit found it
    /// (`wal`, `wal?` where the files contradict the child); null when no
    /// leg audit reached it.
    pub effective_mode: Option<EffectiveMode>,
    #[serde(default)]
    pub synchronous: Option<String>,
    /// The level the recorded commits kept, read from their calls (a
    /// recorded result's; `crashstate::level`), beside the one claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_synchronous: Option<String>,
    /// Why an acknowledged commit of this leg is not durable against a
    /// power loss, from the same calls: said in every format and in the
    /// summary, and no fire (the leg ran as advertised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_durable: Option<String>,
    pub kill: KillMode,
    pub verdict: Verdict,
    pub reason: String,
    pub trials: u32,
    pub kill_points: Vec<KillPoint>,
    /// The deciding trial, when it ended before its kill (a store that
    /// failed its operation, a child that stalled) after earlier trials
    /// were killed: `kill_points` are theirs, and none is this result's
    /// (#53: a timed fire's kill-point line named trial 0 while its reason
    /// was about trial 1). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_before_kill: Option<TrialIndex>,
    pub acked: u64,
    pub duration_ms: u64,
    /// Where a fire or an error can be picked up again.
    #[serde(flatten)]
    pub kept: Kept,
    /// The command that reruns exactly this result, on the path it ran.
    pub repro: String,
    /// What a reader must know about `repro`, and how often it refired.
    #[serde(flatten)]
    pub notes: ReproNotes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutant: Option<String>,
    /// What `PRAGMA integrity_check` said after recovery, if recovery ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
    /// Facts a reader of a fire needs: what was acked, what was recovered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// What a sweep planned and really tested.
    #[serde(flatten)]
    pub sweep: Sweep,
    /// What a fire violated, and what a known-findings file says of it.
    #[serde(flatten)]
    pub finding: FindingParts,
    /// Which path judged the result.
    #[serde(flatten)]
    pub judged: Judged,
    /// A leg that applied the configuration of an earlier leg of the run
    /// is not run again: its result is that leg's, copied, and says so
    /// (`crate::applied`). Absent for a result judged on its own leg.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_with: Option<JudgedWith>,
}

/// The leg a copied result was judged with, and the configuration both
/// applied (`wal/full, SQLite 3.54.1`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedWith {
    pub leg: String,
    pub configuration: String,
}

impl JudgedWith {
    /// `judged with leg `default`: the same applied configuration, wal/full,
    /// SQLite 3.54.1`: the label every format shows.
    pub fn label(&self) -> String {
        format!("judged with leg `{}`: the same applied configuration, {}", self.leg, self.configuration)
    }
}

/// Where a fire or an error can be picked up again.
/// The name of a kept fire's timeline page in its evidence folder.
pub const TIMELINE: &str = "timeline.html";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// The evidence folder, kept for a fire or an error (null otherwise).
    #[serde(default)]
    pub evidence: Option<String>,
    /// Why the evidence of a fire or an error could not be kept, if it
    /// could not: said in every format, never only in the details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_error: Option<String>,
    /// The fire's `timeline.html` in its evidence folder, once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<String>,
}

/// What a reader must know before trusting a result's `repro`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReproNotes {
    /// A timed kill's repro repeats its ack target, not its instant, and a
    /// race's its race, not its interleaving: either may not fire again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_note: Option<String>,
    /// The repro of the syscall result of the same cell and leg in this run,
    /// for a timed fire: a kill point does not depend on timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_repro: Option<String>,
    /// A fire's repro, rerun in the run: how many runs, how many fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refire: Option<Refire>,
    /// What confirming and refiring a fire cost (JSON only).
    #[serde(default, skip_serializing_if = "Spent::is_none")]
    pub spent: Spent,
}

/// What a sweep planned and really tested; empty for timed kills and free races.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The kill points the sweep planned to visit (its census's points, or
    /// the `--points`/`--point` selection of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points_planned: Option<u64>,
    /// The planned points where the child really was stopped and killed
    /// before it finished. Fewer than planned when the sweep stopped at its
    /// first fire or error, or when the child ended before its point; the
    /// reason then says which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points_landed: Option<u64>,
    /// The same two counts per path of the killed process, where it has
    /// several (cell 2: racer r0's winning claim and its losing claim).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points_by_path: Vec<PathPoints>,
    /// Recorded sweeps: how many distinct crash states the landed points
    /// left (the same bytes in every file the store owns and the same acks
    /// are one state, checked once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states_distinct: Option<u64>,
    /// The planned points were a `--point`/`--points` selection of the
    /// workload's, not every one (so a pass is no whole sweep).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sampled: bool,
}

/// What a fire violated; absent on other verdicts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingParts {
    /// A fire's kind of violation, as the cell's judge names it (the first
    /// violation's: `lost-ack`, `orphan`, ...), kept so that a report read
    /// back has what its fingerprint is made of; absent in reports written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// A fire's fingerprint (`fingerprint.rs`): what was violated, the same
    /// across seeds, kill points, machines and SQLite patch versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// A known fire's issue and note, from the known-findings file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known: Option<Known>,
}

/// Which path judged a result (`path.rs`); absent for a result that ran no
/// child, and in older reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Whether the crash states were rebuilt from one recorded run or were
    /// real runs of the child (every timed trial and race; a sweep's points
    /// with `--replay off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<States>,
    /// How the result's children were started (forked, warm or exec'd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Children>,
    /// The deadline every wait of the result ran under, in milliseconds:
    /// `--deadline`, scaled by the child's measured start
    /// (`Context::scaled_deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// Kill points planned and landed on one path of the killed process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathPoints {
    /// `winning-claim` or `losing-claim` (cell 2).
    pub path: String,
    pub planned: u64,
    pub landed: u64,
}

impl CellResult {
    /// A result of cell `cell` (its id and number) on `leg` under `kill`,
    /// with `verdict`: the one constructor. Everything else starts empty
    /// (no trials, no parts); the pipeline and the tests set what they know.
    pub fn new(cell: &str, number: u32, leg: &str, kill: KillMode, verdict: Verdict) -> CellResult {
        CellResult {
            cell: cell.to_string(),
            number,
            clause: String::new(),
            leg: leg.to_string(),
            requested_mode: None,
            effective_mode: None,
            synchronous: None,
            kept_synchronous: None,
            not_durable: None,
            kill,
            verdict,
            reason: String::new(),
            trials: 0,
            kill_points: Vec::new(),
            ended_before_kill: None,
            acked: 0,
            duration_ms: 0,
            kept: Kept::default(),
            repro: String::new(),
            notes: ReproNotes::default(),
            mutant: None,
            integrity: None,
            details: Vec::new(),
            sweep: Sweep::default(),
            finding: FindingParts::default(),
            judged: Judged::default(),
            judged_with: None,
        }
    }

    /// This result, judged on another leg, as the result of `leg` (which
    /// asked for `requested_mode`): every figure the judge's, the leg and
    /// its request its own, labelled with the leg it was judged with. The
    /// fingerprint names the mode and level, not the leg: it stays.
    pub fn judged_for(&self, leg: &str, requested_mode: Option<JournalMode>, configuration: String) -> CellResult {
        let judged_with = Some(JudgedWith { leg: self.leg.clone(), configuration });
        CellResult { leg: leg.to_string(), requested_mode, judged_with, ..self.clone() }
    }

    /// The deciding kill point: the last trial's (a result stops at its first
    /// fire, error or skip); none when that trial ended before its kill, so
    /// that an earlier trial's point is never shown beside its reason.
    pub fn deciding_kill(&self) -> Option<&KillPoint> {
        self.kill_points.last().filter(|_| self.ended_before_kill.is_none())
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

    /// Landed of planned kill points, for a reader (`51 of 52 (winning
    /// claim 40 of 40, losing claim 11 of 12)`), shown as "kill points
    /// landed"; `None` for a result that planned none (timed, none, or a
    /// sweep that never got past its census).
    pub fn points_line(&self) -> Option<String> {
        self.points_said("")
    }

    /// The same in a sentence: `305 of 305 kill points; 269 distinct crash
    /// states`.
    pub fn points_phrase(&self) -> Option<String> {
        self.points_said(" kill points")
    }

    /// Landed of planned, then `noun`, the paths and the distinct states.
    fn points_said(&self, noun: &str) -> Option<String> {
        let (planned, landed) = (self.sweep.points_planned?, self.sweep.points_landed?);
        let mut s = format!("{landed} of {planned}{noun}");
        if !self.sweep.points_by_path.is_empty() {
            let paths: Vec<String> = self
                .sweep
                .points_by_path
                .iter()
                .filter(|p| p.planned > 0)
                .map(|p| format!("{} {} of {}", p.path.replace('-', " "), p.landed, p.planned))
                .collect();
            s.push_str(&format!(" ({})", paths.join(", ")));
        }
        if let Some(n) = self.sweep.states_distinct.filter(|&n| n < landed) {
            s.push_str(&format!("; {n} distinct crash states"));
        }
        Some(s)
    }

    /// The path that judged the result in one short word pair, for a
    /// table's column (`forked/recorded`, `exec/re-executed`); `-` for a
    /// result that ran no child.
    pub fn path(&self) -> String {
        match (self.judged.children, self.judged.states) {
            (Some(c), Some(s)) => format!("{}/{}", c.as_str(), s.as_str()),
            (Some(c), None) => c.as_str().to_string(),
            (None, Some(s)) => s.as_str().to_string(),
            (None, None) => "-".into(),
        }
    }

    /// The same as a reader says it: `children forked by the child's fork
    /// server (...); states replayed from a recording`.
    pub fn path_phrase(&self) -> Option<String> {
        let said: Vec<String> = [
            self.judged.children.map(|c| format!("children {}", c.phrase())),
            self.judged.states.map(|s| format!("states {}", s.phrase())),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// The deadline the result's waits ran under (`30s`), if recorded.
    pub fn deadline(&self) -> Option<String> {
        self.judged.deadline_ms.map(path::seconds)
    }

    /// The leg as a reader needs it: what was asked for and what ran.
    pub fn mode_line(&self) -> String {
        let requested = self.requested_mode.map_or("resolver default", JournalMode::as_str);
        let effective = self.effective_mode.as_ref().map_or("not audited".into(), ToString::to_string);
        let mut s = format!("requested {requested}, effective {effective}");
        if let Some(sync) = &self.synchronous {
            s.push_str(&format!(", synchronous {sync}"));
        }
        s
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
    /// The signal that interrupted the run (2 for `SIGINT`, 15 for `SIGTERM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The command of the whole run (every option that can change a
    /// verdict, `--partition` aside): reports of one run share it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Results the whole run planned, every partition together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<usize>,
    /// The share of the plan this report holds (`--partition k/n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// The operating system the run was on (name, kernel release, machine);
    /// empty in reports written before it was recorded.
    #[serde(default)]
    pub os: String,
    /// The CI run the report is of (commit, link to its page), recorded by
    /// `run` from the CI's variables; absent outside CI and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<CiRun>,
    /// The folder the run started in, where the relative paths of its
    /// options start; empty in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub start_folder: String,
    /// `warm pool of N` when the child's operations ran in warm processes
    /// (docs/PROTOCOL.md §10), or `fork server (...)` saying how its fork
    /// server ended, was restarted and left the run to exec (§9); absent
    /// when each was exec'd or forked by one fork server, the long-standing ways. Never a verdict's cause: a
    /// repro reruns the result with the pool or without it alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// What contained the run's processes (docs/design/processes.md,
    /// "Containment"): a pid namespace, or the driver as subreaper and why
    /// not a namespace; absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<String>,
    /// Each process that left its process group and outlived its operation
    /// (a daemon, a `setsid` grandchild: PROTOCOL.md forbids both), named
    /// and killed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escaped: Vec<String>,
    /// Each file a traced child created outside the folder it was given
    /// (and outside the sidecar its ready record declares), still there
    /// after the run: state no crash state holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<String>,
    /// The known-findings file the fires were judged against (`--known`),
    /// as it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_file: Option<String>,
    /// Each finding of that file, and what became of it in this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known_findings: Vec<KnownEntry>,
    pub results: Vec<CellResult>,
    pub summary: Summary,
    /// Set by [`Report::new_only`]: a rendering lists only what is new
    /// ([`Report::shown`]); everything else it says (counts, journal modes,
    /// known findings) stays the whole run's. Never written: a JSON report
    /// is whole.
    #[serde(skip)]
    pub new_only: bool,
}

impl Report {
    /// The exit code of the run this report is of: interrupted by its
    /// signal (`SIGINT` when a report did not record one), else as its
    /// verdicts say.
    pub fn exit_code(&self) -> ExitCode {
        match self.interrupted {
            true => ExitCode::Interrupted { signal: self.signal.unwrap_or(libc::SIGINT) },
            false => self.summary.exit_code(),
        }
    }

    /// The summary recounted from the results and the known findings gone:
    /// a summary edited or left stale must not decide an exit code.
    pub fn recount(&mut self) {
        self.summary = Summary::of(&self.results);
        self.summary.gone = self.gone().count();
    }

    /// What `report --new-only` shows, for posting to a tracking issue: the
    /// fires that are not known and the known findings that are gone. The
    /// report itself stays whole (a post's every other sentence, its counts,
    /// journal modes and known-findings line, is about the whole run); only
    /// what the renderings list is filtered, by [`Report::shown`].
    pub fn new_only(&self) -> Report {
        Report { new_only: true, ..self.clone() }
    }

    /// The results a rendering lists: every one, or in a new-only report
    /// the fires that are not known.
    pub fn shown(&self) -> Vec<&CellResult> {
        self.results.iter().filter(|r| !self.new_only || r.verdict == Verdict::Fire).collect()
    }

    /// The known findings a rendering lists: every one, or in a new-only
    /// report those gone.
    pub fn known_shown(&self) -> Vec<&KnownEntry> {
        self.known_findings.iter().filter(|k| !self.new_only || k.status == KnownStatus::Gone).collect()
    }

    /// How many results this report should hold: its share of the plan.
    pub fn share(&self) -> Option<usize> {
        let planned = self.planned?;
        Some(self.partition.map_or(planned, |p| p.range(planned).len()))
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }

    /// The journal modes the results effectively ran in, as audited: their
    /// words, sorted.
    pub fn journal_modes(&self) -> Vec<String> {
        let mut modes: Vec<String> =
            self.results.iter().filter_map(|r| r.effective_mode.as_ref().map(ToString::to_string)).collect();
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

    /// The store that ran, in words a reader of any format sees first: the
    /// child's command, or the built-in reference store (`child` is
    /// `reference` then, or empty in a report written before it was
    /// recorded). A CI gate that never started the team's store says so.
    pub fn store(&self) -> String {
        match self.child.as_str() {
            "" | "reference" => "the built-in reference store".into(),
            command => format!("`{command}`"),
        }
    }

    /// The deadlines the results ran under (`30s`; `30s to 41.7s` when
    /// they differ, as in a merge of shares run on different machines);
    /// `None` when no result recorded one.
    pub fn deadlines(&self) -> Option<String> {
        let ms: Vec<u64> = self.results.iter().filter_map(|r| r.judged.deadline_ms).collect();
        let (low, high) = (*ms.iter().min()?, *ms.iter().max()?);
        Some(match low == high {
            true => path::seconds(low),
            false => format!("{} to {}", path::seconds(low), path::seconds(high)),
        })
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
        report.recount();
        report.annotate();
        Ok(report)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kill::TrialIndex;

    #[test]
    fn kill_point_names_the_syscall_fields_it_has() {
        let timed = KillPoint { trial: TrialIndex::nth(2), after_acks: 292, ..KillPoint::default() };
        assert_eq!(timed.describe(), "trial 2, after 292 acks");
        let syscall = KillPoint {
            trial: TrialIndex::nth(17),
            after_acks: 3,
            ordinal: Some(17),
            syscall: Some("pwrite64".into()),
            file: Some("store.db-wal".into()),
            offset: Some(4096),
            len: Some(4120),
            racer: None,
        };
        assert_eq!(
            syscall.describe(),
            "trial 17, after 3 acks, at syscall #17 pwrite64 (store.db-wal, offset 4096, 4120 bytes)"
        );
    }

    pub(crate) fn fire(kill: KillMode, leg: &str) -> CellResult {
        CellResult {
            clause: "k".into(),
            effective_mode: Some("wal".into()),
            reason: "trial 0: lost".into(),
            trials: 1,
            acked: 3,
            duration_ms: 5,
            kept: Kept { evidence_error: Some("could not keep /e: Read-only file system".into()), ..Kept::default() },
            repro: format!("crashcells run --kill {}", kill.as_str()),
            ..CellResult::new("c", 1, leg, kill, Verdict::Fire)
        }
    }

    pub(crate) fn report_of(results: Vec<CellResult>) -> Report {
        let old = r#"{"schema":"crashcells.report.v1","crashcells_version":"0.1.0","sqlite_version":"3.54.1",
            "seed":1,"matrix":"default","duration_ms":5,"results":[],
            "summary":{"pass":0,"fire":0,"skip":0,"stub":0,"error":0}}"#;
        let mut r = Report::from_json("r.json", old).unwrap();
        r.results = results;
        r.recount();
        r.annotate();
        r
    }

    #[test]
    fn points_read_as_landed_of_planned_per_path() {
        let old = r#"{"cell":"c","number":2,"leg":"default","requested_mode":null,"effective_mode":"wal",
            "kill":"syscall","verdict":"pass","reason":"","trials":3,"kill_points":[],"acked":1,
            "duration_ms":5,"evidence":null,"repro":"r"}"#;
        let mut r: CellResult = serde_json::from_str(old).expect("a result without points still reads");
        assert_eq!(r.points_line(), None);
        (r.sweep.points_planned, r.sweep.points_landed) = (Some(52), Some(51));
        r.sweep.points_by_path = vec![
            PathPoints { path: "winning-claim".into(), planned: 40, landed: 40 },
            PathPoints { path: "losing-claim".into(), planned: 12, landed: 11 },
        ];
        assert_eq!(r.points_line().unwrap(), "51 of 52 (winning claim 40 of 40, losing claim 11 of 12)");
        let back: CellResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
