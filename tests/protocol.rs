//! The external child protocol (docs/PROTOCOL.md): the Python store runs the
//! default gate and its mutants fire, a tiny adapter written from the
//! document passes `child-check`, and children of another protocol (or of
//! none) are refused with exit 2 and a message that says why. python3 must be
//! on PATH.

use std::process::Command;

use serde_json::Value;

use crate::common::{bin, results, run, run_json, scratch};

/// A `--child` value for a Python script of this repository.
fn python(script: &str) -> String {
    format!("python3 {}/{script}", env!("CARGO_MANIFEST_DIR"))
}

const STORE: &str = "examples/python-store/store.py";

/// The SQLite version python3 links, as the Python store reports it.
fn python_sqlite() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sqlite3; print(sqlite3.sqlite_version)"])
        .output()
        .expect("python3 on PATH");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn python_store_passes_the_default_gate_or_skips_with_reasons() {
    let dir = scratch();
    // Cells 4 and 5 have a test of their own, with fewer kill points.
    let args = ["run", "--child", &python(STORE), "--cell", "1", "--cell", "2", "--cell", "3", "--seed", "21"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["sqlite_version"], python_sqlite(), "the report names the child's SQLite");
    for id in ["prefix-durability", "consume-once", "rotation-atomicity"] {
        let rs = results(&report, id);
        assert!(!rs.is_empty(), "{id}");
        for r in rs {
            match r["verdict"].as_str().unwrap() {
                "pass" => {}
                "skip" => assert!(!r["reason"].as_str().unwrap().is_empty(), "a skip states its reason: {r:#}"),
                _ => panic!("{id} neither passed nor skipped: {r:#}"),
            }
        }
    }
    assert!(report["summary"]["pass"].as_u64().unwrap() >= 3, "{:#}", report["summary"]);
}

#[test]
fn python_store_skips_wal_only_where_its_sqlite_has_the_wal_reset_bug() {
    let dir = scratch();
    let args = ["run", "--child", &python(STORE), "--cell", "1", "--leg", "wal", "--trials", "1", "--seed", "22"];
    let (_, report) = run_json(&args, dir.path());
    let r = &results(&report, "prefix-durability")[0];
    let version: Vec<u32> = python_sqlite().split('.').map(|p| p.parse().unwrap()).collect();
    let v = (version[0], version[1], version[2]);
    let affected = ((3, 7, 0)..(3, 51, 3)).contains(&v)
        && !((3, 44, 6)..(3, 45, 0)).contains(&v)
        && !((3, 50, 7)..(3, 51, 0)).contains(&v);
    if affected {
        assert_eq!(r["verdict"], "skip", "{r:#}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("WAL-reset gate") && reason.contains(&python_sqlite()), "{reason}");
    } else {
        assert_eq!(r["verdict"], "pass", "{r:#}");
    }
}

#[test]
fn python_mutants_fire() {
    let dir = scratch();
    for (cell, mutant, needle) in
        [("1", "ack-before-commit", "was lost"), ("2", "racy-claim", "racers won"), ("3", "split-rotation", "orphan")]
    {
        let args = ["run", "--child", &python(STORE), "--cell", cell, "--leg", "default", "--mutant", mutant];
        // A run stops at its first fire. Timed kills seldom land between the
        // two commits of a split rotation (about 1 trial in 17 measured on
        // the Python store), so the bound is generous.
        let (code, report) = run_json(&[&args[..], &["--seed", "23", "--trials", "100"]].concat(), dir.path());
        assert_eq!(code, 1, "{mutant}: {report:#}");
        let fired = report["results"].as_array().unwrap().iter().find(|r| r["verdict"] == "fire");
        let fired = fired.unwrap_or_else(|| panic!("{mutant} did not fire: {report:#}"));
        assert!(fired["reason"].as_str().unwrap().contains(needle), "{mutant}: {fired:#}");
        assert!(fired["repro"].as_str().unwrap().contains("--child"), "{fired:#}");
    }
}

#[test]
fn python_store_passes_fork_determinism_and_outbox_exactly_once() {
    let dir = scratch();
    let args = ["run", "--child", &python(STORE), "--cell", "4", "--cell", "5", "--leg", "default"];
    let (code, report) =
        run_json(&[&args[..], &["--trials", "1", "--points", "6", "--seed", "25"]].concat(), dir.path());
    assert_eq!(code, 0, "{report:#}");
    for id in ["fork-determinism", "outbox-exactly-once"] {
        let rs = results(&report, id);
        assert_eq!(rs.len(), 2, "timed and syscall: {report:#}");
        for r in rs {
            let refused = r["verdict"] == "skip" && r["reason"].as_str().unwrap().contains("unavailable");
            assert!(r["verdict"] == "pass" || refused, "{r:#}");
        }
    }
}

#[test]
fn a_version_1_child_skips_the_cells_whose_operations_it_lacks() {
    let dir = scratch();
    let args = ["run", "--child", &python("tests/adapters/tiny.py"), "--cell", "4", "--cell", "5", "--leg", "default"];
    let (code, report) =
        run_json(&[&args[..], &["--trials", "1", "--points", "1", "--seed", "26"]].concat(), dir.path());
    assert_eq!(code, 3, "nothing ran: {report:#}");
    for (id, op) in [("fork-determinism", "fork"), ("outbox-exactly-once", "deliver")] {
        let rs = results(&report, id);
        assert_eq!(rs.len(), 2, "{report:#}");
        for r in rs {
            assert_eq!(r["verdict"], "skip", "{r:#}");
            assert_eq!(r["reason"], format!("the child does not implement `{op}`"), "{r:#}");
        }
    }
}

#[test]
fn child_check_checks_the_optional_operations_only_of_a_child_that_lists_them() {
    let optional = ["fork", "fork-state", "deliver", "deliver-state", "catch-up-arrived", "catch-up-missing"];
    let names = |report: &Value| -> Vec<String> {
        report["checks"].as_array().unwrap().iter().map(|c| c["check"].as_str().unwrap().to_string()).collect()
    };
    let (_, report) = child_check(&python(STORE));
    let checked = names(&report);
    assert!(optional.iter().all(|o| checked.contains(&o.to_string())), "{checked:?}");
    let (_, report) = child_check(&python("tests/adapters/tiny.py"));
    let checked = names(&report);
    assert!(optional.iter().all(|o| !checked.contains(&o.to_string())), "{checked:?}");
}

/// `child-check --format json` of `child`: exit code and report.
fn child_check(child: &str) -> (i32, Value) {
    let dir = scratch();
    let out = bin()
        .args(["child-check", "--child", child, "--format", "json", "--workdir"])
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (out.status.code().unwrap_or(-1), report)
}

fn failing(report: &Value) -> Vec<String> {
    let checks = report["checks"].as_array().expect("checks");
    checks.iter().filter(|c| c["ok"] == false).map(|c| format!("{}: {}", c["check"], c["detail"])).collect()
}

#[test]
fn a_tiny_adapter_written_from_the_document_passes_child_check() {
    let (code, report) = child_check(&python("tests/adapters/tiny.py"));
    assert_eq!(failing(&report), Vec::<String>::new(), "{report:#}");
    assert_eq!((code, &report["conforming"]), (0, &Value::Bool(true)), "{report:#}");
    assert_eq!(report["schema"], "crashcells.child-check.v1");
}

#[test]
fn the_python_store_and_the_reference_child_pass_child_check() {
    for child in [python(STORE), String::new()] {
        let (code, report) = if child.is_empty() {
            let out = bin().args(["child-check", "--format", "json"]).output().unwrap();
            (out.status.code().unwrap(), serde_json::from_slice(&out.stdout).unwrap())
        } else {
            child_check(&child)
        };
        assert_eq!((code, failing(&report)), (0, Vec::new()), "{child}: {report:#}");
    }
}

#[test]
fn child_check_names_what_a_broken_child_gets_wrong() {
    let cases = [
        ("version", "protocol-version", "speaks protocol 3"),
        ("journal", "ready", "READY!!"),
        ("stdout", "ready", "on stdout"),
    ];
    for (how, check, needle) in cases {
        let (code, report) = child_check(&format!("{} {how}", python("tests/adapters/wrong.py")));
        assert_eq!(code, 1, "{how}: {report:#}");
        let failed = failing(&report);
        assert!(
            failed.iter().any(|f| f.starts_with(&format!("\"{check}\"")) && f.contains(needle)),
            "{how}: {failed:?}"
        );
    }
}

#[test]
fn a_wrong_version_or_garbage_child_stops_the_run_with_exit_2() {
    let cases = [
        ("version", "the child speaks protocol 3 but this driver speaks 1 and 2"),
        ("journal", "ack journal line 1 is not a ready record: \"READY!!\""),
        ("stdout", "wrote no ready record to its ack journal (it printed \"hello from a store"),
    ];
    for (how, needle) in cases {
        let dir = scratch();
        let child = format!("{} {how}", python("tests/adapters/wrong.py"));
        let out = run(&["run", "--child", &child, "--cell", "1", "--seed", "24"], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{how}: {stderr}");
        assert!(stderr.contains(needle), "{how}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{how}: one line expected: {stderr}");
        assert!(stderr.contains("docs/PROTOCOL.md"), "{stderr}");
    }
}
