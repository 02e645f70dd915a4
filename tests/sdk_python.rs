//! The Python adapter library's own tests (`sdk/python/tests`, unittest):
//! the one-line errors of an adapter that breaks a rule (alone and under
//! `child-check`), the protocol it runs around a store, the canonical dump,
//! and the pytest plugin (skipped where pytest is not installed). They get
//! this build's binary through `CRASHCELLS_BIN`, as the plugin finds it.

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_library_passes_its_own_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .current_dir(root)
        .env("CRASHCELLS_BIN", env!("CARGO_BIN_EXE_crashcells"))
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\nOK"), "{text}");
}
