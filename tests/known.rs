//! Fingerprints and known findings, as a gate meets them: the same finding
//! has the same fingerprint under two seeds and on two legs of one mode; a
//! run whose every fire is known exits 0 and counts them as `known`; a known
//! finding that a whole sweep of the reference store no longer fires is
//! gone (exit 1, named in every format); a timed one is only noted; a bad
//! file is one line and exit 2 before any child runs; `report` judges a
//! saved run against a file and shows only what is new.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{bin, run, run_json, scratch};

/// Cell 3's finding on the `delete` leg under the `split-rotation` mutant.
const ROTATION: &str = "rotation-atomicity/delete/full/syscall/orphan";

/// The fires of a report, as `(leg, kill, fingerprint, kill point)`.
fn fires(report: &Value) -> Vec<(String, String, String, u64)> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] == "fire" || r["verdict"] == "known")
        .map(|r| {
            let point = r["kill_points"].as_array().and_then(|k| k.last()).map_or(0, |k| k["trial"].as_u64().unwrap());
            (s(&r["leg"]), s(&r["kill"]), s(&r["fingerprint"]), point)
        })
        .collect()
}

#[test]
fn the_same_finding_has_the_same_fingerprint_under_two_seeds_and_on_two_legs_of_one_mode() {
    let dir = scratch();
    // Two samples of the sweep, drawn with two seeds: the fire lands at
    // other kill points, and is the same finding.
    let sample = |seed: &str| {
        let args = ["run", "--cell", "3", "--leg", "delete", "--kill", "syscall", "--mutant", "split-rotation"];
        let (code, report) = run_json(&[&args[..], &["--points", "80", "--seed", seed]].concat(), dir.path());
        assert_eq!(code, 1, "{report:#}");
        fires(&report).remove(0)
    };
    let (one, two) = (sample("1"), sample("2"));
    assert_ne!(one.3, two.3, "the seeds drew other points: {one:?} {two:?}");
    assert_eq!((one.2.as_str(), two.2.as_str()), (ROTATION, ROTATION));
    // The resolver's default and `wal` run one mode and level: one finding.
    // Twenty points of each sweep, where both legs fire with seed 3: the
    // full sweep took twice as long to find the same two fires.
    let args = ["run", "--cell", "1", "--leg", "default", "--leg", "wal", "--kill", "syscall", "--points", "20"];
    let (code, report) = run_json(&[&args[..], &["--mutant", "ack-before-commit", "--seed", "3"]].concat(), dir.path());
    assert_eq!(code, 1, "{report:#}");
    let prints: Vec<String> = fires(&report).into_iter().map(|f| f.2).collect();
    assert_eq!(prints, ["prefix-durability/wal/full/syscall/lost-ack"; 2], "{report:#}");
}

/// A known-findings file in `dir` listing `fingerprints`, each filed as `#31`.
fn known_file(dir: &Path, fingerprints: &[&str]) -> PathBuf {
    let path = dir.join("known.toml");
    let text: String = fingerprints
        .iter()
        .map(|f| format!("[[finding]]\nfingerprint = \"{f}\"\nissue = \"#31\"\nnote = \"filed, being fixed\"\n\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `crashcells report --from FILE ARGS...`: exit code and stdout.
fn report(from: &Path, args: &[&str]) -> (i32, String) {
    let out = bin().args(["report", "--from"]).arg(from).args(args).env("NO_COLOR", "1").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_run_whose_every_fire_is_known_exits_0_and_counts_them_in_every_format() {
    let dir = scratch();
    let known = known_file(dir.path(), &[ROTATION]);
    let json = dir.path().join("run.json");
    let args = ["run", "--cell", "3", "--leg", "delete", "--kill", "syscall", "--mutant", "split-rotation"];
    let more = ["--seed", "5", "--known", known.to_str().unwrap(), "--format", "json", "--out", json.to_str().unwrap()];
    let out = run(&[&args[..], &more[..]].concat(), dir.path());
    let human = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{human}{}", String::from_utf8_lossy(&out.stderr));
    assert!(human.contains("1 result: 0 fire, 0 error, 1 known, 0 pass"), "{human}");
    assert!(human.contains("known: issue #31: filed, being fixed") && human.contains(ROTATION), "{human}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!((&saved["summary"]["known"], &saved["results"][0]["verdict"]), (&Value::from(1), &Value::from("known")));
    assert_eq!(saved["results"][0]["known"]["issue"], "#31");
    assert_eq!(saved["known_findings"][0]["status"], "fired");
    assert_eq!(saved["known_file"], known.to_str().unwrap());
    // A known fire is not refired: its verdict is the same without the rate.
    assert!(saved["results"][0]["refire"].is_null(), "{:#}", saved["results"][0]);
    // Rendered again: the same verdict in every format, and the same exit code.
    let (code, xml) = report(&json, &["--format", "junit"]);
    assert_eq!(code, 0);
    assert!(xml.contains("<skipped message=\"known finding, issue #31 (filed, being fixed): trial"), "{xml}");
    assert!(xml.contains("type=\"known\"/>"), "{xml}");
    assert!(xml.contains("failures=\"0\""), "a known fire is no failure: {xml}");
    let (_, md) = report(&json, &["--format", "markdown"]);
    assert!(md.starts_with("## crashcells: 0 fire, 0 error, 1 known,"), "{md}");
    assert!(md.contains(&format!("| `{ROTATION}` | #31 | fired |")), "{md}");
    assert!(md.contains("| known | 3 `rotation-atomicity` |") && !md.contains("<details>"), "{md}");
    // Judged again against a file that lists nothing: a new fire.
    let empty = dir.path().join("none.toml");
    std::fs::write(&empty, "").unwrap();
    let (code, md) = report(&json, &["--known", empty.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(code, 1, "{md}");
    assert!(md.contains(&format!("### fire: `{ROTATION}` on leg `delete`")), "the fingerprint heads the fire: {md}");
}

#[test]
fn a_known_finding_a_whole_sweep_no_longer_fires_is_gone_exit_1_named_in_every_format() {
    let dir = scratch();
    let known = known_file(dir.path(), &[ROTATION, "rotation-atomicity/delete/full/timed/orphan"]);
    let json = dir.path().join("run.json");
    // The reference store: its rotation is atomic, so cell 3 does not fire.
    let args = ["run", "--cell", "3", "--leg", "delete", "--trials", "1", "--seed", "5", "--known"];
    let out = run(
        &[&args[..], &[known.to_str().unwrap(), "--format", "json", "--out", json.to_str().unwrap()]].concat(),
        dir.path(),
    );
    let human = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{human}");
    let gone = format!("known finding {ROTATION} (issue #31) did not fire: the file is wrong");
    assert!(human.contains(&format!("GONE: {gone} (the whole syscall sweep of leg `delete`")), "{human}");
    // The timed finding did not fire either: under timed kills, only noted.
    assert!(
        human.contains("note: known finding rotation-atomicity/delete/full/timed/orphan (issue #31) did not fire"),
        "{human}"
    );
    assert!(human.contains("0 fire, 0 error, 1 gone, 2 pass"), "{human}");
    for format in crashcells::report::Format::all().iter().map(|f| f.name()) {
        let format = format.as_str();
        let (code, text) = report(&json, &["--format", format]);
        assert_eq!(code, 1, "{format}");
        let named = if format == "json" { text.contains("\"status\": \"gone\"") } else { text.contains(&gone) };
        assert!(named, "{format}: {text}");
    }
    let (_, xml) = report(&json, &["--format", "junit"]);
    assert!(xml.contains(&format!("<testcase name=\"known/{ROTATION}\" classname=\"known\">")), "{xml}");
    assert!(xml.contains(&format!("<failure message=\"{gone}")) && xml.contains("type=\"gone\"/>"), "{xml}");
    // New only: the gone finding is the news; no fire, so no row.
    let (code, md) = report(&json, &["--new-only", "--format", "markdown"]);
    assert_eq!(code, 1);
    assert!(
        md.contains("**New only**: no fire that is not known and 1 known finding gone, of the run's 2 results"),
        "{md}"
    );
    assert!(md.contains("| **gone** |") && !md.contains("| pass |"), "{md}");
}

/// A run with a new fire, a known fire, a gone finding and two that did
/// not run here: cell 1 under `ack-before-commit` fires on `delete` (known)
/// and `wal` (new), cell 3's whole sweep of `delete` passes (its listed
/// orphan is gone). Two real runs, put together as one report.
fn mixed_run(dir: &Path) -> (PathBuf, PathBuf) {
    let json = |name: &str, args: &[&str]| {
        let path = dir.join(name);
        let more = ["--kill", "syscall", "--seed", "5", "--format", "json", "--out", path.to_str().unwrap()];
        run(&[args, &more[..]].concat(), dir);
        serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let mut fires =
        json("fires.json", &["run", "--cell", "1", "--leg", "delete", "--leg", "wal", "--mutant", "ack-before-commit"]);
    let pass = json("pass.json", &["run", "--cell", "3", "--leg", "delete"]);
    let results = [fires["results"].as_array().unwrap().clone(), pass["results"].as_array().unwrap().clone()].concat();
    (fires["results"], fires["planned"]) = (Value::from(results), Value::from(3));
    let path = dir.join("run.json");
    std::fs::write(&path, fires.to_string()).unwrap();
    let known = known_file(
        dir,
        &[
            "prefix-durability/delete/full/syscall/lost-ack",
            ROTATION,
            "rotation-atomicity/delete/full/timed/orphan",
            "outbox-exactly-once/wal/full/syscall/double-delivery",
        ],
    );
    (path, known)
}

#[test]
fn a_new_only_post_says_only_what_is_true_of_the_run() {
    let dir = scratch();
    let (json, known) = mixed_run(dir.path());
    let (code, md) = report(&json, &["--known", known.to_str().unwrap(), "--new-only", "--format", "markdown"]);
    assert_eq!(code, 1, "a new fire and a gone finding: {md}");
    let new = "prefix-durability/wal/full/syscall/lost-ack";
    // Every sentence of the post, against the run: the whole run's counts...
    assert!(md.starts_with("## crashcells: 1 fire, 0 error, 1 known, 1 gone, 1 pass, 0 skip, 0 stub\n"), "{md}");
    assert!(
        md.contains(
            "**New only**: 1 fire not known and 1 known finding gone, of the run's 3 results; the counts above are \
             the whole run's."
        ),
        "{md}"
    );
    // ...the modes every result ran, not only the shown ones'...
    assert!(md.contains("| journal modes | delete, wal |"), "{md}");
    // ...the file as it is, the gone finding named, the new fire alone in the table.
    assert!(
        md.contains(&format!("`{}` lists 4 known findings (1 fired, 1 gone, 2 did not run here).", known.display())),
        "{md}"
    );
    assert!(md.contains(&format!("**Gone:** known finding {ROTATION} (issue #31) did not fire")), "{md}");
    let listed = md.lines().filter(|l| l.starts_with("| `") && l.contains("| #31 |")).count();
    assert_eq!(listed, 1, "one known finding listed, the gone one: {md}");
    assert!(md.contains(&format!("| `{ROTATION}` | #31 | **gone** |")), "{md}");
    assert_eq!(md.matches("| **fire** |").count(), 1, "{md}");
    assert!(md.contains(&format!("### fire: `{new}` on leg `wal`")), "{md}");
    assert!(!md.contains("lists none") && !md.contains("none ran") && !md.contains("| known |"), "{md}");
    let whole = crashcells::model::Report::from_json("run.json", &std::fs::read_to_string(&json).unwrap()).unwrap();
    crate::reports::settings(dir.path(), &whole).bind(|| insta::assert_snapshot!("mixed_run.new_only.md", md));
    // The human rendering says the same, in its words.
    let (_, human) = report(&json, &["--known", known.to_str().unwrap(), "--new-only"]);
    assert!(human.contains("new only: 1 fire not known and 1 known finding gone, of the run's 3 results"), "{human}");
    assert!(human.contains(&format!("known findings: {} lists 4 known findings (1 fired, 1 gone", known.display())));
    // A gone finding alone: no empty table, and still the modes that ran.
    let known = known_file(
        dir.path(),
        &[ROTATION, "prefix-durability/delete/full/syscall/lost-ack", "prefix-durability/wal/full/syscall/lost-ack"],
    );
    let (code, md) = report(&json, &["--known", known.to_str().unwrap(), "--new-only", "--format", "markdown"]);
    assert_eq!(code, 1, "{md}");
    assert!(
        md.contains("**New only**: no fire that is not known and 1 known finding gone, of the run's 3 results"),
        "{md}"
    );
    assert!(md.contains("| journal modes | delete, wal |") && !md.contains("### Results"), "{md}");
    assert!(md.trim_end().ends_with("|"), "ends with the known findings' table: {md}");
    let out = bin().args(["report", "--from"]).arg(&json).args(["--new-only", "--format", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
    assert!(stderr.contains("--new-only renders human or markdown: a JSON report is the whole run"), "{stderr}");
}

#[test]
fn a_malformed_known_findings_file_is_one_line_and_exit_2_before_any_child_runs() {
    let dir = scratch();
    let bad = dir.path().join("known.toml");
    let cases = [
        (
            "[[finding]]\nfingerprint = \"a/b/c/syscall/d\"\nissue = \"#1\"\nowner = \"me\"\n",
            "entry 1: unknown field `owner`",
        ),
        ("[[finding]]\nfingerprint = \"a/b/c/syscall/d\"\n", "entry 1: missing field `issue`"),
        ("[[finding]]\nfingerprint = \"a/b/c/d\"\nissue = \"#1\"\n", "entry 1: fingerprint `a/b/c/d` has 4 words"),
        ("[finding\n", "at byte"),
        (
            "[[finding]]\nfingerprint = \"rotation-atomicty/wal/full/syscall/orphan\"\nissue = \"#1\"\n",
            "entry 1: fingerprint `rotation-atomicty/wal/full/syscall/orphan` names an unknown cell \
             `rotation-atomicty` (did you mean `rotation-atomicity`?)",
        ),
        (
            "[[finding]]\nfingerprint = \"rotation-atomicity/wall/full/syscall/orphan\"\nissue = \"#1\"\n",
            "names an unknown journal mode `wall` (did you mean `wal`?)",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(&bad, text).unwrap();
        let out = run(&["run", "--cell", "1", "--seed", "1", "--known", bad.to_str().unwrap()], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
        assert!(stderr.contains(&format!("known findings {}: ", bad.display())) && stderr.contains(needle), "{stderr}");
        assert!(out.stdout.is_empty() && !dir.path().join("evidence").exists(), "no cell ran");
    }
    let out = run(&["run", "--cell", "1", "--known", "/nonexistent/known.toml"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}
