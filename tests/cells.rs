//! Each cell in both directions: it passes on the reference store and fires
//! on the mutant made to break its clause. Short: one trial and a few
//! sampled kill points per result where a pass is shown (every point of a
//! sweep is `syscall.rs`'s), timed kills only where a mutant must fire.

use crate::common::{results, run_json, scratch, short_catalog};

#[test]
fn prefix_durability_passes_on_the_reference_store() {
    let dir = scratch();
    let args = ["run", "--cell", "prefix-durability", "--seed", "11", "--trials", "1", "--points", "4"];
    let (code, report) = run_json(&args, dir.path());
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
    // Where the kill lands within an operation decides, not the window. A
    // timed kill lands between the ack and the commit in about half the
    // trials: sixteen a leg make a miss on all three legs vanishingly rare,
    // and a result stops at its first fire.
    let catalog = short_catalog(dir.path());
    let args =
        ["run", "--cell", "1", "--mutant", "ack-before-commit", "--seed", "12", "--kill", "timed", "--trials", "16"];
    let (code, report) = run_json(&[&args[..], &["--catalog", catalog.to_str().unwrap()]].concat(), dir.path());
    assert_eq!(code, 1, "{report:#}");
    let fired: Vec<_> = results(&report, "prefix-durability").into_iter().filter(|r| r["verdict"] == "fire").collect();
    assert!(!fired.is_empty(), "{report:#}");
    assert!(fired[0]["reason"].as_str().unwrap().contains("was lost"), "{:#}", fired[0]);
}

/// The races alone (kill mode `none`, what `--kill timed` runs for cell 2):
/// tests/syscall.rs sweeps r0's kill points on both its claims.
#[test]
fn consume_once_passes_on_the_reference_store_and_fires_on_racy_claim() {
    let dir = scratch();
    let (code, report) = run_json(&["run", "--cell", "consume-once", "--kill", "timed", "--seed", "13"], dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(results(&report, "consume-once")[0]["trials"], 20);
    let args = ["run", "--cell", "2", "--kill", "timed", "--mutant", "racy-claim", "--seed", "13"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(results(&report, "consume-once")[0]["verdict"], "fire");
}

/// Cell 2's race kills nothing: its result says `none`, in JSON as in the
/// repro, and the repro reruns exactly that result.
#[test]
fn a_race_without_a_kill_is_labelled_none_and_its_repro_reruns_it() {
    let dir = scratch();
    let (code, report) =
        run_json(&["run", "--cell", "2", "--kill", "timed", "--trials", "2", "--seed", "15"], dir.path());
    assert_eq!(code, 0, "{report:#}");
    let rs = results(&report, "consume-once");
    assert_eq!(rs.len(), 1, "{report:#}");
    assert_eq!(rs[0]["kill"], "none", "{:#}", rs[0]);
    assert!(rs[0]["kill_points"].as_array().unwrap().is_empty() && rs[0]["points_planned"].is_null());
    let repro = rs[0]["repro"].as_str().unwrap();
    assert!(repro.contains("--kill none"), "{repro}");
    let words: Vec<&str> = repro.split(' ').skip(1).collect();
    let (code, again) = run_json(&words, dir.path());
    assert_eq!(code, 0, "{again:#}");
    let rerun = results(&again, "consume-once");
    assert_eq!((rerun.len(), &rerun[0]["kill"], &rerun[0]["trials"]), (1, &"none".into(), &2.into()), "{again:#}");
}

#[test]
fn rotation_atomicity_passes_on_the_reference_store_and_fires_on_split_rotation() {
    let dir = scratch();
    let args = ["run", "--cell", "rotation-atomicity", "--seed", "14", "--trials", "2", "--points", "4"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(results(&report, "rotation-atomicity").len(), 6, "3 legs, both kill modes");
    let catalog = short_catalog(dir.path());
    let args = ["run", "--cell", "3", "--mutant", "split-rotation", "--seed", "14", "--kill", "timed"];
    let (code, report) = run_json(&[&args[..], &["--catalog", catalog.to_str().unwrap()]].concat(), dir.path());
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
        if refused {
            crate::common::tracing_refused(&r["reason"]);
            continue;
        }
        assert_eq!(r["verdict"], "pass", "{r:#}");
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
