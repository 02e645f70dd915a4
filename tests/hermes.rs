//! The Hermes example's known findings and its CI check
//! (`examples/hermes-store/ci-check`): the file names its two findings by
//! real fingerprints, and the check passes the faithful adapter, fails when
//! a known finding is gone (an adapter whose rotation is atomic) and fails
//! naming the fingerprint of a new one (an adapter that acks too early).
//!
//! The adapter needs the Hermes wheel, which `examples/hermes-store/fetch`
//! downloads (`.ci/run` does, before the tests): without it those tests
//! say so and return, or fail under CI (`crashcells::testskip`).

use std::path::Path;
use std::process::Command;

use crashcells::testskip::{Need, skip_or_fail};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/hermes-store");

/// Whether the wheel is there; if not, says why the test does nothing (or
/// fails, under CI).
fn fetched() -> bool {
    let marker = Path::new(EXAMPLE).join(".wheel/site/.complete");
    let there = marker.is_file();
    if !there {
        skip_or_fail(Need::HermesWheel, format_args!("{} is missing", marker.display()));
    }
    there
}

/// `ci-check --part sweeps` against `child` (the adapter when `None`),
/// sweeping only `cells` (every one when empty): exit code and stdout.
fn ci_check_sweeps(child: Option<&str>, cells: &[&str]) -> (i32, String) {
    let mut cmd = Command::new("python3");
    cmd.env("PATH", crate::common::path_with(&[]));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.arg(Path::new(EXAMPLE).join("ci-check")).args(["--crashcells", env!("CARGO_BIN_EXE_crashcells")]);
    cmd.args(["--part", "sweeps"]).args(child.map(|c| ["--child", c]).into_iter().flatten());
    cmd.args(cells.iter().flat_map(|c| ["--cell", c]));
    for var in ["GITHUB_STEP_SUMMARY", "GITHUB_SHA", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("python3 runs ci-check");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_examples_known_findings_are_its_two_findings_by_fingerprint() {
    let text = std::fs::read_to_string(Path::new(EXAMPLE).join("known.toml")).unwrap();
    let known = crashcells::model::known::parse(&text).unwrap();
    let prints: Vec<&str> = known.iter().map(|k| k.fingerprint.as_str()).collect();
    assert_eq!(
        prints,
        [
            "rotation-atomicity/wal/full/syscall/orphan",
            "rotation-atomicity/wal/full/timed/orphan",
            // Finding 1's other side, which only a timed kill reaches first.
            "rotation-atomicity/wal/full/timed/partial-rotation",
            "outbox-exactly-once/wal/full/syscall/double-delivery",
            "outbox-exactly-once/wal/full/timed/double-delivery",
        ]
    );
    let readme = std::fs::read_to_string(Path::new(EXAMPLE).join("README.md")).unwrap();
    for k in &known {
        let heading = k.issue.split_once('#').map(|(_, anchor)| anchor).unwrap();
        let anchors: Vec<String> = readme.lines().filter(|l| l.starts_with("### ")).map(anchor).collect();
        assert!(anchors.iter().any(|a| a == heading), "{} names no heading of the README: {anchors:?}", k.issue);
    }
}

/// A heading's anchor as GitHub makes it: lowercase, punctuation but `-`
/// and `_` dropped, spaces as `-`.
pub fn anchor(heading: &str) -> String {
    let text = heading.trim_start_matches('#').trim().to_lowercase();
    text.chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn ci_check_passes_the_adapter_with_its_known_findings() {
    if !fetched() {
        return;
    }
    let (code, out) = ci_check_sweeps(None, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok    known rotation-atomicity / default / syscall"), "{out}");
}

#[test]
fn ci_check_fails_when_a_known_finding_is_gone() {
    if !fetched() {
        return;
    }
    let variant = format!("python3 {}/tests/adapters/hermes_variant.py atomic-rotation", env!("CARGO_MANIFEST_DIR"));
    // Only cell 3's sweeps, where the variant's change is (half the time of
    // all three cells'): the finding that is gone is cell 3's.
    let (code, out) = ci_check_sweeps(Some(&variant), &["rotation-atomicity"]);
    assert_eq!(code, 1, "{out}");
    let gone = "DIFF  known finding rotation-atomicity/wal/full/syscall/orphan (issue \
                examples/hermes-store/README.md#finding-1-cell-3-a-compression-rotation-is-published-in-separate-transactions) \
                did not fire: the file is wrong (the whole syscall sweep of leg `default`";
    assert!(out.contains(gone), "{out}");
}

#[test]
fn ci_check_fails_on_a_new_finding_naming_its_fingerprint() {
    if !fetched() {
        return;
    }
    let variant = format!("python3 {}/tests/adapters/hermes_variant.py ack-early", env!("CARGO_MANIFEST_DIR"));
    // Only cell 1's sweeps, where an early ack is lost (a third of the time
    // of all three cells').
    let (code, out) = ci_check_sweeps(Some(&variant), &["prefix-durability"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DIFF  new finding prefix-durability/wal/full/syscall/lost-ack (prefix-durability / default / syscall, point"), "{out}");
}
