//! Each cell in both directions: it passes on the reference store and fires
//! on the mutant made to break its clause.

use crate::common::{results, run_json, scratch};

#[test]
fn prefix_durability_passes_on_the_reference_store() {
    let dir = scratch();
    let (code, report) = run_json(&["run", "--cell", "prefix-durability", "--seed", "11"], dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["schema"], "crashcells.report.v1");
    for r in results(&report, "prefix-durability") {
        assert!(r["verdict"] == "pass" || r["verdict"] == "skip", "{r:#}");
        if r["verdict"] == "pass" && r["kill"] == "timed" {
            assert!(r["acked"].as_u64().unwrap() >= 200, "{r:#}");
        }
    }
    let legs: Vec<_> = results(&report, "prefix-durability")
        .iter()
        .filter(|r| r["kill"] == "timed")
        .map(|r| r["leg"].clone())
        .collect();
    assert_eq!(legs, ["default", "delete", "wal"]);
}

#[test]
fn prefix_durability_fires_on_ack_before_commit() {
    let dir = scratch();
    let args = ["run", "--cell", "1", "--mutant", "ack-before-commit", "--seed", "12"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 1, "{report:#}");
    let fired: Vec<_> = results(&report, "prefix-durability").into_iter().filter(|r| r["verdict"] == "fire").collect();
    assert!(!fired.is_empty(), "{report:#}");
    assert!(fired[0]["reason"].as_str().unwrap().contains("was lost"), "{:#}", fired[0]);
}

#[test]
fn consume_once_passes_on_the_reference_store_and_fires_on_racy_claim() {
    let dir = scratch();
    let (code, report) = run_json(&["run", "--cell", "consume-once", "--seed", "13"], dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(results(&report, "consume-once")[0]["trials"], 20);
    let (code, report) = run_json(&["run", "--cell", "2", "--mutant", "racy-claim", "--seed", "13"], dir.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(results(&report, "consume-once")[0]["verdict"], "fire");
}

#[test]
fn rotation_atomicity_passes_on_the_reference_store_and_fires_on_split_rotation() {
    let dir = scratch();
    let (code, report) = run_json(&["run", "--cell", "rotation-atomicity", "--seed", "14"], dir.path());
    assert_eq!(code, 0, "{report:#}");
    let (code, report) = run_json(&["run", "--cell", "3", "--mutant", "split-rotation", "--seed", "14"], dir.path());
    assert_eq!(code, 1, "{report:#}");
    let fired = results(&report, "rotation-atomicity").into_iter().find(|r| r["verdict"] == "fire").expect("a fire");
    assert!(fired["reason"].as_str().unwrap().contains("orphan"), "{fired:#}");
}

#[test]
fn stubs_are_reported_and_never_pass() {
    let dir = scratch();
    let catalog = crate::common::stub_catalog(dir.path());
    let (_, report) = run_json(&["run", "--catalog", &catalog, "--seed", "1"], dir.path());
    for id in ["fork-determinism", "outbox-exactly-once"] {
        let r = results(&report, id);
        assert_eq!(r.len(), 1, "{report:#}");
        assert_eq!(r[0]["verdict"], "stub");
        assert!(!r[0]["reason"].as_str().unwrap().is_empty());
    }
    assert_eq!(report["summary"]["pass"], 0);
}

/// Every result of `report` for cell `id` passes, or skips where this
/// machine refuses ptrace; both kill modes on every leg of the default
/// matrix ran.
fn passes_on_every_leg(report: &serde_json::Value, id: &str) {
    let rs = results(report, id);
    let mut ran: Vec<_> =
        rs.iter().map(|r| format!("{}/{}", r["leg"].as_str().unwrap(), r["kill"].as_str().unwrap())).collect();
    ran.sort();
    assert_eq!(ran, ["default/syscall", "default/timed", "delete/syscall", "delete/timed", "wal/syscall", "wal/timed"]);
    for r in rs {
        let refused = r["verdict"] == "skip" && r["reason"].as_str().unwrap().contains("unavailable");
        assert!(r["verdict"] == "pass" || refused, "{r:#}");
    }
}

#[test]
fn fork_determinism_passes_on_the_reference_store() {
    let dir = scratch();
    let args = ["run", "--cell", "fork-determinism", "--seed", "15", "--trials", "2", "--points", "12"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 0, "{report:#}");
    passes_on_every_leg(&report, "fork-determinism");
    let timed = results(&report, "fork-determinism").into_iter().find(|r| r["kill"] == "timed").unwrap();
    assert!(timed["acked"].as_u64().unwrap() >= 40, "{timed:#}");
    assert!(timed["details"][0].as_str().unwrap().contains("rewinds"), "{timed:#}");
}

#[test]
fn outbox_exactly_once_passes_on_the_reference_store() {
    let dir = scratch();
    let args = ["run", "--cell", "outbox-exactly-once", "--seed", "16", "--trials", "2", "--points", "12"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 0, "{report:#}");
    passes_on_every_leg(&report, "outbox-exactly-once");
    let timed = results(&report, "outbox-exactly-once").into_iter().find(|r| r["kill"] == "timed").unwrap();
    assert!(timed["details"][0].as_str().unwrap().contains("deliveries"), "{timed:#}");
}
