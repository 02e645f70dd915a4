//! Evidence and reproduction, as a maintainer meets them after a fire: the
//! folder a fire or an error keeps, nothing left by passing trials, and a
//! `repro` command that fires again.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{bin, run, run_json, scratch};

/// The fired or errored results of a report.
fn decisive(report: &Value) -> Vec<&Value> {
    report["results"].as_array().unwrap().iter().filter(|r| r["verdict"] == "fire" || r["verdict"] == "error").collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Checks a kept folder: the crash state, the ack journal, the child's
/// stderr, the timeline and the result as JSON, equal to the report's result.
fn check_evidence(r: &Value) {
    let dir = PathBuf::from(r["evidence"].as_str().unwrap_or_else(|| panic!("no evidence: {r:#}")));
    let files = files_in(&dir);
    for name in ["store.db", "acks.ndjson", "child.stderr", "result.json", "timeline.html"] {
        assert!(files.contains(&name.to_string()), "{name} missing in {}: {files:?}", dir.display());
    }
    // The child's connection never closed, so the WAL it wrote is part of the
    // crash state; a recovery pass on the original would have removed it.
    if r["effective_mode"] == "wal" {
        assert!(files.contains(&"store.db-wal".to_string()), "no -wal in {}: {files:?}", dir.display());
    }
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(r["timeline"].as_str(), Some(dir.join("timeline.html").to_str().unwrap()), "the report links it");
    for field in ["cell", "leg", "verdict", "reason", "repro", "evidence", "timeline"] {
        assert_eq!(kept[field], r[field], "result.json differs in {field}");
    }
}

#[test]
fn a_fire_keeps_the_crash_state_and_passes_leave_nothing_behind() {
    let dir = scratch();
    let args = ["run", "--cell", "1", "--leg", "wal", "--leg", "delete", "--mutant", "drop-append", "--seed", "21"];
    let catalog = crate::common::short_catalog(dir.path());
    let args = [&args[..], &["--kill", "timed", "--catalog", catalog.to_str().unwrap()]].concat();
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 1, "{report:#}");
    let fired = decisive(&report);
    assert_eq!(fired.len(), 2, "{report:#}");
    for r in &fired {
        check_evidence(r);
        for pass in ["recovery-1", "recovery-2"] {
            let recovered = Path::new(r["evidence"].as_str().unwrap()).join(pass).join("store.db");
            assert!(recovered.is_file(), "each recovery pass's own copy is kept too: {pass}");
        }
    }
    let run_folder = Path::new(fired[0]["evidence"].as_str().unwrap()).parent().unwrap().to_path_buf();
    assert_eq!(files_in(&run_folder), ["prefix-durability-delete-timed", "prefix-durability-wal-timed"]);
    assert_eq!(files_in(dir.path()), ["evidence"], "the run's work folder is gone");

    // Passing trials and kill points leave nothing, evidence folder included.
    let clean = scratch();
    let args =
        ["run", "--cell", "1", "--cell", "3", "--leg", "delete", "--trials", "2", "--points", "3", "--seed", "21"];
    let (code, report) = run_json(&args, clean.path());
    assert_eq!(code, 0, "{report:#}");
    assert!(files_in(clean.path()).is_empty(), "a passing run left {:?}", files_in(clean.path()));
}

#[test]
fn an_error_keeps_its_evidence_and_its_repro_errs_again() {
    let dir = scratch();
    let args = ["run", "--cell", "1", "--leg", "default", "--mutant", "stall", "--deadline", "1", "--seed", "5"];
    let args = [&args[..], &["--kill", "timed"]].concat();
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 2, "{report:#}");
    let errors = decisive(&report);
    assert_eq!(errors.len(), 1, "{report:#}");
    check_evidence(errors[0]);
    let acks = std::fs::read_to_string(Path::new(errors[0]["evidence"].as_str().unwrap()).join("acks.ndjson")).unwrap();
    assert_eq!(acks.lines().count(), 6, "the ready record and the stall mutant's 5 acks: {acks}");
    let again = rerun(errors[0]["repro"].as_str().unwrap(), dir.path());
    assert_eq!(again["summary"]["error"], 1, "{again:#}");
}

/// Runs a `repro` line as a user pastes it, with this build's binary for the
/// leading `crashcells` and private scratch folders.
pub fn rerun(repro: &str, scratch: &Path) -> Value {
    assert!(!repro.contains('\''), "this helper splits on spaces: {repro}");
    let words: Vec<&str> = repro.split(' ').collect();
    assert_eq!(words[0], "crashcells", "{repro}");
    let out = bin()
        .args(&words[1..])
        .arg("--workdir")
        .arg(scratch)
        .arg("--evidence")
        .arg(scratch.join("evidence-rerun"))
        .args(["--format", "json"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{repro}: no JSON report ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

/// drop-append drops m1: a timed trial and the sweep's last kill point
/// (the one after m1's ack) both fire, and each repro fires again; the
/// timed fire's repro is labelled and points to the syscall one.
#[test]
fn a_fired_repro_fires_again_with_the_same_kill() {
    let dir = scratch();
    let args = ["run", "--cell", "1", "--leg", "delete", "--mutant", "drop-append", "--seed", "22", "--refire", "3"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 1, "{report:#}");
    let fired = decisive(&report);
    assert_eq!(fired.len(), 2, "timed and syscall both fire: {report:#}");
    let (timed, syscall) = (fired[0], fired[1]);
    assert_eq!((&timed["kill"], &syscall["kill"]), (&"timed".into(), &"syscall".into()));
    assert_eq!(timed["syscall_repro"], syscall["repro"], "{timed:#}");
    assert!(timed["repro_note"].as_str().unwrap().contains("may not fire again"), "{timed:#}");
    assert!(syscall["repro_note"].is_null(), "a kill point's repro needs no note");
    // Each fire's repro was rerun in the run: a deterministic mutant's kill
    // point fires every time; a timed kill's count is the scheduler's.
    assert_eq!(syscall["refire"], serde_json::json!({"runs": 3, "fired": 3}), "{syscall:#}");
    assert_eq!(timed["refire"]["runs"], 3, "{timed:#}");
    assert!(timed["refire"]["fired"].as_u64().is_some_and(|k| k <= 3), "{timed:#}");
    for fired in fired {
        let repro = fired["repro"].as_str().unwrap();
        let again = rerun(repro, dir.path());
        let results = again["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "the repro reruns one result: {again:#}");
        let r = &results[0];
        for field in ["cell", "leg", "kill", "verdict", "reason", "repro", "mutant", "clause"] {
            assert_eq!(r[field], fired[field], "{field} differs after `{repro}`");
        }
        assert_eq!((&again["seed"], &again["matrix"]), (&report["seed"], &report["matrix"]));
        let trial = |r: &Value| r["kill_points"].as_array().unwrap().last().unwrap()["trial"].clone();
        assert_eq!(trial(r), trial(fired), "the same trial");
        assert_eq!(r["trials"], 1);
    }
}

#[test]
fn no_evidence_folder_is_made_before_a_fire() {
    let dir = scratch();
    let stubs = scratch();
    let catalog = crate::common::stub_catalog(stubs.path());
    let out = run(&["run", "--cell", "4", "--seed", "1", "--catalog", &catalog], dir.path());
    assert_eq!(out.status.code(), Some(3));
    assert!(files_in(dir.path()).is_empty());
}

/// A `--child` given with a path relative to the folder the run started in
/// (`python3 tests/adapters/tiny.py` from the checkout) gives repros that
/// name that folder (`--cwd`, absolute), so that they run from any other;
/// the report records the folder.
#[test]
fn a_child_repro_runs_from_any_folder() {
    let dir = scratch();
    let root = env!("CARGO_MANIFEST_DIR");
    let catalog = crate::common::short_catalog(dir.path());
    let args = ["run", "--child", "python3 tests/adapters/tiny.py", "--cell", "1", "--leg", "default"];
    let extra = ["--kill", "timed", "--trials", "1", "--seed", "3", "--catalog", catalog.to_str().unwrap()];
    let mut cmd = bin();
    cmd.args(args).args(extra).arg("--workdir").arg(dir.path()).arg("--evidence").arg(dir.path().join("ev"));
    let out = cmd.args(["--format", "json"]).current_dir(root).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["start_folder"], root);
    let repro = report["results"][0]["repro"].as_str().unwrap();
    // The tiny store has no fork server and no warm pool: exec'd, and its repro says so.
    let tail = format!("--child 'python3 tests/adapters/tiny.py' --cwd {root} --fork-server off --warm-pool off");
    assert!(repro.ends_with(&tail), "{repro}");
    assert!(!report["command"].as_str().unwrap().contains("--cwd"), "the start folder is the run's, not its command's");

    // Pasted in another folder, as a shell reads it.
    let line = repro.replacen("crashcells", env!("CARGO_BIN_EXE_crashcells"), 1);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{line} --workdir \"$1\" --evidence \"$1/ev-again\" --format json"))
        .args(["sh", dir.path().to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{repro}: {}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["results"][0]["verdict"], "pass", "{again:#}");
}

/// The names README's evidence layout gives, as patterns (`N` a number or
/// a racer), each the first part of its path (`recovery-N/` a folder).
fn readme_evidence_names() -> Vec<regex::Regex> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme.split("<!-- evidence-layout -->\n```text\n").nth(1).expect("the layout block");
    let block = &block[..block.find("```").unwrap()];
    // A file (`store.db-wal`, `dump-N.json`) or a folder (`recovery-N/`).
    let name = regex::Regex::new(r"[a-zA-Z][a-zA-Z0-9-]*(?:\.[a-z][a-z-]*)+|[a-z][a-zA-Z0-9-]*/").unwrap();
    name.find_iter(block)
        .map(|m| {
            let first = m.as_str().trim_end_matches('/');
            let pattern = regex::escape(first).replace("rN", r"r\d+").replace('N', r"\d+");
            regex::Regex::new(&format!("^{pattern}$")).unwrap()
        })
        .collect()
}

/// Every file a fire's evidence folder holds is named in README's layout
/// (cell 1 under a syscall kill, cell 5 with its transport, cell 2's race).
#[test]
fn readme_names_every_file_of_an_evidence_folder() {
    let names = readme_evidence_names();
    assert!(names.len() > 15, "{names:?}");
    let dir = scratch();
    for args in [
        &["--cell", "1", "--kill", "syscall", "--mutant", "ack-before-commit", "--leg", "delete", "--seed", "3"][..],
        &["--cell", "5", "--kill", "syscall", "--mutant", "resend-on-catch-up", "--leg", "wal", "--seed", "3"],
        &["--cell", "2", "--kill", "none", "--mutant", "racy-claim", "--seed", "3"],
        &[
            "--cell",
            "1",
            "--kill",
            "fault",
            "--mutant",
            "ack-despite-io-error",
            "--leg",
            "wal",
            "--seed",
            "3",
            "--point",
            "51",
        ],
    ] {
        let (code, report) = run_json(&[&["run"][..], args].concat(), dir.path());
        assert_eq!(code, 1, "{args:?}: {report:#}");
        for r in decisive(&report) {
            let folder = PathBuf::from(r["evidence"].as_str().unwrap());
            for entry in files_in(&folder) {
                assert!(names.iter().any(|n| n.is_match(&entry)), "README's evidence layout lacks {entry} ({args:?})");
            }
        }
    }
}

/// Every syscall kill's evidence holds `kill-point.json`, cell 2's too:
/// there racer r0 is killed at its call, and the race's step wrote no file
/// of its own; the file says where the kill the result reports landed.
#[test]
fn a_race_killed_at_a_call_keeps_its_kill_point() {
    let dir = scratch();
    let args = ["run", "--cell", "2", "--kill", "syscall", "--mutant", "split-claim", "--seed", "3"];
    let (code, report) = run_json(&args, dir.path());
    let r = &report["results"][0];
    if r["verdict"] == "skip" {
        return crate::common::tracing_refused(&r["reason"]);
    }
    assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "{report:#}");
    let folder = PathBuf::from(r["evidence"].as_str().unwrap());
    let text = std::fs::read_to_string(folder.join("kill-point.json"))
        .unwrap_or_else(|e| panic!("kill-point.json in {}: {e}", folder.display()));
    let kept: Value = serde_json::from_str(&text).unwrap();
    let reported = r["kill_points"].as_array().unwrap().last().unwrap();
    for field in ["ordinal", "syscall", "file", "offset", "len"] {
        assert_eq!(kept[field], reported[field], "{field}: {text}");
    }
    assert!(kept["ordinal"].is_u64(), "{text}");
}

/// Runs `line` as a shell reads it, in `dir`, with only `path` as PATH and
/// the environment `common::bin()` clears; its JSON report.
fn run_as_printed(line: &str, dir: &Path, path: &str) -> Value {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{line} --workdir \"$1\" --evidence \"$1/ev-again\" --format json"))
        .args(["sh", dir.to_str().unwrap()])
        .current_dir(dir)
        .env("PATH", path)
        .env("CRASHCELLS_REFIRE", "1")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{line}: no report ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

/// A timed fire of cell 1 (drop-append, one short trial) started by
/// `program`, with only the system's folders on PATH: its one result.
fn fire_off_path(program: &Path, dir: &Path) -> Value {
    let catalog = crate::common::short_catalog(dir);
    let args = ["run", "--cell", "1", "--leg", "default", "--kill", "timed", "--trials", "1", "--seed", "3"];
    let out = std::process::Command::new(program)
        .args(args)
        .args(["--mutant", "drop-append", "--catalog", catalog.to_str().unwrap(), "--format", "json"])
        .arg("--workdir")
        .arg(dir)
        .arg("--evidence")
        .arg(dir.join("ev"))
        .env("PATH", SYSTEM_PATH)
        .env("CRASHCELLS_REFIRE", "1")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["results"][0]["verdict"], "fire", "{report:#}");
    report["results"][0].clone()
}

/// A PATH with no `crashcells` of this build on it.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A copy of the built binary in `dir/name/crashcells`.
fn copy_binary(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let copy = folder.join("crashcells");
    std::fs::copy(env!("CARGO_BIN_EXE_crashcells"), &copy).unwrap();
    copy
}

/// A binary run from a folder PATH does not hold (a virtual environment's
/// `bin/` not activated, a release unpacked anywhere) prints repros that
/// start with its absolute path, and such a line, pasted in another
/// folder with the same PATH, fires again.
#[test]
fn repro_from_a_folder_off_path() {
    let dir = scratch();
    let copy = copy_binary(dir.path(), "my tools");
    let fire = fire_off_path(&copy, dir.path());
    let repro = fire["repro"].as_str().unwrap();
    let named = format!("'{}' run --cell prefix-durability ", copy.canonicalize().unwrap().display());
    assert!(repro.starts_with(&named), "{repro}");
    let elsewhere = scratch();
    let again = run_as_printed(repro, elsewhere.path(), SYSTEM_PATH);
    assert_eq!(again["results"][0]["verdict"], "fire", "{repro}: {again:#}");
}

/// A launcher that execs the binary from a folder nobody types (the npm
/// package's `bin`) names itself in `CRASHCELLS_INVOKED_AS`: the repro
/// starts with the launcher, and runs as printed.
#[test]
fn repro_through_a_launcher_names_the_launcher() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let copy = copy_binary(dir.path(), "platform-package");
    let launcher = dir.path().join("launch-crashcells");
    let script = format!("#!/bin/sh\nCRASHCELLS_INVOKED_AS=\"$0\" exec '{}' \"$@\"\n", copy.display());
    std::fs::write(&launcher, script).unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fire = fire_off_path(&launcher, dir.path());
    let repro = fire["repro"].as_str().unwrap();
    assert!(repro.starts_with(&format!("{} run ", launcher.canonicalize().unwrap().display())), "{repro}");
    let elsewhere = scratch();
    let again = run_as_printed(repro, elsewhere.path(), SYSTEM_PATH);
    assert_eq!(again["results"][0]["verdict"], "fire", "{repro}: {again:#}");
}
