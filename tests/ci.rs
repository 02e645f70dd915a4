//! What a CI maintainer relies on: a run split over runners with
//! `--partition k/n` and merged back with `report --from` into the report
//! of the whole run, the Markdown appended to `GITHUB_STEP_SUMMARY` once
//! per run, the commit and CI run recorded into the report,
//! `--out` files a CI uploader can read, output into a closed pipe, and
//! `prune` of old evidence.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::common::{bin, run, scratch};

/// A short run with every kind of result it can have quickly: cell 1 with
/// the drop-append mutant (timed fires) on every leg, and cells 4 and 5 as
/// stubs (see `catalog`).
const RUN: [&str; 13] =
    ["run", "--cell", "1", "--cell", "4", "--cell", "5", "--kill", "timed", "--trials", "1", "--seed", "41"];

/// Runs `RUN` (plus `extra`) writing JSON to `out`; returns the exit code.
fn run_to(out: &Path, extra: &[&str], dir: &Path) -> i32 {
    let catalog = catalog(dir);
    let mut args = RUN.to_vec();
    args.extend(["--catalog", &catalog]);
    args.extend(["--mutant", "drop-append", "--format", "json", "--out", out.to_str().unwrap()]);
    args.extend(extra);
    let o = run(&args, dir);
    assert!(out.is_file(), "no report: {}", String::from_utf8_lossy(&o.stderr));
    o.status.code().unwrap()
}

/// Cell 1 with a short kill window beside cells 4 and 5 as stubs: the
/// built-in catalog has no stub left, and a stub is the one result that
/// runs nothing.
fn catalog(dir: &Path) -> String {
    let stubs = crate::common::stub_catalog(dir);
    let short = crate::common::short_catalog(dir);
    let prefix = short.join("1-prefix-durability.toml");
    std::fs::copy(&prefix, Path::new(&stubs).join("1-prefix-durability.toml")).expect("cell 1 beside the stubs");
    stubs
}

/// `run` of cell 4 as a stub (a result that runs nothing: exit 3), its
/// JSON report written to `out`.
fn stub_run(dir: &Path, out: &Path) -> Vec<String> {
    let out = out.to_str().expect("a UTF-8 path");
    ["run", "--cell", "4", "--seed", "1", "--catalog", &catalog(dir), "--format", "json", "--out", out]
        .map(String::from)
        .to_vec()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What identifies a result and its verdict, whatever machine ran it.
fn keys(report: &Value) -> Vec<String> {
    let results = report["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| format!("{} {} {} {} {}", r["cell"], r["leg"], r["kill"], r["verdict"], r["repro"]))
        .collect()
}

#[test]
fn partitions_are_disjoint_their_union_is_the_run_and_report_merges_them() {
    let dir = scratch();
    let p = |name: &str| dir.path().join(name);
    let whole = run_to(&p("whole.json"), &[], dir.path());
    let one = run_to(&p("1.json"), &["--partition", "1/2"], dir.path());
    let two = run_to(&p("2.json"), &["--partition", "2/2"], dir.path());
    assert_eq!((whole, one, two), (1, 1, 1), "each share holds a timed fire");
    let (whole, one, two) = (read(&p("whole.json")), read(&p("1.json")), read(&p("2.json")));
    let (k1, k2) = (keys(&one), keys(&two));
    assert_eq!((k1.len(), k2.len()), (2, 3), "5 results, shared 2 and 3");
    assert!(k1.iter().all(|k| !k2.contains(k)), "disjoint: {k1:?} {k2:?}");
    assert_eq!([k1, k2].concat(), keys(&whole), "the union, in plan order, is the whole run");
    assert_eq!((&one["partition"], &one["planned"]), (&serde_json::json!({"k": 1, "n": 2}), &Value::from(5)));
    assert_eq!(one["command"], whole["command"], "one run: the command does not name the partition");

    let merged = bin()
        .args(["report", "--format", "json", "--from"])
        .arg(p("2.json"))
        .arg("--from")
        .arg(p("1.json"))
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", String::from_utf8_lossy(&merged.stderr));
    let merged: Value = serde_json::from_slice(&merged.stdout).unwrap();
    assert_eq!(keys(&merged), keys(&whole));
    assert_eq!(merged["summary"], whole["summary"]);
    assert_eq!((&merged["partition"], &merged["seed"]), (&Value::Null, &whole["seed"]));

    // Another run's share: one line naming the file and what differs.
    run_to(&p("other.json"), &["--partition", "2/2", "--leg", "wal"], dir.path());
    let out = bin().args(["report", "--from"]).arg(p("1.json")).arg("--from").arg(p("other.json")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("other.json: not a partition of the same run") && stderr.contains("command"), "{stderr}");
}

#[test]
fn a_partition_needs_a_seed_and_a_well_formed_share() {
    let dir = scratch();
    for (args, needle) in [
        (vec!["run", "--cell", "4", "--partition", "1/2"], "--partition needs --seed"),
        (vec!["run", "--cell", "4", "--seed", "1", "--partition", "3/2"], "not k/n"),
    ] {
        let out = run(&args, dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

/// The step summary shows a run once: `run` appends its Markdown; a step
/// that renders the run again (its JUnit) does not, and the merge job's
/// `report --step-summary` does, for its own page.
#[test]
fn the_step_summary_gets_each_run_once_and_a_report_only_when_asked() {
    let dir = scratch();
    let summary = dir.path().join("summary.md");
    let json = dir.path().join("run.json");
    let out = bin()
        .args(stub_run(dir.path(), &json))
        .arg("--evidence")
        .arg(dir.path().join("ev"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "a stub alone");
    let heading = "## crashcells: 0 fire, 0 error, 0 pass, 0 skip, 1 stub";
    let sections = || std::fs::read_to_string(&summary).unwrap().matches(heading).count();
    assert_eq!(sections(), 1, "the run's own");
    let report = |extra: &[&str]| {
        let mut cmd = bin();
        cmd.args(["report", "--format", "junit", "--out"]).arg(dir.path().join("run.xml")).arg("--from").arg(&json);
        cmd.args(extra).env("GITHUB_STEP_SUMMARY", &summary).output().unwrap().status.code()
    };
    assert_eq!(report(&[]), Some(3));
    assert_eq!(sections(), 1, "rendering the JUnit of a run does not show the run again");
    assert_eq!(report(&["--step-summary"]), Some(3));
    assert_eq!(sections(), 2, "the merge job asks for it");
}

/// The commit and the CI run are recorded when the run is made, so that
/// `report --from` renders them anywhere, outside CI too.
#[test]
fn the_commit_and_the_ci_run_travel_with_the_report() {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let out = bin()
        .args(stub_run(dir.path(), &json))
        .arg("--evidence")
        .arg(dir.path().join("ev"))
        .env("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567")
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_REPOSITORY", "team/store")
        .env("GITHUB_RUN_ID", "42")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read(&json)["ci"]["run_url"], "https://github.example/team/store/actions/runs/42");
    let md = bin().args(["report", "--format", "markdown", "--from"]).arg(&json).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| CI run | https://github.example/team/store/actions/runs/42 |"), "{md}");
    assert!(md.contains("(https://github.example/team/store/commit/0123456789abcdef0123456789abcdef01234567)"), "{md}");
}

/// Runs `crashcells args` under `umask`, as a CI step would.
fn under_umask(umask: libc::mode_t, args: &[&str], dir: &Path) -> std::process::Output {
    let mut cmd = bin();
    cmd.args(args).arg("--workdir").arg(dir).arg("--evidence").arg(dir.join("ev"));
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(umask);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn out_files_honour_the_umask() {
    let dir = scratch();
    for (umask, mode) in [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)] {
        let path = dir.path().join(format!("run-{umask:o}.json"));
        let args = stub_run(dir.path(), &path);
        let out = under_umask(umask, &args.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
        assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
        let got = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "umask {umask:o}: mode {got:o}");
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let args = stub_run(dir.path(), &json);
    let made = run(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
    assert_eq!(made.status.code(), Some(3));
    let json = json.to_str().unwrap();
    for (args, code) in
        [(vec!["list"], 0), (vec!["--help"], 0), (vec!["report", "--from", json, "--format", "markdown"], 3)]
    {
        // `| head -c0`: the reader is gone before the first byte.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = bin().args(&args).stdout(Stdio::from(writer)).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn prune_keeps_the_newest_runs_evidence() {
    let dir = scratch();
    let ev = dir.path().join("ev");
    for id in ["1700000000-1", "1700000001-2", "1700000002-3"] {
        std::fs::create_dir_all(ev.join(id).join("prefix-durability-wal-timed")).unwrap();
    }
    let out = bin().args(["prune", "--keep", "1", "--evidence"]).arg(&ev).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 removed, 1 kept"));
    let left: Vec<_> = std::fs::read_dir(&ev).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["1700000002-3"]);
}

/// A CI log is not a terminal: it gets the run's first line and what went
/// wrong, no progress bar, no line per result and no colour.
#[test]
fn a_ci_log_gets_no_progress() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let args = ["run", "--cell", "1", "--leg", "default", "--kill", "timed", "--trials", "2", "--seed", "1"];
    let out = run(&[&args[..], &["--catalog", catalog.to_str().unwrap()]].concat(), dir.path());
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains('\r') && !stderr.contains('\x1b'), "{stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("crashcells: run ") && lines[0].contains("seed 1, matrix default, 1 result,"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("pass ")).count(), 1, "the result once: {stdout}");
}
