//! The command line as users meet it: exit codes and one-line errors.

use crate::common::{bin, run, scratch};

fn fails_with(args: &[&str], needle: &str) {
    let dir = scratch();
    let out = run(args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line expected: {stderr}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    fails_with(&["run", "--cell", "nope"], "unknown cell `nope`");
    fails_with(&["run", "--mutant", "nope"], "unknown mutant `nope`");
    fails_with(&["run", "--matrix", "nope"], "unknown matrix `nope`");
    fails_with(&["run", "--trials", "0"], "--trials");
    fails_with(&["run", "--seed", "abc"], "--seed");
    fails_with(&["run", "--out", "/nonexistent-folder/x.json"], "does not exist");
}

#[test]
fn list_shows_every_catalog_cell_as_json() {
    let out = bin().args(["list", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let cells: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<_> = cells.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
    let catalog = crashcells::catalog::Catalog::embedded().unwrap();
    assert_eq!(ids, catalog.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>());
    for c in cells.as_array().unwrap() {
        for field in ["number", "clause", "origin", "status", "legs"] {
            assert!(!c[field].is_null(), "{field} missing in {c}");
        }
    }
}

#[test]
fn every_command_has_a_help_page_with_examples() {
    for command in ["run", "list", "report", "audit", "child-check", "prune"] {
        let out = bin().args([command, "--help"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert!(text.contains("Examples:\n  crashcells "), "{command} --help has no examples:\n{text}");
    }
}
