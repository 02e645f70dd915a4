//! Every report format, snapshotted for one run that has every verdict, and
//! the JUnit XML read back against the JSON summary.
//!
//! The run is put together from real runs of the binary: a fire (cell 1 with
//! the `drop-append` mutant, which loses m1 and so fires on every trial), a
//! pass (cell 3 on the reference store), an error (the `stall` mutant under
//! `--deadline 1`), a race that kills nothing (cell 2, kill mode `none`) and
//! two stubs (cells 4 and 5 from a catalog that has them as they were before
//! they went live). A skip cannot happen on the bundled SQLite, which honours
//! every mode, so that one result is made by hand: a copy of the pass moved
//! to the WAL leg, with the reason the real leg audit gives for a child that
//! ran on an affected SQLite 3.40.1 and was refused WAL. So is a syscall pass
//! of cell 2 (its kill points depend on the kernel and the architecture): a
//! copy of the race with the kill points it planned and landed on both of
//! r0's paths, as a real sweep reports them; and a syscall fire of cell 2
//! whose kill played no part (r0 killed before its barrier), its label in
//! every format.

use crashcells::kill::TrialIndex;
use std::path::Path;

use crashcells::kill::KillPoint;
use crashcells::kill::racer::{RacerAt, Stage};
use crashcells::legaudit::audit;
use crashcells::model::{CellResult, Fingerprint, PathPoints, Report, Summary, Verdict};
use crashcells::plan::KillMode;
use crashcells::report::Format;
use crashcells_child::resolver::{SqliteVersion, resolve};
use crashcells_protocol::Ready;
use crashcells_protocol::{DatabaseConfig, JournalMode};

use crate::common::{bin, run_json, scratch};

const SEED: &str = "31";

fn run_report(args: &[&str], dir: &Path) -> Report {
    let mut all = args.to_vec();
    all.extend(["--seed", SEED, "--trials", "1", "--kill", "timed"]);
    let (_, json) = run_json(&all, dir);
    serde_json::from_value(json).expect("a report")
}

/// The skip reason the leg audit gives when WAL was asked for and an
/// affected library's resolver refused it.
fn affected_wal_skip_reason(dir: &Path) -> String {
    let db = dir.join("affected.db");
    let mut header = vec![0u8; 100];
    (header[18], header[19]) = (1, 1);
    std::fs::write(&db, header).unwrap();
    let v = SqliteVersion(3, 40, 1);
    let decision = resolve(DatabaseConfig { journal_mode: Some(JournalMode::Wal), synchronous: None }, v, false);
    let ready = Ready {
        protocol: 1,
        pid: 1,
        op: "rotate".into(),
        sqlite_version: v.to_string(),
        sqlite_source_id: None,
        journal_mode: "delete".into(),
        synchronous: Some("full".into()),
        resolver: Some(decision),
        operations: None,
        sidecar: None,
    };
    let a = audit(&db, &ready, Some(JournalMode::Wal));
    assert!(!a.honored);
    a.reason
}

fn skip_from(pass: &CellResult, reason: String) -> CellResult {
    let mut skip = pass.clone();
    skip.leg = "wal".into();
    skip.requested_mode = Some(JournalMode::Wal);
    skip.effective_mode = Some("delete".into());
    skip.verdict = Verdict::Skip;
    skip.reason = reason;
    skip.details.clear();
    skip.kill_points = vec![KillPoint { trial: TrialIndex::nth(0), after_acks: 57, ..KillPoint::default() }];
    skip.acked = 58;
    skip.repro = pass.repro.replace("--leg delete", "--leg wal") + " --trial 0";
    skip
}

/// A syscall pass of the race, as a sweep over both of r0's claims reports it.
fn swept_from(race: &CellResult) -> CellResult {
    let mut swept = race.clone();
    swept.kill = KillMode::Syscall;
    // Four points on r0's winning claim, then two on its losing claim,
    // numbered on its own path.
    swept.trials = 6;
    let ordinal = |n: u32| u64::from(if n <= 4 { n } else { n - 4 });
    swept.kill_points = (1..=6)
        .map(|n| KillPoint { trial: TrialIndex::nth(n), ordinal: Some(ordinal(n)), ..KillPoint::default() })
        .collect();
    (swept.sweep.points_planned, swept.sweep.points_landed) = (Some(6), Some(6));
    swept.sweep.points_by_path = vec![
        PathPoints { path: "winning-claim".into(), planned: 4, landed: 4 },
        PathPoints { path: "losing-claim".into(), planned: 2, landed: 2 },
    ];
    swept.repro = race.repro.replace("--kill none", "--kill syscall").replace(" --trials 1", "");
    swept
}

/// A syscall fire of the race at its point 1, as ADK's sweep ended: r0
/// killed writing its ready record, before its barrier, so the kill played
/// no part and the others alone broke the clause. Its label shows in every
/// format through the kill point.
fn race_fire_from(swept: &CellResult) -> CellResult {
    let mut fire = swept.clone();
    fire.verdict = Verdict::Fire;
    fire.reason = "trial 1: 2 racers won the handoff (at most one may)".into();
    fire.trials = 1;
    let kp = KillPoint {
        trial: TrialIndex::nth(1),
        ordinal: Some(1),
        syscall: Some("write".into()),
        file: Some("acks".into()),
        len: Some(118),
        racer: Some(RacerAt { racer: 0, path: "winning-claim".into(), stage: Stage::BeforeBarrier, no_part: true }),
        ..KillPoint::default()
    };
    fire.kill_points = vec![kp];
    fire.sweep.points_landed = Some(1);
    fire.sweep.points_by_path[0].landed = 1;
    fire.sweep.points_by_path[1].landed = 0;
    fire.details = vec![
        "r0 killed before its barrier, at its point 1 of 4 (sweep point 1), sent on its winning claim: it never \
         claimed"
            .into(),
    ];
    fire.finding.violation = Some("winners".into());
    fire.finding.fingerprint = Fingerprint::of(&fire).map(|f| f.to_string());
    fire.repro = format!("{} --point 1", swept.repro);
    fire
}

/// Builds the run with every verdict and saves it as JSON in `dir`.
fn every_verdict(dir: &Path) -> std::path::PathBuf {
    let fire = run_report(&["run", "--cell", "1", "--leg", "wal", "--mutant", "drop-append"], dir);
    let pass = run_report(&["run", "--cell", "3", "--leg", "delete"], dir);
    let race = run_report(&["run", "--cell", "2"], dir);
    let error = run_report(&["run", "--cell", "1", "--leg", "default", "--mutant", "stall", "--deadline", "1"], dir);
    let catalog = crate::common::stub_catalog(dir);
    let stubs = run_report(&["run", "--cell", "4", "--cell", "5", "--catalog", &catalog], dir);
    let skip = skip_from(&pass.results[0], affected_wal_skip_reason(dir));
    let swept = swept_from(&race.results[0]);
    let race_fire = race_fire_from(&swept);
    let mut report = fire.clone();
    report.results =
        [&error.results[..], &fire.results, &race.results, &[swept, race_fire], &pass.results, &[skip], &stubs.results]
            .concat();
    report.summary = Summary::of(&report.results);
    report.duration_ms = fire.duration_ms + pass.duration_ms + race.duration_ms + error.duration_ms + stubs.duration_ms;
    let verdicts: Vec<_> = report.results.iter().map(|r| (r.verdict.as_str(), r.kill.as_str())).collect();
    assert_eq!(
        verdicts,
        [
            ("error", "timed"),
            ("fire", "timed"),
            ("pass", "none"),
            ("pass", "syscall"),
            ("fire", "syscall"),
            ("pass", "timed"),
            ("skip", "timed"),
            ("stub", "timed"),
            ("stub", "timed")
        ],
        "{}",
        report.to_json()
    );
    let path = dir.join("every-verdict.json");
    std::fs::write(&path, report.to_json()).unwrap();
    path
}

/// `crashcells report --from FILE --format F`, as a user runs it.
fn rendered(from: &Path, format: &str) -> String {
    let out = bin().args(["report", "--from"]).arg(from).args(["--format", format]).env("NO_COLOR", "1").output();
    let out = out.unwrap();
    // A fire beside an error: part of the run did not run, and the exit
    // code says so before it says that something fired.
    assert_eq!(out.status.code(), Some(2), "an error and a fire: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// What changes from run to run, replaced by fixed-width placeholders: the
/// scratch folder, run ids (time and pid), times, how many acks a timed
/// kill let through, the kernel, the crate's version and the folder the
/// tests started in.
pub(crate) fn settings(dir: &Path, report: &Report) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex::escape(&dir.display().to_string()), "[SCRATCH]");
    s.add_filter(r"\d{9,}-\d+", "[RUN-ID]");
    if !report.os.is_empty() {
        s.add_filter(&regex::escape(&report.os), "[OS]");
    }
    // What contained the run's processes: a pid namespace where the tests
    // may make one, the subreaper where they may not.
    s.add_filter(r#""containment": "[^"]*""#, r#""containment": "[CONTAINMENT]""#);
    s.add_filter(r"(?m)^containment: .*\n", "");
    // The folder the tests run in: the checkout, wherever it is.
    s.add_filter(r#""start_folder": "[^"]*""#, r#""start_folder": "[START]""#);
    // The version names the build's commit: `0.1.0 (1a2b3c4)`.
    s.add_filter(&regex::escape(&report.crashcells_version), "[VERSION]");
    // Times: human and Markdown `0.85s`, JUnit `time="0.853"`, JSON duration_ms.
    // The deadline a wait ran under is `--deadline` or more: the run
    // stretches it when the child's measured start would not fit in it
    // (Context::scaled_deadline), which a loaded machine does.
    s.add_filter(r"within the [\d.]+m?s deadline", "within the [DEADLINE] deadline");
    s.add_filter(r"\b[\d.]+s( to [\d.]+s)? per wait", "[DEADLINE] per wait");
    s.add_filter(r"deadline [\d.]+s( to [\d.]+s)?([,)])", "deadline [DEADLINE]$2");
    s.add_filter(r#"name="deadline" value="[^"]*""#, r#"name="deadline" value="[DEADLINE]""#);
    s.add_filter(r#""deadline_ms": \d+"#, r#""deadline_ms": "[MS]""#);
    // An error ended by a deadline names the start it was scaled from.
    s.add_filter(r"start took [\d.]+s in the preflight", "start took [START] in the preflight");
    // A Markdown `<summary>` is cut at a length that the deadline's own
    // (`30s`, `33.4s`) moves: the stalled child's summary ends where it may.
    s.add_filter(r"stall mutant: [^<]*…</summary>", "stall mutant: […]…</summary>");
    // The time column is as wide as its longest time: its header and the
    // `-` of a result that ran nothing are padded to it.
    s.add_filter(r"acked +time  reason", "acked  [TIME]  reason");
    s.add_filter(r"(?m)^(stub .*?) +-  (\S)", "$1 [TIME]  $2");
    s.add_filter(r" +\d+\.\d\ds\b", " [TIME]s");
    s.add_filter(r#"time="[\d.]+""#, r#"time="[TIME]""#);
    s.add_filter(r#""duration_ms": \d+"#, r#""duration_ms": "[MS]""#);
    // What making sure of a fire cost is time too, and JSON only: left out.
    s.add_filter(r#"(?s),\n *"spent": \{[^}]*\}"#, "");
    // Acks a timed kill let through, wherever they are shown.
    s.add_filter(r"(trials?|points?) +\d+ \[TIME\]", "$1 [ACKS] [TIME]");
    s.add_filter(r"after \d+ acks", "after [ACKS] acks");
    s.add_filter(r"m0\.\.m\d+ \(\d+ appends\); recovered \d+ appends", "m0..m[N] ([N] appends); recovered [N] appends");
    s.add_filter(
        r"acked \d+ rotations( \(with shapes\))?; recovered \d+ continuations",
        "acked [N] rotations$1; recovered [N] continuations",
    );
    s.add_filter(r"\| \d+ \| \[TIME\]s \|", "| [ACKS] | [TIME]s |");
    s.add_filter(r"\(acked \d+, recovered \d+\)", "(acked [N], recovered [N])");
    s.add_filter(r#""(acked|after_acks)": \d+"#, r#""$1": "[ACKS]""#);
    // How often a timed fire's repro refired is the scheduler's to decide.
    s.add_filter(r"refired \d+ of", "refired [K] of");
    s.add_filter(r#""fired": \d+"#, r#""fired": "[K]""#);
    // A lost append's counts, which a timed kill's instant decides too.
    s.add_filter(r"\(acked \d+, recovered \d+\)", "(acked [N], recovered [N])");
    s
}

#[test]
fn every_format_of_a_run_with_every_verdict() {
    let dir = scratch();
    let from = every_verdict(dir.path());
    let report = Report::from_json("every-verdict.json", &std::fs::read_to_string(&from).unwrap()).unwrap();
    settings(dir.path(), &report).bind(|| {
        // Every format the enum has: a new one gets a snapshot of its own.
        for &format in Format::all() {
            let name = match format {
                Format::Junit => "junit.xml".to_string(),
                Format::Markdown => "md".to_string(),
                other => other.name(),
            };
            insta::assert_snapshot!(format!("every_verdict.{name}"), rendered(&from, &format.name()));
        }
    });
    let xml = rendered(&from, "junit");
    junit_agrees_with_json(&xml, &report);
    attributes_are_the_schemas(&xml);
}

/// The attributes each element may carry in the JUnit schema CI plugins
/// validate against (Jenkins' xunit `junit-10.xsd`, which declares no
/// wildcard attributes): an unknown one fails validation there. (Checked
/// once by hand with `xmllint --schema`; this keeps it so without the file.)
fn attributes_are_the_schemas(xml: &str) {
    let allowed = |element: &str| -> &[&str] {
        match element {
            "testsuites" => &["name", "time", "tests", "failures", "disabled", "errors"],
            "testsuite" => &[
                "name",
                "tests",
                "failures",
                "errors",
                "time",
                "disabled",
                "skipped",
                "skips",
                "timestamp",
                "hostname",
                "id",
                "package",
                "assertions",
                "file",
                "skip",
                "log",
                "url",
            ],
            "testcase" => &[
                "name",
                "assertions",
                "time",
                "timestamp",
                "classname",
                "status",
                "class",
                "file",
                "line",
                "log",
                "group",
                "url",
            ],
            "failure" | "error" | "skipped" => &["type", "message"],
            "property" => &["name", "value"],
            _ => &[],
        }
    };
    let tag = regex::Regex::new(r#"<([a-z-]+)((?:\s+[a-zA-Z_-]+="[^"]*")*)\s*/?>"#).unwrap();
    let attr = regex::Regex::new(r#"([a-zA-Z_-]+)=""#).unwrap();
    let mut seen = 0;
    for t in tag.captures_iter(xml) {
        let element = &t[1];
        for a in attr.captures_iter(&t[2]) {
            assert!(allowed(element).contains(&&a[1]), "<{element}> may not carry `{}`", &a[1]);
            seen += 1;
        }
    }
    assert!(seen > 30, "the patterns found the document's attributes: {seen}");
}

/// The JUnit XML reads back (quick-junit's parser follows the schema CI
/// servers read) and its counts and statuses equal the JSON report's.
fn junit_agrees_with_json(xml: &str, report: &Report) {
    use quick_junit::{NonSuccessKind, TestCaseStatus};
    let junit = quick_junit::Report::deserialize_from_str(xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let s = &report.summary;
    let total = s.pass + s.fire + s.skip + s.stub + s.error;
    assert_eq!((junit.tests, junit.failures, junit.errors), (total, s.fire, s.error));
    assert_eq!(junit.test_suites.len(), 1, "one suite per matrix");
    let suite = &junit.test_suites[0];
    assert_eq!((suite.tests, suite.failures, suite.errors, suite.skipped), (total, s.fire, s.error, s.skip + s.stub));
    assert_eq!(suite.name.as_str(), report.matrix);
    assert_eq!(suite.test_cases.len(), report.results.len());
    for (case, r) in suite.test_cases.iter().zip(&report.results) {
        let status = match &case.status {
            TestCaseStatus::Success { .. } => "pass",
            TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, .. } => "fire",
            TestCaseStatus::NonSuccess { kind: NonSuccessKind::Error, .. } => "error",
            TestCaseStatus::Skipped { ty, .. } => ty.as_deref().unwrap_or("skipped"),
        };
        assert_eq!(status, r.verdict.as_str(), "{}", case.name.as_str());
        assert_eq!(case.classname.as_deref(), Some(r.cell.as_str()));
        assert!(case.time.is_some(), "{}", case.name.as_str());
    }
}

#[test]
fn out_writes_the_format_and_the_terminal_gets_the_human_summary() {
    let dir = scratch();
    let out_path = dir.path().join("run.xml");
    let catalog = crate::common::stub_catalog(dir.path());
    let out = crate::common::run(
        &[
            "run",
            "--cell",
            "4",
            "--seed",
            "1",
            "--catalog",
            &catalog,
            "--format",
            "junit",
            "--out",
            out_path.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3), "a stub alone: nothing ran");
    let xml = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(quick_junit::Report::deserialize_from_str(&xml).unwrap().test_suites[0].skipped, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 result: 0 fire, 0 error, 0 pass, 0 skip, 1 stub"), "{stdout}");
    assert!(!stdout.contains("<?xml"), "{stdout}");
}

/// A run's duration is the whole run's, the preflight of a slow child
/// included: an interrupted run of 2.2 s once reported `in 0.17s`.
#[test]
fn a_run_lasts_from_its_start_with_the_preflight() {
    let dir = scratch();
    let slow = dir.path().join("slow-child");
    let text = format!("#!/bin/sh\nsleep 1\nexec {} child \"$@\"\n", env!("CARGO_BIN_EXE_crashcells"));
    std::fs::write(&slow, text).unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let catalog = crate::common::stub_catalog(dir.path());
    let args = ["run", "--cell", "4", "--seed", "1", "--catalog", &catalog, "--child", slow.to_str().unwrap()];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 3, "a stub alone: {report:#}");
    let ms = report["duration_ms"].as_u64().unwrap();
    assert!(ms >= 1000, "the preflight took a second, the run {ms} ms");
}

/// A leg whose child applies the configuration of an earlier leg (the
/// resolver's `default` leg picks WAL at FULL, as the `wal` leg asks) is
/// judged once: its result is the earlier leg's, labelled with it in the
/// JSON and in every rendering; `--every-leg` runs it on its own.
#[test]
fn a_leg_of_an_earlier_legs_configuration_is_judged_with_it_unless_every_leg() {
    let dir = scratch();
    let args = ["run", "--cell", "1", "--kill", "syscall", "--points", "2", "--refire", "0", "--seed", SEED];
    let (code, json) = run_json(&args, dir.path());
    assert_eq!(code, 0, "{json:#}");
    let report: Report = serde_json::from_value(json).unwrap();
    let judged = |r: &Report| -> Vec<(String, Option<String>)> {
        r.results.iter().map(|r| (r.leg.clone(), r.judged_with.as_ref().map(|w| w.leg.clone()))).collect()
    };
    let legs = |l: [(&str, Option<&str>); 3]| l.map(|(a, b)| (a.to_string(), b.map(String::from))).to_vec();
    assert_eq!(judged(&report), legs([("default", None), ("delete", None), ("wal", Some("default"))]));
    let (default, wal) = (&report.results[0], &report.results[2]);
    let with = wal.judged_with.as_ref().unwrap();
    assert_eq!(with.configuration, format!("wal/full, SQLite {}", report.sqlite_version));
    assert_eq!((wal.verdict, &wal.kill_points, &wal.repro), (default.verdict, &default.kill_points, &default.repro));
    assert_eq!((wal.requested_mode, wal.finding.fingerprint.as_ref()), (Some(JournalMode::Wal), None));
    let from = dir.path().join("judged-once.json");
    std::fs::write(&from, report.to_json()).unwrap();
    let render = |format: &str| {
        let out = bin().args(["report", "--from"]).arg(&from).args(["--format", format]).env("NO_COLOR", "1").output();
        String::from_utf8(out.unwrap().stdout).unwrap()
    };
    settings(dir.path(), &report).bind(|| insta::assert_snapshot!("judged_once.human", render("human")));
    let label = "judged with leg `default`: the same applied configuration, wal/full, SQLite";
    assert!(render("markdown").contains(&format!("- Leg `wal`: {label}")), "{}", render("markdown"));
    assert!(render("junit").contains(label), "{}", render("junit"));
    let (code, json) = run_json(&[&args[..], &["--every-leg"]].concat(), dir.path());
    assert_eq!(code, 0, "{json:#}");
    let every: Report = serde_json::from_value(json).unwrap();
    assert_eq!(judged(&every), legs([("default", None), ("delete", None), ("wal", None)]));
    assert!(every.results[2].repro.contains("--leg wal"), "{}", every.results[2].repro);
}
