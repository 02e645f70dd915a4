//! The Node.js adapter library (`sdk/node`): its own `node --test` suite,
//! run with the crashcells built here, so that `cargo test` covers it. The
//! suite checks the library's rules unit by unit, the one-line errors and
//! exit codes of an adapter that breaks a rule, and `child-check` on a
//! store written on the library (conforming, and failing with the
//! adapter's line for each broken rule), and the small store of
//! docs/adapters/node.md as the page shows it.
//!
//! It needs Node.js 20 and the `sqlite3` shell (the suite's store runs on
//! it: Node.js 20 has no SQLite of its own); without them the test says so
//! and returns. The page's store runs on the better-sqlite3 that
//! `examples/langgraph-store/fetch` installs: without it, that one test of
//! the suite is skipped, and only that one.

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
    assert!(tests.len() >= 4, "the suite's files: {tests:?}");
    let out = Command::new("node")
        .arg("--test")
        .args(&tests)
        .current_dir(SDK)
        .env("CRASHCELLS", env!("CARGO_BIN_EXE_crashcells"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node --test failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    // A skipped test would pass without checking anything: only the page's
    // store may skip, where better-sqlite3 is not installed.
    let fetched = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/langgraph-store/node_modules/.crashcells-fetched");
    let skips = if fetched.is_file() { "# skipped 0" } else { "# skipped 1" };
    assert!(text.contains(skips), "expected {skips}:\n{text}");
}
