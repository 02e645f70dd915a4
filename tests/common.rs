//! Helpers for running the built binary and reading its JSON report.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_crashcells"))
}

/// Runs `crashcells args...` with trials in a private work folder, evidence
/// in a private folder, and returns the output.
pub fn run(args: &[&str], scratch: &Path) -> Output {
    let mut cmd = bin();
    cmd.args(args).arg("--workdir").arg(scratch).arg("--evidence").arg(scratch.join("evidence")).env("NO_COLOR", "1");
    cmd.output().expect("the binary runs")
}

/// Runs and parses `--format json` from stdout.
pub fn run_json(args: &[&str], scratch: &Path) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let out = run(&all, scratch);
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("not a JSON report ({e}): {text}\nstderr: {}", String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap_or(-1), report)
}

/// The results of a report whose `cell` is `id`.
pub fn results<'a>(report: &'a Value, id: &str) -> Vec<&'a Value> {
    report["results"].as_array().expect("results").iter().filter(|r| r["cell"] == id).collect()
}

pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp folder")
}

/// A catalog folder in `scratch` that holds cells 4 and 5 as they were
/// before they went live: two stubs, for tests of a result that runs
/// nothing (the embedded catalog has no stub left).
pub fn stub_catalog(scratch: &Path) -> String {
    let dir = scratch.join("stubs");
    std::fs::create_dir_all(&dir).expect("a catalog folder");
    for (file, text) in [("4-fork-determinism.toml", STUB_4), ("5-outbox-exactly-once.toml", STUB_5)] {
        std::fs::write(dir.join(file), text).expect("a stub file");
    }
    dir.to_string_lossy().into_owned()
}

const STUB_4: &str = r#"number = 4
id = "fork-determinism"
clause = "after a fork on edit/rewind, recovery yields exactly the chosen prefix"
origin = "new in this suite"
status = "stub"
reason = "interlocked with the rewind/archive redesign; no fork operation to probe yet"
legs = "all"
"#;

const STUB_5: &str = r#"number = 5
id = "outbox-exactly-once"
clause = "a crash between provider send and durable record must not double-deliver on catch-up"
origin = "new in this suite"
status = "stub"
reason = "needs a fake-transport seam in the child protocol; delivery scope still in flight"
legs = "all"
"#;
