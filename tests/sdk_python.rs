//! The Python adapter library's own tests (`sdk/python/tests`, unittest):
//! the one-line errors of an adapter that breaks a rule (alone and under
//! `child-check`), the protocol it runs around a store, the canonical dump,
//! the protocol corpus (protocol/corpus/*.json) case by case,
//! and the pytest plugin (where the Python has no pytest, a skip by the
//! suite's policy: a failure under CI). They get
//! this build's binary through `CRASHCELLS_BIN`, as the plugin finds it.

use crashcells::testskip::{Need, skip_or_fail};
use std::path::Path;
use std::process::Command;

/// The Python that runs them: `CRASHCELLS_TEST_PYTHON` (a venv with
/// pytest, which `.ci/run` makes) or `python3`.
fn python() -> String {
    std::env::var("CRASHCELLS_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

#[test]
fn the_python_library_passes_its_own_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = python();
    // The tests' scratch folders (tempfile's) go in one folder removed after
    // the run, whatever a test left behind.
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .current_dir(root)
        .env("TMPDIR", scratch.path())
        .env("CRASHCELLS_BIN", env!("CARGO_BIN_EXE_crashcells"))
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\nOK"), "{text}");
    // The plugin's test skips itself where pytest is missing: the policy
    // says whether that may pass here.
    let pytest = Command::new(&python).args(["-c", "import pytest"]).output().is_ok_and(|o| o.status.success());
    if !pytest {
        return skip_or_fail(Need::Pytest, format_args!("`{python}` cannot import pytest"));
    }
    assert!(!text.contains("skipped"), "a test of the Python library skipped:\n{text}");
}
