//! Helpers for running the built binary and reading its JSON report.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The binary, with none of the CI's variables: a test run inside GitHub
/// Actions must neither append to the job's step summary nor record the
/// CI's commit into the reports its snapshots compare. Tests that need them
/// set them. Each fire's repro is rerun once, not five times
/// (`CRASHCELLS_REFIRE`, `--refire`'s variable): a rerun is a fire's cost
/// again, and the suite's firing tests check the verdict, not the rate; a
/// test about the rate names `--refire`. Its folder comes first on PATH, as
/// an installed `crashcells` is: a repro then starts `crashcells run`, the
/// line a reader of the snapshots expects (a repro names the binary's path
/// only where PATH finds another or none: `repro_from_a_folder_off_path`).
pub fn bin() -> Command {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_crashcells"));
    let mut cmd = Command::new(exe);
    cmd.env("PATH", path_with(&[exe.parent().expect("a folder")]));
    for var in ["GITHUB_STEP_SUMMARY", "GITHUB_SHA", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"] {
        cmd.env_remove(var);
    }
    cmd.env("CRASHCELLS_REFIRE", "1");
    cmd
}

/// PATH with `first` ahead of it, then the folder of the interpreter
/// `python3` runs where PATH's `python3` is a script that finds it (a
/// version manager's shim, as pyenv's): the children the tests start as
/// `python3 ...` then run the same interpreter without the shim, which
/// costs a loaded machine half a second a process (a child-check of the
/// Python store starts a hundred). That folder first is what the shim
/// itself does before it runs the interpreter.
pub fn path_with(first: &[&Path]) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let dirs =
        first.iter().map(|d| d.to_path_buf()).chain(python_behind_shim().clone()).chain(std::env::split_paths(&rest));
    std::env::join_paths(dirs).expect("PATH's folders join")
}

/// The folder of the interpreter behind a `python3` shim on PATH; `None`
/// where `python3` is no script (or is not there).
fn python_behind_shim() -> &'static Option<std::path::PathBuf> {
    static DIR: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let rest = std::env::var_os("PATH")?;
        let found = std::env::split_paths(&rest).map(|d| d.join("python3")).find(|p| p.is_file())?;
        let head = std::fs::read(&found).ok()?;
        if !head.starts_with(b"#!") {
            return None;
        }
        let out = Command::new(&found).args(["-c", "import sys; print(sys.executable)"]).output().ok()?;
        let exe = std::path::PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
        exe.is_absolute().then(|| exe.parent().map(Path::to_path_buf)).flatten()
    })
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

/// A matrix file `m.toml` in `dir` whose legs are `legs` (TOML `[[legs]]`
/// tables): what an audit of one leg reads.
pub fn one_leg_matrix(dir: &Path, legs: &str) -> std::path::PathBuf {
    let matrix = dir.join("m.toml");
    std::fs::write(&matrix, format!("name = \"m\"\ndescription = \"one leg\"\n{legs}")).unwrap();
    matrix
}

/// Audits one leg, with its crash columns, in `dir`: `legs` is the leg's
/// `[[legs]]` table of a matrix written there. Its exit code, its JSON
/// report and the matrix file (a `LOSES` row's repro names it).
pub fn audit_one_leg(dir: &Path, legs: &str) -> (i32, Value, std::path::PathBuf) {
    let matrix = one_leg_matrix(dir, legs);
    let out =
        bin().args(["audit", "--format", "json", "--matrix"]).arg(&matrix).arg("--workdir").arg(dir).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code().unwrap_or(-1), report, matrix)
}

pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temp folder")
}

/// The built-in catalog with short kill windows (`window = 5`): for tests
/// about what a run reports, not about where its timed kills land, so that
/// each timed trial takes a fraction of a second. Written once per test
/// process into cargo's folder for test files, outside every scratch
/// folder (tests check what a run leaves there); `_dir` is unused.
pub fn short_catalog(_dir: &Path) -> std::path::PathBuf {
    static CATALOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CATALOG.get_or_init(write_short_catalog).clone()
}

fn write_short_catalog() -> std::path::PathBuf {
    let cells = Path::new(env!("CARGO_MANIFEST_DIR")).join("cells");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("short-cells");
    std::fs::create_dir_all(&out).expect("a catalog folder");
    let window = regex::Regex::new(r"(?m)^window = \d+$").expect("a pattern");
    for entry in std::fs::read_dir(cells).expect("cells/") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a cell file");
        let short = window.replace(&text, "window = 5");
        // Renamed into place: another test process may be reading it.
        let tmp = out.join(format!(".{}", std::process::id()));
        std::fs::write(&tmp, short.as_ref()).expect("a copy");
        std::fs::rename(&tmp, out.join(path.file_name().expect("a name"))).expect("a copy in place");
    }
    out
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

/// Where tracing is refused: a test that needs it stops here, saying why,
/// and fails where the run requires tracing (the one skip policy,
/// `crashcells::testskip`). The caller returns early after it.
pub fn tracing_refused(why: impl std::fmt::Display) {
    crashcells::testskip::skip_or_fail(crashcells::testskip::Need::Tracing, why);
}

/// The entry `name` of `crashcells child-check --format json` on `child`:
/// the fork-server and warm-pool tests read their launcher's check so.
pub fn child_check_entry(child: &crashcells::harness::ChildCommand, name: &str) -> Value {
    let dir = scratch();
    let out = bin()
        .args(["child-check", "--format", "json", "--workdir"])
        .arg(dir.path())
        .arg("--child")
        .arg(child.display())
        .args(["--only", name])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    checks.iter().find(|c| c["check"] == name).unwrap_or_else(|| panic!("no {name} check: {report}")).clone()
}

/// The SQLite version python3 loads by itself: the one the Python store
/// reports when no leg puts another library under it.
pub fn python_sqlite() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sqlite3; print(sqlite3.sqlite_version)"])
        .output()
        .expect("python3 on PATH");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Polls `cond` until it holds or `limit` passes; returns whether it held.
pub fn eventually(limit: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cond()
}
