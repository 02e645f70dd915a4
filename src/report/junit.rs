//! The JUnit XML rendering, for CI servers: one test suite per matrix, one
//! test case per cell × leg × kill mode. A `fire` is a failure (the store
//! broke a clause), an `error` an error (the harness reached no verdict),
//! `skip` and `stub` are skipped with their reasons; a fire's or an error's
//! text carries its clause, kill point, findings, evidence and repro, so the
//! CI page alone is enough to start on it. A syscall result's system-out
//! says how many of its planned kill points landed, and every case's (a
//! pass's too) the path that judged it and the deadline it ran under.
//!
//! A known fire (`--known`) is `<skipped type="known">` with its issue in
//! the message, as pytest reports an expected failure: CI servers show a
//! skipped case apart from the passes (a property on a passing case would
//! show it green, as if nothing had fired) and do not count it as a
//! failure, since the gate passed. A known finding that is gone is no
//! result: it gets a test case of its own (`known/FINGERPRINT`) whose
//! `<failure type="gone">` says the file is wrong, so that the CI page shows
//! why the run failed.
//!
//! A partial report (an interrupted run, or a merge of shares one of which
//! was) gets one more test case, `crashcells/incomplete`, an `<error
//! type="interrupted">` that says what did not run: its cut-short results
//! alone are skipped cases, and a suite of passes and skips would read
//! green on a CI page that shows no exit code.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use crate::error::{Error, Result};
use crate::model::{CellResult, Report, Verdict};

pub fn render(report: &Report) -> Result<String> {
    let mut junit = quick_junit::Report::new("crashcells");
    junit.set_time(Duration::from_millis(report.duration_ms));
    junit.add_test_suite(suite(report));
    let xml = junit.to_string().map_err(|e| Error::Report { file: "junit".into(), message: e.to_string() })?;
    let mut xml = without_root_skipped(&xml);
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    Ok(xml)
}

/// Drops `skipped` from the root `<testsuites>` element. quick-junit writes
/// it (nextest's extension), but the JUnit schema that CI plugins validate
/// against (Jenkins' xunit `junit-10.xsd`) allows it only on `<testsuite>`,
/// where the count stays.
fn without_root_skipped(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites") else { return xml.to_string() };
    let end = start + xml[start..].find('>').unwrap_or(0);
    let Some(at) = xml[start..end].find(" skipped=\"").map(|i| start + i) else { return xml.to_string() };
    let value_end = xml[at + 10..].find('"').map_or(at, |i| at + 10 + i + 1);
    format!("{}{}", &xml[..at], &xml[value_end..])
}

/// The run's one matrix as a suite, with the run's identity as properties.
fn suite(report: &Report) -> TestSuite {
    let mut suite = TestSuite::new(report.matrix.as_str());
    suite.set_time(Duration::from_millis(report.duration_ms));
    let mut props = vec![
        ("seed", report.seed.to_string()),
        ("crashcells_version", report.crashcells_version.clone()),
        ("sqlite_version", report.sqlite_version.clone()),
        ("journal_modes", report.journal_modes().join(",")),
        ("run_id", report.run_id.clone()),
        ("child", report.child.clone()),
    ];
    if !report.os.is_empty() {
        props.push(("os", report.os.clone()));
    }
    let mutants = report.mutants();
    if !mutants.is_empty() {
        props.push(("mutant", mutants.join(",")));
    }
    if report.interrupted {
        props.push(("interrupted", "true".into()));
    }
    if let Some(file) = &report.known_file {
        props.push(("known_file", file.clone()));
    }
    if let Some(d) = report.deadlines() {
        props.push(("deadline", d));
    }
    props.extend(super::words::not_durable(report).into_iter().map(|l| ("power_loss", l)));
    suite.add_properties(props.into_iter().map(|(k, v)| Property::new(k, v)));
    suite.add_test_cases(report.results.iter().map(case));
    suite.add_test_cases(report.gone().map(gone));
    suite.add_test_cases(incomplete(report));
    suite
}

/// The error case of a partial report, saying what did not run; none for
/// a report whose every planned result reached a verdict.
fn incomplete(report: &Report) -> Option<TestCase> {
    let cut = report.results.iter().filter(|r| r.verdict == Verdict::Interrupted).count();
    let missing = report.share().map_or(0, |n| n.saturating_sub(report.results.len()));
    if !report.interrupted && cut == 0 && missing == 0 {
        return None;
    }
    let by = match report.signal.map(|s| nix::sys::signal::Signal::try_from(s).map(|s| s.as_str())) {
        Some(Ok(name)) => format!("interrupted by {name}"),
        _ => "interrupted".into(),
    };
    let mut said = Vec::new();
    if missing > 0 {
        let s = if missing == 1 { "" } else { "s" };
        said.push(format!("{missing} planned result{s} did not start"));
    }
    if cut > 0 {
        let (s, were) = if cut == 1 { ("", "was") } else { ("s", "were") };
        said.push(format!("{cut} result{s} {were} cut short (skipped, type interrupted)"));
    }
    if said.is_empty() {
        said.push("results not listed did not run".into());
    }
    let message = format!("the run was {by}: a partial report; {}: rerun it", said.join(", "));
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type("interrupted").set_message(message);
    let mut case = TestCase::new("crashcells/incomplete", status);
    case.set_classname("crashcells");
    Some(case)
}

/// The test case of a known finding that is gone: a failure, as the exit
/// code is.
fn gone(k: &crate::model::KnownEntry) -> TestCase {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_type("gone").set_message(k.sentence().unwrap_or_default());
    let mut case = TestCase::new(format!("known/{}", k.finding.fingerprint), status);
    case.set_classname("known");
    case
}

fn case(r: &CellResult) -> TestCase {
    let name = if r.leg == "-" { r.cell.clone() } else { format!("{}/{}/{}", r.cell, r.leg, r.kill.as_str()) };
    let mut case = TestCase::new(name, status(r));
    case.set_classname(r.cell.as_str());
    case.set_time(Duration::from_millis(r.duration_ms));
    let mut out = String::new();
    if let Some(points) = r.points_line() {
        out.push_str(&format!("kill points landed: {points}\n"));
    }
    if let Some(fp) = &r.finding.fingerprint {
        out.push_str(&format!("fingerprint: {fp}\n"));
    }
    out.extend(path_lines(r).map(|l| l + "\n"));
    if r.not_durable.is_some() {
        out.push_str(&format!("power loss: {}\n", super::words::not_durable_line(r)));
    }
    if r.verdict.is_decisive() || r.verdict == Verdict::Known {
        if let Some(e) = evidence_line(r) {
            out.push_str(&format!("{e}\n"));
        }
        out.push_str(&format!("repro: {}\n", r.repro));
        out.extend(repro_lines(r).map(|l| l + "\n"));
    }
    if !out.is_empty() {
        case.set_system_out(out);
    }
    case
}

fn status(r: &CellResult) -> TestCaseStatus {
    let mut status = match r.verdict {
        Verdict::Pass => return TestCaseStatus::success(),
        Verdict::Fire => TestCaseStatus::non_success(NonSuccessKind::Failure),
        Verdict::Error => TestCaseStatus::non_success(NonSuccessKind::Error),
        // Cut short by the user: neither a failure nor an error of the store or the harness.
        Verdict::Skip | Verdict::Stub | Verdict::Interrupted => TestCaseStatus::skipped(),
        // Filed already: shown apart, not failed (the module's comment says why).
        Verdict::Known => TestCaseStatus::skipped(),
    };
    status.set_type(r.verdict.as_str()).set_message(message(r));
    if r.verdict.is_decisive() {
        status.set_description(description(r));
    }
    status
}

/// A case's message: its reason; a known fire's, with its issue first; a
/// skip's, with the cell and leg it skips (a CI page lists the messages
/// apart from the cases' names).
fn message(r: &CellResult) -> String {
    match &r.finding.known {
        Some(k) if r.verdict == Verdict::Known => {
            let note = k.note.as_deref().map_or(String::new(), |n| format!(" ({n})"));
            format!("known finding, issue {}{note}: {}", k.issue, r.reason)
        }
        _ if r.verdict == Verdict::Skip => super::words::skip_line(&[r.number], &r.leg, &r.reason),
        _ => r.reason.clone(),
    }
}

/// The text of a failure or an error: everything a reader of the CI page
/// needs to understand the result and rerun it.
fn description(r: &CellResult) -> String {
    let mut lines = vec![format!("clause: {}", r.clause), format!("leg: {} ({})", r.leg, r.mode_line())];
    lines.extend(r.finding.fingerprint.iter().map(|fp| format!("fingerprint: {fp}")));
    match r.deciding_kill() {
        Some(k) => lines.push(format!("kill: {}; {}", r.kill.as_str(), k.describe())),
        None if !r.kill.kills() => lines.push("kill: none; a race without a kill".into()),
        None if r.verdict == Verdict::Error || r.ended_before_kill.is_some() => {
            lines.push(format!("kill: {}; the trial ended before its kill point", r.kill.as_str()))
        }
        None => lines.push(format!("kill: {}; this cell's trials end without a kill", r.kill.as_str())),
    }
    if let Some(points) = r.points_line() {
        lines.push(format!("kill points landed: {points}"));
    }
    lines.extend(path_lines(r));
    if let Some(m) = &r.mutant {
        lines.push(format!("mutant: {m}"));
    }
    lines.extend(r.details.iter().cloned());
    lines.push(format!("integrity_check: {}", r.integrity.as_deref().unwrap_or("not run")));
    lines.extend(evidence_line(r));
    lines.push(format!("repro: {}", r.repro));
    lines.extend(repro_lines(r));
    lines.join("\n") + "\n"
}

/// Where the evidence is, or why it could not be kept.
fn evidence_line(r: &CellResult) -> Option<String> {
    match (&r.kept.evidence, &r.kept.evidence_error) {
        (_, Some(why)) => Some(format!("evidence: NOT KEPT: {why}")),
        (Some(e), None) => Some(format!("evidence: {e}")),
        (None, None) => None,
    }
}

/// The leg a copied result was judged with, the path that judged a result
/// and the deadline it ran under: every case says them, a pass too (a
/// fast path must not change a verdict).
fn path_lines(r: &CellResult) -> impl Iterator<Item = String> {
    let path = r.path_phrase().map(|p| format!("path: {p}"));
    let judged = r.judged_with.as_ref().map(|w| w.label());
    judged.into_iter().chain(path).chain(r.deadline().map(|d| format!("deadline: {d} per wait")))
}

/// How often a fire's repro refired, the note on a timed fire's repro, and
/// the syscall repro it points to.
fn repro_lines(r: &CellResult) -> impl Iterator<Item = String> + '_ {
    let refire = r.notes.refire.map(|f| format!("{} (the repro, rerun in this run)", f.phrase()));
    let note = refire.into_iter().chain(r.notes.repro_note.iter().map(|n| format!("note: {n}")));
    note.chain(r.notes.syscall_repro.iter().map(|s| format!("syscall repro: {s}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::KillPoint;
    use crate::kill::TrialIndex;
    use crate::model::{SCHEMA, Summary};
    use crate::plan::KillMode;

    fn result(verdict: Verdict, leg: &str) -> CellResult {
        CellResult {
            clause: "acked appends survive".into(),
            requested_mode: Some(crashcells_protocol::JournalMode::Wal),
            effective_mode: Some("wal".into()),
            reason: format!("{} <reason> & more", verdict.as_str()),
            trials: 1,
            kill_points: vec![KillPoint { trial: TrialIndex::nth(0), after_acks: 7, ..KillPoint::default() }],
            acked: 7,
            duration_ms: 1500,
            kept: crate::model::Kept { evidence: Some("/ev/x".into()), ..Default::default() },
            repro: "crashcells run --cell 1".into(),
            integrity: Some("ok".into()),
            ..CellResult::new("some-cell", 1, leg, KillMode::Timed, verdict)
        }
    }

    fn report(results: Vec<CellResult>) -> Report {
        Report {
            schema: SCHEMA.into(),
            crashcells_version: "0.1.0".into(),
            sqlite_version: "3.54.1".into(),
            seed: 1,
            matrix: "default".into(),
            duration_ms: 2000,
            run_id: "r".into(),
            workdir: "/w".into(),
            child: "reference".into(),
            interrupted: false,
            signal: None,
            command: String::new(),
            planned: None,
            partition: None,
            os: String::new(),
            ci: None,
            start_folder: String::new(),
            launcher: None,
            containment: None,
            escaped: vec![],
            outside: vec![],
            known_file: None,
            known_findings: vec![],
            new_only: false,
            summary: Summary::of(&results),
            results,
        }
    }

    #[test]
    fn a_partial_report_is_an_error_saying_what_did_not_run() {
        let mut r = report(vec![result(Verdict::Pass, "a"), result(Verdict::Interrupted, "b")]);
        (r.interrupted, r.signal, r.planned) = (true, Some(libc::SIGTERM), Some(5));
        let back = quick_junit::Report::deserialize_from_str(&render(&r).unwrap()).unwrap();
        assert_eq!((back.tests, back.failures, back.errors), (3, 0, 1));
        let case = back.test_suites[0].test_cases.last().unwrap();
        assert_eq!(case.name.as_str(), "crashcells/incomplete");
        let TestCaseStatus::NonSuccess { message, kind: NonSuccessKind::Error, .. } = &case.status else {
            panic!("an error")
        };
        assert_eq!(
            message.as_deref(),
            Some(
                "the run was interrupted by SIGTERM: a partial report; 3 planned results did not start, 1 result \
                 was cut short (skipped, type interrupted): rerun it"
            )
        );
        let whole = report(vec![result(Verdict::Pass, "a")]);
        assert!(!render(&whole).unwrap().contains("incomplete"), "a whole run has no such case");
    }

    #[test]
    fn root_skipped_is_dropped_and_nothing_else() {
        let xml =
            "<?xml?>\n<testsuites name=\"c\" tests=\"3\" skipped=\"12\" failures=\"1\">\n<testsuite skipped=\"12\">";
        assert_eq!(
            without_root_skipped(xml),
            "<?xml?>\n<testsuites name=\"c\" tests=\"3\" failures=\"1\">\n<testsuite skipped=\"12\">"
        );
        assert_eq!(without_root_skipped("<testsuites tests=\"0\">"), "<testsuites tests=\"0\">");
    }

    #[test]
    fn verdicts_map_to_junit_statuses_and_counts() {
        let verdicts = [Verdict::Pass, Verdict::Fire, Verdict::Error, Verdict::Skip, Verdict::Stub];
        let legs = ["a", "b", "c", "d", "-"];
        let r = report(verdicts.iter().zip(legs).map(|(&v, l)| result(v, l)).collect());
        let xml = render(&r).unwrap();
        let back = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!((back.tests, back.failures, back.errors), (5, 1, 1));
        assert_eq!(back.test_suites[0].skipped, 2);
        let cases = &back.test_suites[0].test_cases;
        assert_eq!(cases[0].name.as_str(), "some-cell/a/timed");
        assert_eq!(cases[4].name.as_str(), "some-cell", "a stub has no leg");
        let TestCaseStatus::NonSuccess { message, description, .. } = &cases[1].status else { panic!("fire") };
        assert_eq!(message.as_deref(), Some("fire <reason> & more"), "escaped and read back intact");
        let text = description.as_deref().unwrap();
        assert!(text.contains("kill: timed; trial 0, after 7 acks"), "{text}");
        assert!(text.contains("evidence: /ev/x") && text.contains("repro: crashcells run --cell 1"), "{text}");
        assert!(cases[1].system_out.as_deref().unwrap().contains("repro: crashcells run --cell 1"));
        // A skip's message names the cell and the leg it skips (#53); a stub's is its reason.
        let TestCaseStatus::Skipped { message, .. } = &cases[3].status else { panic!("skip") };
        assert_eq!(message.as_deref(), Some("cell 1 skipped on leg d: skip <reason> & more"));
        let TestCaseStatus::Skipped { message, .. } = &cases[4].status else { panic!("stub") };
        assert_eq!(message.as_deref(), Some("stub <reason> & more"));
    }
}
