//! A crash state is the store's whole folder: a file the store keeps beside
//! its database is traced (its calls are kill points), rebuilt into every
//! state, kept in the evidence and recovered in place, so that a store whose
//! recovery reads a marker beside its database is judged on the state a
//! crash really leaves. The `dirty-marker` mutant fires under `--kill
//! syscall` at the point after its ack and before the marker's removal; the
//! reference store and the Python example pass with every file of their
//! folder in the state.

use serde_json::Value;

use crate::common::{run_json, scratch};

/// The one result of a syscall run on cell 1, with its scratch folder;
/// `None` where this machine refuses tracing.
fn cell1(extra: &[&str]) -> Option<(i32, Value, tempfile::TempDir)> {
    let dir = scratch();
    let args = [&["run", "--cell", "1", "--kill", "syscall"][..], extra].concat();
    let (code, report) = run_json(&args, dir.path());
    let r = report["results"][0].clone();
    if r["reason"].as_str().unwrap_or("").contains("unavailable") {
        crate::common::tracing_refused(&r["reason"]);
        return None;
    }
    Some((code, r, dir))
}

#[test]
fn the_dirty_marker_mutant_fires_after_its_ack_before_the_marker_goes_on_every_seed() {
    // Three seeds of the ten the acceptance names, to keep the suite short.
    // No refires: how often a fire fires again cannot change its verdict or
    // its points (and took 40% of each run).
    for seed in [1, 5, 10] {
        let seed = seed.to_string();
        let args = ["--leg", "wal", "--seed", &seed, "--mutant", "dirty-marker", "--refire", "0"];
        let Some((code, r, _dir)) = cell1(&args) else { return };
        assert_eq!((code, r["verdict"].as_str()), (1, Some("fire")), "seed {seed}: {r:#}");
        assert!(r["reason"].as_str().unwrap().contains("acked append m0 was lost"), "{r:#}");
        let points = r["kill_points"].as_array().unwrap();
        let last = points.last().unwrap();
        assert_eq!((&last["syscall"], &last["file"]), (&"unlink".into(), &"store.db.dirty".into()), "{r:#}");
        let before = &points[points.len() - 2];
        assert_eq!(before["file"], "acks", "the point after the ack: {r:#}");
        if seed == "1" {
            let evidence = std::path::Path::new(r["evidence"].as_str().unwrap());
            assert!(evidence.join("store.db.dirty").is_file(), "the evidence holds the marker");
            let timeline = std::fs::read_to_string(evidence.join("timeline.html")).unwrap();
            assert!(timeline.contains("store.db.dirty"), "the timeline names the marker's calls");
        }
    }
}

#[test]
fn the_reference_store_passes_with_its_whole_folder_in_the_state() {
    for leg in ["wal", "delete"] {
        let Some((code, r, _dir)) = cell1(&["--leg", leg, "--seed", "1"]) else { return };
        assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "{leg}: {r:#}");
    }
}

#[test]
fn the_python_example_passes_with_its_whole_folder_in_the_state() {
    let child = format!("python3 {}/examples/python-store/store.py", env!("CARGO_MANIFEST_DIR"));
    let dir = scratch();
    let args = ["run", "--cell", "1", "--kill", "syscall", "--child", &child, "--seed", "1"];
    let (code, report) = run_json(&args, dir.path());
    let rs = report["results"].as_array().unwrap();
    if rs.iter().all(|r| r["reason"].as_str().unwrap_or("").contains("unavailable")) {
        return crate::common::tracing_refused(&rs[0]["reason"]);
    }
    assert_eq!(code, 0, "{report:#}");
    assert!(rs.iter().any(|r| r["verdict"] == "pass"), "{report:#}");
}
