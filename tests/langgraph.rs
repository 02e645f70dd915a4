//! The LangGraph.js example (`examples/langgraph-store`): its adapter drives
//! the real checkpointer (a snapshot store: a transcript is the newest
//! checkpoint's message list, a rewind a new head checkpoint) and passes the
//! cells it implements, while its two checkpoint-shaped mutants fire them:
//! `ack-before-commit` acks once the step's pending write is saved, before
//! the checkpoint that holds the message (cell 1 loses an acked append), and
//! `torn-fork` rewinds through one head per removed message (cell 4 sees a
//! transcript that is neither before nor after the rewind).
//!
//! Its two findings (a power loss takes acked steps; two writers on one
//! thread lose each other's steps, cell 6) are in its known.toml, each
//! named by the README's section on it; the `delete` leg skips with the
//! resolver's `store` word (the saver imposes WAL).
//!
//! The adapter needs Node.js and the packages `examples/langgraph-store/fetch`
//! installs (`.ci/run` does, before the tests): without them these tests say
//! so and return, or fail under CI (`crashcells::testskip`).

use std::path::Path;
use std::process::Command;

use crashcells::testskip::{Need, skip_or_fail};
use serde_json::Value;

use crate::common::{results, run_json, scratch};
use crate::hermes::anchor;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/langgraph-store");
const SEED: &str = "31";

/// Whether the packages are installed; if not, says why the test does
/// nothing (or fails, under CI).
fn fetched() -> bool {
    let marker = Path::new(EXAMPLE).join("node_modules/.crashcells-fetched");
    let there = marker.is_file();
    if !there {
        skip_or_fail(Need::LangGraphPackages, format_args!("{} is missing", marker.display()));
    }
    there
}

fn child() -> String {
    format!("node {EXAMPLE}/adapter.mjs")
}

/// One syscall-swept result of `cell` on the resolver-default leg, with the
/// flags given (a mutant, a number of points): its verdict, fingerprint and
/// reason; `None` where this machine refuses tracing (said, or failed where
/// it is required).
fn sweep(cell: &str, more: &[&str]) -> Option<(String, Value, String)> {
    let dir = scratch();
    let child = child();
    let mut args = vec!["run", "--child", &child, "--cell", cell, "--leg", "default", "--kill", "syscall"];
    args.extend(["--seed", SEED]);
    args.extend(more);
    let (_, report) = run_json(&args, dir.path());
    let found = results(&report, cell);
    assert_eq!(found.len(), 1, "{report:#}");
    let r = found[0];
    if r["verdict"] == "skip" && r["reason"].as_str().unwrap_or("").contains("unavailable") {
        crate::common::tracing_refused(&r["reason"]);
        return None;
    }
    Some((r["verdict"].as_str().unwrap().to_string(), r["fingerprint"].clone(), r["reason"].to_string()))
}

#[test]
fn the_examples_known_findings_are_its_power_and_writers_findings_named_in_its_readme() {
    let text = std::fs::read_to_string(Path::new(EXAMPLE).join("known.toml")).unwrap();
    let known = crashcells::model::known::parse(&text).unwrap();
    let prints: Vec<&str> = known.iter().map(|k| k.fingerprint.as_str()).collect();
    assert_eq!(
        prints,
        [
            "prefix-durability/wal/normal/power/lost-ack",
            "fork-determinism/wal/normal/power/not-the-chosen-prefix",
            "concurrent-appends/wal/normal/syscall/lost-ack",
            "concurrent-appends/wal/normal/timed/lost-ack",
        ]
    );
    let readme = std::fs::read_to_string(Path::new(EXAMPLE).join("README.md")).unwrap();
    let anchors: Vec<String> = readme.lines().filter(|l| l.starts_with("### ")).map(anchor).collect();
    for k in &known {
        let heading = k.issue.split_once('#').map(|(_, anchor)| anchor).unwrap();
        assert!(anchors.iter().any(|a| a == heading), "{} names no heading of the README: {anchors:?}", k.issue);
    }
}

#[test]
fn ack_before_commit_fires_cell_1_where_the_checkpointer_passes() {
    if !fetched() {
        return;
    }
    // The same 30 of the sweep's points: the WAL leg's workload runs past
    // the first automatic checkpoint (about 200 appends), whose whole sweep
    // would take half a minute.
    let Some((verdict, _, reason)) = sweep("prefix-durability", &["--points", "30"]) else { return };
    assert_eq!(verdict, "pass", "{reason}");
    // The fire's verdict and fingerprint are the subject, not how often its
    // repro fires again: no rerun (`--refire 0`, 8 s of this run's 45).
    let mutant = ["--points", "30", "--mutant", "ack-before-commit", "--refire", "0"];
    let Some((verdict, fingerprint, reason)) = sweep("prefix-durability", &mutant) else { return };
    assert_eq!(verdict, "fire", "{reason}");
    assert_eq!(fingerprint, "prefix-durability/wal/normal/syscall/lost-ack", "{reason}");
}

#[test]
fn torn_fork_fires_cell_4_whose_whole_sweep_the_checkpointer_passes() {
    if !fetched() {
        return;
    }
    let Some((verdict, _, reason)) = sweep("fork-determinism", &[]) else { return };
    assert_eq!(verdict, "pass", "{reason}");
    // No rerun of the fire's repro (`--refire 0`): the verdict and the
    // fingerprint are the subject, and a rerun cannot change them.
    let mutant = ["--mutant", "torn-fork", "--refire", "0"];
    let Some((verdict, fingerprint, reason)) = sweep("fork-determinism", &mutant) else { return };
    assert_eq!(verdict, "fire", "{reason}");
    assert_eq!(fingerprint, "fork-determinism/wal/normal/syscall/not-the-chosen-prefix", "{reason}");
}

#[test]
fn the_delete_leg_skips_because_the_store_imposes_wal() {
    if !fetched() {
        return;
    }
    let dir = scratch();
    let child = child();
    let args = [
        "run", "--child", &child, "--cell", "4", "--leg", "delete", "--kill", "timed", "--trials", "1", "--seed", SEED,
    ];
    let (_, report) = run_json(&args, dir.path());
    let r = results(&report, "fork-determinism")[0];
    let reason = r["reason"].as_str().unwrap();
    assert_eq!(r["verdict"], "skip", "{reason}");
    // The resolver's word, read as `store`, and `ready` written after the
    // saver's lazy setup set WAL: written before it, the record would say
    // `delete` and the skip would be the disk contradicting it.
    assert!(reason.starts_with("requested delete, child ran wal: LangGraph's SqliteSaver sets"), "{reason}");
    assert!(reason.ends_with("(decided by store)"), "{reason}");
}

#[test]
fn what_the_checkpointer_cannot_express_exits_69_before_writing() {
    if !fetched() {
        return;
    }
    let dir = scratch();
    let (db, acks) = (dir.path().join("store.db"), dir.path().join("acks.ndjson"));
    for op in ["rotate", "park", "claim", "deliver", "catch-up"] {
        let out = Command::new("node")
            .arg(Path::new(EXAMPLE).join("adapter.mjs"))
            .arg(op)
            .arg("--db")
            .arg(&db)
            .arg("--acks")
            .arg(&acks)
            .output()
            .expect("node runs the adapter");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(69), "{op}: {stderr}");
        assert!(stderr.contains(&format!("`{op}` is not implemented")), "{op}: {stderr}");
        assert!(!db.exists() && !acks.exists(), "{op} wrote before refusing");
    }
}
