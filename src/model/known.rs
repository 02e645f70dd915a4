//! Known findings: the fires a team has filed and is working on, listed by
//! fingerprint in a TOML file (`run --known FILE`, `report --known FILE`;
//! docs/CI.md), each with the issue it is tracked in.
//!
//! A fire whose fingerprint is listed gets the verdict `known`, with its
//! issue, and does not fail the gate. A listed finding is judged against
//! the results that ran where it points (its cell, mode, level and kill):
//!
//! - `fired`: a result fired it;
//! - `gone`: none did, and a sweep there (syscall or power: every kill point
//!   of the workload, not a sample) reached its end without it, which does
//!   not depend on timing: the file is wrong, and the run fails (exit 1),
//!   as pytest's strict expected failure does, so that the file stays true;
//! - `not-fired`: results ran there without firing it, none of them
//!   conclusive (timed kills or races land where the scheduler lets them;
//!   a sweep that stopped at another fire first, or erred): only noted;
//! - `not-run`: nothing ran there (another matrix, a narrower selection):
//!   only noted.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::fingerprint::Fingerprint;
use super::{CellResult, Report, Verdict};
use crate::error::{Error, Result, toml_message};

/// One `[[finding]]` of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownFinding {
    pub fingerprint: String,
    /// Where it is tracked: `#31`, a URL, `hermes-agent#12`.
    pub issue: String,
    /// Why it is known, for a reader of the file and of the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The file's entry as written: every key known, none missing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    fingerprint: String,
    issue: String,
    note: Option<String>,
}

/// What a result says of the known finding its fire is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Known {
    pub issue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What became of a known finding in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KnownStatus {
    Fired,
    Gone,
    NotFired,
    NotRun,
}

/// A known finding, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownEntry {
    #[serde(flatten)]
    pub finding: KnownFinding,
    pub status: KnownStatus,
    /// Why it is `gone`, `not-fired` or `not-run`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl KnownEntry {
    /// The finding as a sentence names it: `known finding F (issue I)`.
    pub fn named(&self) -> String {
        format!("known finding {} (issue {})", self.finding.fingerprint, self.finding.issue)
    }

    /// The line every format gives a known finding that did not fire.
    pub fn sentence(&self) -> Option<String> {
        match self.status {
            KnownStatus::Fired => None,
            KnownStatus::Gone => Some(format!("{} did not fire: the file is wrong ({})", self.named(), self.why)),
            KnownStatus::NotFired | KnownStatus::NotRun => Some(format!("{} did not fire: {}", self.named(), self.why)),
        }
    }
}

/// Reads a known-findings file. Anything malformed (TOML, a key that is
/// not `fingerprint`, `issue` or `note`, a fingerprint that is not one, a
/// fingerprint listed twice) is bad input, said in one line that names the
/// file and the entry.
pub fn load(path: &Path) -> Result<Vec<KnownFinding>> {
    let bad = |message: String| Error::Known { file: path.display().to_string(), message };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    parse(&text).map_err(bad)
}

/// The findings of a file's text, or what is wrong with it: its form,
/// then each fingerprint's words against what exists ([`Fingerprint::unknown_word`]).
pub fn parse(text: &str) -> std::result::Result<Vec<KnownFinding>, String> {
    let found = read(text)?;
    for (i, f) in found.iter().enumerate() {
        let fp: Fingerprint = f.fingerprint.parse()?;
        if let Some(what) = fp.unknown_word() {
            return Err(format!("entry {}: fingerprint `{}` names {what}", i + 1, f.fingerprint));
        }
    }
    Ok(found)
}

/// The findings of a file's text as written, or what is wrong with its form.
fn read(text: &str) -> std::result::Result<Vec<KnownFinding>, String> {
    let table: toml::Table = text.parse().map_err(|e| toml_message(&e))?;
    if let Some(key) = table.keys().find(|k| *k != "finding") {
        return Err(format!("unknown key `{key}` (the file holds [[finding]] entries)"));
    }
    let entries = match table.get("finding") {
        None => return Ok(Vec::new()),
        Some(toml::Value::Array(a)) => a,
        Some(_) => return Err("`finding` is not a list of [[finding]] entries".into()),
    };
    let mut out: Vec<KnownFinding> = Vec::new();
    for (i, value) in entries.iter().enumerate() {
        let n = i + 1;
        let e: Entry = value.clone().try_into().map_err(|e| format!("entry {n}: {}", toml_message(&e)))?;
        let fingerprint = e.fingerprint.trim().to_string();
        if let Err(why) = fingerprint.parse::<Fingerprint>() {
            return Err(format!("entry {n}: fingerprint `{fingerprint}` {why}"));
        }
        if e.issue.trim().is_empty() {
            return Err(format!("entry {n} ({fingerprint}): `issue` is empty"));
        }
        if let Some(m) = out.iter().position(|f| f.fingerprint == fingerprint) {
            return Err(format!("entry {n}: fingerprint `{fingerprint}` is entry {} already", m + 1));
        }
        out.push(KnownFinding { fingerprint, issue: e.issue.trim().to_string(), note: e.note });
    }
    Ok(out)
}

impl Report {
    /// Judges this report's fires against `findings` (from `file`): each
    /// fire whose fingerprint is listed becomes `known`, and each finding
    /// gets its status. A report judged before (a run with `--known`,
    /// rendered again with another file) is judged afresh; with no file and
    /// no findings, it is left as it was judged.
    pub fn judge_known(&mut self, file: Option<String>, findings: Vec<KnownFinding>) {
        if file.is_none() && findings.is_empty() {
            return;
        }
        for r in &mut self.results {
            if r.verdict == Verdict::Known {
                r.verdict = Verdict::Fire;
            }
            r.finding.known = None;
            let listed = r.finding.fingerprint.as_ref().and_then(|fp| findings.iter().find(|f| &f.fingerprint == fp));
            if let (Verdict::Fire, Some(f)) = (r.verdict, listed) {
                r.verdict = Verdict::Known;
                r.finding.known = Some(Known { issue: f.issue.clone(), note: f.note.clone() });
            }
        }
        self.known_file = file;
        self.known_findings = findings.into_iter().map(|f| entry(f, &self.results)).collect();
        self.recount();
    }

    /// The known findings of this report that are gone.
    pub fn gone(&self) -> impl Iterator<Item = &KnownEntry> {
        self.known_findings.iter().filter(|k| k.status == KnownStatus::Gone)
    }

    /// What a new-only report lists, of the whole run: `1 fire not known
    /// and 1 known finding gone, of the run's 26 results`.
    pub fn new_only_line(&self) -> String {
        let count = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let (fires, gone) = (self.shown().len(), self.gone().count());
        let fires = if fires == 0 { "no fire that is not known".into() } else { count(fires, "fire") + " not known" };
        let gone = if gone == 0 { "no known finding gone".into() } else { count(gone, "known finding") + " gone" };
        format!("{fires} and {gone}, of the run's {}", count(self.results.len(), "result"))
    }

    /// The file of known findings in one line, always the whole run's:
    /// what it lists and what became of them (`` `known.toml` lists 4 known
    /// findings (1 fired, 1 gone, 2 did not run here) ``); `None` for a run
    /// judged against no file.
    pub fn known_line(&self) -> Option<String> {
        let file = self.known_file.as_ref()?;
        let all = &self.known_findings;
        if all.is_empty() {
            return Some(format!("`{file}` lists no known finding"));
        }
        let count = |s: KnownStatus| all.iter().filter(|k| k.status == s).count();
        let phrases = [
            (count(KnownStatus::Fired), "fired"),
            (count(KnownStatus::Gone), "gone"),
            (count(KnownStatus::NotFired), "ran without firing (not conclusive)"),
            (count(KnownStatus::NotRun), "did not run here"),
        ];
        let said: Vec<String> = phrases.iter().filter(|(n, _)| *n > 0).map(|(n, p)| format!("{n} {p}")).collect();
        let s = if all.len() == 1 { "" } else { "s" };
        Some(format!("`{file}` lists {} known finding{s} ({})", all.len(), said.join(", ")))
    }
}

/// What became of `finding` among `results`.
fn entry(finding: KnownFinding, results: &[CellResult]) -> KnownEntry {
    let (status, why) = status(&finding.fingerprint, results);
    KnownEntry { finding, status, why }
}

fn status(fingerprint: &str, results: &[CellResult]) -> (KnownStatus, String) {
    let Ok(fp) = fingerprint.parse::<Fingerprint>() else {
        return (KnownStatus::NotRun, "it is not a fingerprint".into());
    };
    if results.iter().any(|r| r.finding.fingerprint.as_deref() == Some(fingerprint)) {
        return (KnownStatus::Fired, String::new());
    }
    // What ran there: a skipped leg (a mode the child did not honour, which
    // may well be this one) or a result cut short is no evidence either way.
    let ran = |r: &&CellResult| matches!(r.verdict, Verdict::Pass | Verdict::Fire | Verdict::Known | Verdict::Error);
    let site: Vec<&CellResult> = results.iter().filter(|r| fp.is_site_of(r)).filter(ran).collect();
    if site.is_empty() {
        return (KnownStatus::NotRun, format!("nothing ran {}", fp.site_phrase()));
    }
    if let Some(r) = site.iter().find(|r| whole_sweep(r)) {
        let points = r.points_phrase().map_or(String::new(), |p| format!(" ({p})"));
        let ended = if r.verdict == Verdict::Pass { "passed" } else { "reached its last point" };
        return (KnownStatus::Gone, format!("the whole {} sweep of leg `{}`{points} {ended}", r.kill.as_str(), r.leg));
    }
    let legs: Vec<String> = site.iter().map(|r| format!("`{}` ({})", r.leg, r.verdict.as_str())).collect();
    // A timed kill, and a race that kills nothing, land where the scheduler lets them.
    let why = match fp.kill.is_timed() || !fp.kill.kills() {
        true => "a kill that lands where the scheduler lets it is no evidence that it is gone",
        false => "no sweep there reached its end (it stopped at another result first, or was a sample)",
    };
    (KnownStatus::NotFired, format!("ran {} on leg {}, not conclusive: {why}", fp.site_phrase(), legs.join(", ")))
}

/// Whether `r` visited every kill point of its workload without stopping
/// early: a sweep (syscall, power, torn or fault: points that do not depend on timing)
/// that passed, or whose every planned point landed, and that was no
/// `--point`/`--points` sample.
fn whole_sweep(r: &CellResult) -> bool {
    let sweep = r.kill.sweeps_points() && !r.sweep.sampled;
    let ended = r.verdict == Verdict::Pass
        || (r.verdict.is_fire() && r.sweep.points_planned.is_some() && r.sweep.points_planned == r.sweep.points_landed);
    sweep && ended
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ExitCode;
    use crate::model::tests::{fire, report_of};
    use crate::plan::KillMode;

    const FILE: &str = r##"
        [[finding]]
        fingerprint = "c/wal/default/syscall/orphan"
        issue = "#31"
        note = "rotation is two transactions"

        [[finding]]
        fingerprint = "c/wal/default/timed/orphan"
        issue = "#31"
    "##;

    #[test]
    fn a_file_reads_as_its_findings() {
        let found = read(FILE).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].note.as_deref(), Some("rotation is two transactions"));
        assert_eq!(found[1].note, None);
        assert_eq!(parse("").unwrap(), vec![], "no finding is known");
    }

    #[test]
    fn a_misspelt_word_names_the_entry_and_the_nearest_valid_one() {
        let file = |fp: &str| {
            format!(
                "[[finding]]\nfingerprint = \"prefix-durability/wal/full/syscall/lost-ack\"\nissue = \"#1\"\n\n[[finding]]\nfingerprint = \"{fp}\"\nissue = \"#2\"\n"
            )
        };
        assert!(parse(&file("rotation-atomicity/wal/full/syscall/orphan")).is_ok());
        assert_eq!(
            parse(&file("rotation-atomicty/wal/full/syscall/orphan")).unwrap_err(),
            "entry 2: fingerprint `rotation-atomicty/wal/full/syscall/orphan` names an unknown cell \
             `rotation-atomicty` (did you mean `rotation-atomicity`?)"
        );
        assert!(
            parse(&file("rotation-atomicity/wal/full/syscall/orpan")).unwrap_err().contains("did you mean `orphan`?")
        );
        assert!(
            parse(&file("rotation-atomicity/wall/full/syscall/orphan")).unwrap_err().contains("did you mean `wal`?")
        );
    }

    #[test]
    fn a_malformed_file_names_the_entry_and_what_is_wrong() {
        let e = |text: &str| parse(text).unwrap_err();
        let typo = "[[finding]]\nfingerprint = \"c/wal/full/syscall/x\"\nissue = \"#1\"\nnotes = \"x\"\n";
        assert!(e(typo).starts_with("entry 1: unknown field `notes`"), "{}", e(typo));
        let missing = format!("{FILE}\n[[finding]]\nfingerprint = \"c/wal/full/syscall/x\"\n");
        assert!(e(&missing).starts_with("entry 3: missing field `issue`"), "{}", e(&missing));
        let twice = format!("{FILE}\n[[finding]]\nfingerprint = \"c/wal/default/syscall/orphan\"\nissue = \"#2\"\n");
        assert_eq!(e(&twice), "entry 3: fingerprint `c/wal/default/syscall/orphan` is entry 1 already");
        assert!(
            e("[[finding]]\nfingerprint = \"c/wal\"\nissue = \"#1\"").starts_with("entry 1: fingerprint `c/wal` has 2")
        );
        assert_eq!(e("[[findings]]\nx = 1"), "unknown key `findings` (the file holds [[finding]] entries)");
        assert!(e("[[finding]\n").contains("at byte"), "{}", e("[[finding]\n"));
        for text in [typo, &missing, &twice] {
            assert_eq!(e(text).lines().count(), 1);
        }
    }

    fn fired(kill: KillMode, kind: &str) -> CellResult {
        let mut r = fire(kill, "wal");
        r.finding.violation = Some(kind.into());
        r.finding.fingerprint = Fingerprint::of(&r).map(|f| f.to_string());
        r
    }

    #[test]
    fn a_listed_fire_is_known_and_a_run_of_known_fires_passes() {
        let mut r = report_of(vec![fired(KillMode::Syscall, "orphan"), fired(KillMode::Syscall, "lost-ack")]);
        r.judge_known(Some("known.toml".into()), read(FILE).unwrap());
        let verdicts: Vec<Verdict> = r.results.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, [Verdict::Known, Verdict::Fire], "the unlisted kind is new");
        assert_eq!(r.results[0].finding.known.as_ref().unwrap().issue, "#31");
        assert_eq!((r.summary.known, r.summary.fire, r.exit_code()), (1, 1, ExitCode::Fire));
        assert_eq!(r.known_findings[0].status, KnownStatus::Fired);
        assert_eq!(r.known_findings[1].status, KnownStatus::NotRun, "nothing ran timed");
        r.results.truncate(1);
        r.judge_known(Some("known.toml".into()), read(FILE).unwrap());
        assert_eq!((r.summary.known, r.summary.fire, r.exit_code()), (1, 0, ExitCode::Pass), "known alone exits 0");
        // Judged again with no finding listed: the fire is new again.
        r.judge_known(Some("empty.toml".into()), vec![]);
        assert_eq!((r.results[0].verdict, r.exit_code()), (Verdict::Fire, ExitCode::Fire));
    }

    #[test]
    fn a_finding_a_whole_sweep_did_not_fire_is_gone_and_a_timed_one_only_noted() {
        let mut pass = fired(KillMode::Syscall, "orphan");
        (pass.verdict, pass.finding.fingerprint, pass.sweep.points_planned, pass.sweep.points_landed) =
            (Verdict::Pass, None, Some(71), Some(71));
        pass.sweep.states_distinct = Some(60);
        let mut timed = pass.clone();
        (timed.kill, timed.sweep.points_planned, timed.sweep.points_landed) = (KillMode::Timed, None, None);
        let mut skipped = timed.clone();
        (skipped.verdict, skipped.leg) = (Verdict::Skip, "delete".into());
        let mut r = report_of(vec![pass.clone(), timed, skipped]);
        r.judge_known(Some("known.toml".into()), read(FILE).unwrap());
        let gone = &r.known_findings[0];
        assert_eq!(gone.status, KnownStatus::Gone);
        assert_eq!(
            gone.sentence().unwrap(),
            "known finding c/wal/default/syscall/orphan (issue #31) did not fire: the file is wrong (the whole \
             syscall sweep of leg `wal` (71 of 71 kill points; 60 distinct crash states) passed)"
        );
        assert_eq!(r.known_findings[1].status, KnownStatus::NotFired);
        assert!(r.known_findings[1].why.contains("no evidence that it is gone"), "{}", r.known_findings[1].why);
        assert!(!r.known_findings[1].why.contains("delete"), "a skipped leg ran nothing: {}", r.known_findings[1].why);
        assert_eq!((r.summary.gone, r.exit_code()), (1, ExitCode::Fire), "gone fails the gate");
        // A sample of the sweep is not conclusive.
        pass.sweep.sampled = true;
        let mut r = report_of(vec![pass]);
        r.judge_known(None, read(FILE).unwrap());
        assert_eq!((r.known_findings[0].status, r.exit_code()), (KnownStatus::NotFired, ExitCode::Pass));
    }

    #[test]
    fn every_whole_sweep_that_passes_makes_its_finding_gone() {
        for kill in KillMode::all().filter(|k| k.sweeps_points()) {
            let mut pass = fired(kill, "lost-ack");
            (pass.verdict, pass.finding.fingerprint, pass.sweep.points_planned, pass.sweep.points_landed) =
                (Verdict::Pass, None, Some(9), Some(9));
            let file =
                format!("[[finding]]\nfingerprint = \"c/wal/default/{}/lost-ack\"\nissue = \"#7\"\n", kill.as_str());
            let mut r = report_of(vec![pass]);
            r.judge_known(None, read(&file).unwrap());
            assert_eq!((r.known_findings[0].status, r.exit_code()), (KnownStatus::Gone, ExitCode::Fire), "{kill:?}");
        }
    }
}
