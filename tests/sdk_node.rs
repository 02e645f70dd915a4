//! The Node.js adapter library (`sdk/node`): its own `node --test` suite,
//! run with the crashcells built here, so that `cargo test` covers it. The
//! suite checks the library's rules unit by unit, the one-line errors and
//! exit codes of an adapter that breaks a rule, and `child-check` on a
//! store written on the library (conforming, and failing with the
//! adapter's line for each broken rule).
//!
//! It needs Node.js 20 and the `sqlite3` shell (the suite's store runs on
//! it: Node.js 20 has no SQLite of its own); without them the test says so
//! and returns.

use std::path::Path;
use std::process::Command;

const SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/node");

/// Whether `program --version` runs; if not, says why the test does nothing.
fn available(program: &str) -> bool {
    let there = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if !there {
        eprintln!("sdk_node: skipped: `{program}` is not installed");
    }
    there
}

#[test]
fn the_node_librarys_own_tests_pass_against_this_crashcells() {
    if !available("node") || !available("sqlite3") {
        return;
    }
    let tests: Vec<_> = std::fs::read_dir(Path::new(SDK).join("test"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    assert!(tests.len() >= 3, "the suite's files: {tests:?}");
    let out = Command::new("node")
        .arg("--test")
        .args(&tests)
        .current_dir(SDK)
        .env("CRASHCELLS", env!("CARGO_BIN_EXE_crashcells"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node --test failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    // A skipped test (no binary) would pass without checking anything.
    assert!(text.contains("# skipped 0"), "{text}");
}
