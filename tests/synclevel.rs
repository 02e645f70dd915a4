//! The synchronous level a store claims, checked from its recorded calls in
//! the default gate: the `claims-full` mutant (synchronous=OFF, reporting
//! FULL) fires `claimed-level` under the default `--kill all`, the Python
//! example at FULL does not, and a leg kept at WAL/NORMAL passes with the
//! not-durable-on-power-loss line in every format and in the summary; a WAL
//! store that checkpoints with `TRUNCATE` before each ack gets no such line.

use serde_json::Value;

use crate::common::{bin, run_json, scratch};

/// Whether this machine refused tracing for every result (then the calls
/// say nothing, and the test has nothing to check).
fn refused(report: &Value) -> bool {
    let rs = report["results"].as_array().expect("results");
    let syscall: Vec<&Value> = rs.iter().filter(|r| r["kill"] == "syscall").collect();
    let all = !syscall.is_empty() && syscall.iter().all(|r| r["reason"].as_str().unwrap_or("").contains("unavailable"));
    if all {
        crate::common::tracing_refused(&syscall[0]["reason"]);
    }
    all
}

/// The default gate (every default kill mode) names it on seed 1; seeds 2
/// and 3 run only the syscall results the assertions read, to show the
/// naming does not hang on the draw without paying the timed trials again.
#[test]
fn a_store_that_claims_full_and_syncs_nothing_is_named_by_the_default_gate() {
    for seed in ["1", "2", "3"] {
        let dir = scratch();
        let mut args = vec!["run", "--cell", "1", "--seed", seed, "--mutant", "claims-full"];
        if seed != "1" {
            args.extend(["--kill", "syscall"]);
        }
        let (code, report) = run_json(&args, dir.path());
        if refused(&report) {
            return;
        }
        assert_eq!(code, 1, "seed {seed}: {report:#}");
        let syscall: Vec<&Value> =
            report["results"].as_array().unwrap().iter().filter(|r| r["kill"] == "syscall").collect();
        assert_eq!(syscall.len(), 3, "one per default leg: {report:#}");
        for r in syscall {
            assert_eq!(r["verdict"], "fire", "seed {seed}: {r:#}");
            assert_eq!(r["violation"], "claimed-level", "{r:#}");
            let why = r["reason"].as_str().unwrap();
            assert!(why.contains("reports synchronous=full") && why.contains("no evidence for"), "{why}");
            assert!(r["fingerprint"].as_str().unwrap().ends_with("/full/syscall/claimed-level"), "{r:#}");
        }
    }
}

#[test]
fn the_python_example_at_full_is_not_named() {
    let child = format!("python3 {}/examples/python-store/store.py", env!("CARGO_MANIFEST_DIR"));
    let dir = scratch();
    let (code, report) = run_json(&["run", "--cell", "1", "--seed", "1", "--child", &child], dir.path());
    if refused(&report) {
        return;
    }
    assert_eq!(code, 0, "{report:#}");
    for r in report["results"].as_array().unwrap() {
        assert_ne!(r["violation"], "claimed-level", "{r:#}");
        if r["verdict"] == "pass" && r["kill"] == "syscall" {
            assert_eq!(r["synchronous"], "full", "{r:#}");
            assert_eq!(r["kept_synchronous"], "full", "its commits keep the level it reports: {r:#}");
        }
    }
}

#[test]
fn a_leg_at_wal_normal_passes_and_says_in_every_format_that_power_loss_loses_acks() {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let json = json.to_str().unwrap();
    let args = ["run", "--matrix", "audit", "--leg", "wal-sync-normal", "--cell", "1", "--seed", "1"];
    let (code, report) = run_json(&args, dir.path());
    if refused(&report) {
        return;
    }
    assert_eq!(code, 0, "a note, not a fire: {report:#}");
    let recorded = report["results"].as_array().unwrap().iter().find(|r| r["kill"] == "syscall").unwrap();
    assert_eq!((&recorded["synchronous"], &recorded["kept_synchronous"]), (&"normal".into(), &"normal".into()));
    let why = recorded["not_durable"].as_str().expect("the leg's power-loss note");
    assert!(why.contains("was not yet made durable by an fsync of the wal at the ack at #"), "{why}");
    std::fs::write(json, report.to_string()).unwrap();
    let said = "leg wal-sync-normal (wal/normal): acknowledged commits are not durable on power loss";
    let report = |format: &str| {
        let out = bin().args(["report", "--from", json, "--format", format]).env("NO_COLOR", "1").output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for format in ["human", "markdown", "junit", "json"] {
        let text = report(format);
        let wanted = if format == "json" { "\"not_durable\"" } else { said };
        assert!(text.contains(wanted), "{format}: {text}");
    }
    // The human summary says it once for the leg, under the counts.
    let text = report("human");
    let summary = text.split_once(" results: ").expect("a summary").1;
    assert!(summary.contains(&format!("power loss: {said}")), "{text}");
}

/// A WAL store that checkpoints with `TRUNCATE` before each ack
/// (tests/adapters/variant.py `checkpoint-truncate`, on the bundled SQLite,
/// where the Python example's own library refuses WAL): the checkpoint
/// synced the database, so the WAL's truncation it leaves unsynced at the
/// ack loses nothing, and the leg gets no power-loss note.
#[test]
fn a_wal_store_that_checkpoints_with_truncate_before_each_ack_gets_no_note() {
    let child = format!("python3 {}/tests/adapters/variant.py checkpoint-truncate", env!("CARGO_MANIFEST_DIR"));
    let dir = scratch();
    let args = ["run", "--matrix", "libraries", "--leg", "bundled-wal", "--child", &child, "--cell", "1"];
    let (code, report) = run_json(&[&args[..], &["--kill", "syscall", "--seed", "1"]].concat(), dir.path());
    if refused(&report) {
        return;
    }
    assert_eq!(code, 0, "{report:#}");
    let r = &report["results"][0];
    assert_eq!((&r["verdict"], &r["effective_mode"]), (&"pass".into(), &"wal".into()), "{r:#}");
    assert_eq!(r["kept_synchronous"], "full", "{r:#}");
    assert_eq!(r["not_durable"], Value::Null, "{r:#}");
}
