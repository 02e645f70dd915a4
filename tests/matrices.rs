//! Journal-mode matrices as users meet them: malformed matrix files, the
//! `audit` command on the build's SQLite, and `run`'s "nothing ran" exit.
//!
//! The build decides which SQLite the child links: the default (`bundled`)
//! build must honor every leg of `audit.toml`; the `system-sqlite` build
//! (`--no-default-features --features system-sqlite`) links the system's
//! library, which on Debian 12 (3.40.1) the WAL-reset gate must refuse.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{bin, run, scratch};

/// Runs `crashcells audit ... --format json` in `dir` and parses stdout.
fn audit_json(args: &[&str], dir: &Path) -> (i32, Value, String) {
    let out = bin()
        .arg("audit")
        .args(args)
        .args(["--format", "json", "--no-crash", "--workdir"])
        .arg(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not a JSON audit ({e}): {}\nstderr: {stderr}", String::from_utf8_lossy(&out.stdout))
    });
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn rows(report: &Value) -> &Vec<Value> {
    report["rows"].as_array().expect("rows")
}

/// The audit matrix's leg names, in order, as the library reads them.
fn audit_legs() -> Vec<String> {
    crashcells::matrix::Matrix::load("audit").unwrap().legs.into_iter().map(|l| l.name).collect()
}

/// Whether a row's SQLite has the WAL-reset bug (the resolver must refuse WAL on it).
fn affected(row: &Value) -> bool {
    let v: Vec<u32> = row["sqlite_version"].as_str().unwrap().split('.').map(|p| p.parse().unwrap()).collect();
    crashcells_child::resolver::wal_reset_affected(crashcells_child::resolver::SqliteVersion(v[0], v[1], v[2]))
}

fn one_line_exit_2(out: &Output, what: &str, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{what}: one line expected: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{what}: `{n}` missing in: {stderr}");
    }
}

#[test]
fn malformed_matrices_are_one_line_naming_file_leg_and_value() {
    let dir = scratch();
    let cases: [(&str, &str, &[&str]); 6] = [
        ("bad-toml", "legs = [\n", &["unclosed array"]),
        ("unknown-mode", "[[legs]]\nname = \"w\"\njournal_mode = \"wall\"\n", &["leg `w`", "journal_mode `wall`"]),
        ("unknown-level", "[[legs]]\nname = \"s\"\nsynchronous = \"fast\"\n", &["leg `s`", "synchronous `fast`"]),
        (
            "duplicate",
            "[[legs]]\nname = \"x\"\n[[legs]]\nname = \"x\"\njournal_mode = \"wal\"\n",
            &["duplicate leg name `x`"],
        ),
        ("no-legs", "name = \"e\"\n", &["no legs"]),
        ("empty-legs", "name = \"e\"\nlegs = []\n", &["no legs"]),
    ];
    for (name, text, needles) in cases {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let file = path.display().to_string();
        let mut all = vec![format!("matrix {file}:")];
        all.extend(needles.iter().map(|n| n.to_string()));
        let needles: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = run(&["run", "--matrix", &file], dir.path());
        one_line_exit_2(&out, &format!("run {name}"), &needles);
        let out = bin().args(["audit", "--matrix", &file]).output().unwrap();
        one_line_exit_2(&out, &format!("audit {name}"), &needles);
    }
}

#[test]
fn audit_of_a_missing_matrix_or_workdir_is_exit_2() {
    let out = bin().args(["audit", "--matrix", "nonesuch"]).output().unwrap();
    one_line_exit_2(&out, "unknown matrix", &["unknown matrix `nonesuch`"]);
    let out = bin().args(["audit", "--workdir", "/nonexistent-crashcells-folder"]).output().unwrap();
    one_line_exit_2(&out, "bad workdir", &["--workdir", "not a folder"]);
}

#[test]
fn audit_of_a_child_that_fails_names_it_and_is_exit_2() {
    let dir = scratch();
    let out =
        bin().args(["audit", "--matrix", "default", "--child", "false", "--workdir"]).arg(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // The protocol preflight refuses the child before any leg runs, in one line.
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("crashcells: error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("child `false`") && errors[0].contains("no ready record"), "{stderr}");
}

#[test]
fn audit_says_where_it_runs_and_reports_every_leg_with_its_sqlite() {
    let dir = scratch();
    let (code, report, stderr) = audit_json(&["--matrix", "default"], dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("in {}", dir.path().display())), "{stderr}");
    assert_eq!(report["schema"], "crashcells.audit.v1");
    assert_eq!(report["matrix"], "default");
    assert_eq!(report["workdir"], dir.path().display().to_string());
    let legs: Vec<&str> = rows(&report).iter().map(|r| r["leg"].as_str().unwrap()).collect();
    assert_eq!(legs, ["default", "delete", "wal"]);
    for r in rows(&report) {
        assert!(!r["sqlite_source_id"].as_str().unwrap_or("").is_empty(), "{r}");
        assert!(r["resolver"]["reason"].is_string(), "{r}");
        assert!(r["acked"].as_u64().unwrap() >= 20, "{r}");
        // A honored leg ran what it asked for, at the level it asked for.
        if r["honored"] == true {
            if let Some(mode) = r["requested_mode"].as_str() {
                assert_eq!(r["effective_mode"], mode, "{r}");
            }
            if let Some(level) = r["requested_synchronous"].as_str() {
                assert_eq!(r["ran_synchronous"], level, "{r}");
            }
        }
        let family = if r["effective_mode"] == "wal" { "wal" } else { "rollback" };
        assert_eq!(r["header"], family, "{r}");
    }
}

/// The bundled build links a fixed SQLite: every leg of the audit matrix is honored.
#[cfg(feature = "bundled")]
#[test]
fn bundled_build_honors_every_audit_leg() {
    let dir = scratch();
    let (code, report, stderr) = audit_json(&["--matrix", "audit"], dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rows(&report).len(), audit_legs().len());
    for r in rows(&report) {
        assert!(!affected(r), "the bundled SQLite must be a fixed one: {r}");
        assert_eq!(r["honored"], true, "{r}");
        assert_eq!(r["reason"], "", "{r}");
    }
    assert_eq!(report["summary"]["honored"], audit_legs().len());
}

/// The system build on an affected library: the WAL legs are refused by the
/// gate, naming the bug and the version; the rest are honored, and the
/// default leg runs as DELETE and says so.
#[cfg(feature = "system-sqlite")]
#[test]
fn system_build_refuses_wal_legs_by_the_gate() {
    let dir = scratch();
    let (code, report, stderr) = audit_json(&["--matrix", "audit"], dir.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rows(&report).len(), audit_legs().len());
    if !affected(&rows(&report)[0]) {
        let version = &rows(&report)[0]["sqlite_version"];
        return crashcells::testskip::skip_or_fail(
            crashcells::testskip::Need::AffectedSystemSqlite,
            format_args!("it is {version}"),
        );
    }
    for r in rows(&report) {
        let version = r["sqlite_version"].as_str().unwrap();
        let wal_wanted = r["requested_mode"] == "wal" || r["requested_mode"].is_null();
        if !(affected(r) && wal_wanted) {
            assert_eq!(r["honored"], true, "{r}");
            continue;
        }
        assert_eq!(r["resolver"]["decided_by"], "wal-reset-gate", "{r}");
        assert_eq!((&r["ran_mode"], &r["header"]), (&"delete".into(), &"rollback".into()), "{r}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("WAL-reset gate") && reason.contains(version), "{r}");
        // The default leg asked for no mode: DELETE honors it, and it says why.
        assert_eq!(r["honored"], r["requested_mode"].is_null(), "{r}");
    }
    let refused = rows(&report).iter().filter(|r| r["honored"] == false).count();
    let wal_legs = rows(&report).iter().filter(|r| r["requested_mode"] == "wal").count();
    assert_eq!(refused, wal_legs, "{report}");
}

/// On the system build `run` of the WAL leg probes nothing: exit 3 and a line.
#[cfg(feature = "system-sqlite")]
#[test]
fn system_build_wal_leg_runs_nothing_and_default_runs_as_delete() {
    let dir = scratch();
    let (code, report) = crate::common::run_json(&["run", "--cell", "1", "--leg", "wal", "--trials", "1"], dir.path());
    let r = &report["results"][0];
    if !affected(&serde_json::json!({ "sqlite_version": report["sqlite_version"] })) {
        let version = &report["sqlite_version"];
        return crashcells::testskip::skip_or_fail(
            crashcells::testskip::Need::AffectedSystemSqlite,
            format_args!("it is {version}"),
        );
    }
    assert_eq!((code, &r["verdict"]), (3, &"skip".into()), "{report}");
    assert!(r["reason"].as_str().unwrap().contains("WAL-reset gate"), "{r}");
    let out = run(&["run", "--cell", "1", "--leg", "wal", "--trials", "1"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing ran"), "{out:?}");
    let (code, report) =
        crate::common::run_json(&["run", "--cell", "1", "--leg", "default", "--trials", "1"], dir.path());
    let r = &report["results"][0];
    assert_eq!((code, &r["verdict"], &r["effective_mode"]), (0, &"pass".into(), &"delete".into()), "{report}");
    assert!(r["reason"].as_str().unwrap().contains("ran delete: WAL-reset gate"), "{r}");
}

#[test]
fn a_run_where_nothing_ran_exits_3_with_a_line() {
    let dir = scratch();
    // A stub probes nothing on any build.
    let catalog = crate::common::stub_catalog(dir.path());
    let out = run(&["run", "--cell", "fork-determinism", "--catalog", &catalog], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.lines().any(|l| l.starts_with("crashcells: nothing ran:")), "{stderr}");
}

/// `run --matrix audit` runs cells 1 and 3 on every audit leg and reports the
/// mode and level each ran at. Under a kill, `journal_mode=off` and `memory`
/// can tear a commit (SQLite keeps no rollback journal on disk for them), so
/// those legs may fire; every other leg must pass.
#[cfg(feature = "bundled")]
#[test]
fn run_on_the_audit_matrix_reports_mode_and_level_per_leg() {
    let dir = scratch();
    // Short kill windows: this is about what each leg reports, not where kills land.
    let catalog = crate::common::short_catalog(dir.path());
    let catalog = catalog.to_str().unwrap();
    let args = ["run", "--matrix", "audit", "--cell", "1", "--cell", "3", "--kill", "timed", "--trials", "1"];
    let args = [&args[..], &["--seed", "4", "--catalog", catalog]].concat();
    let (code, report) = crate::common::run_json(&args, dir.path());
    let matrix = crashcells::matrix::Matrix::load("audit").unwrap();
    for cell in ["prefix-durability", "rotation-atomicity"] {
        let results = crate::common::results(&report, cell);
        assert_eq!(results.len(), matrix.legs.len(), "{cell}");
        for (r, leg) in results.iter().zip(&matrix.legs) {
            assert_eq!(r["leg"], leg.name.as_str());
            let mode = leg.journal_mode.map_or("wal".to_string(), |m| m.to_string());
            assert_eq!(r["effective_mode"], mode.as_str(), "{r}");
            let level = leg.synchronous.map_or("full".to_string(), |s| s.to_string());
            assert_eq!(r["synchronous"], level.as_str(), "{r}");
            let may_tear = matches!(mode.as_str(), "off" | "memory");
            let ok = r["verdict"] == "pass" || (may_tear && r["verdict"] == "fire");
            assert!(ok, "{r}");
        }
    }
    assert!(code == 0 || code == 1, "{code}");
    let args = ["run", "--matrix", "audit", "--leg", "wal-sync-off", "--cell", "1", "--kill", "timed", "--trials", "1"];
    let out = run(&[&args[..], &["--catalog", catalog]].concat(), dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.contains("wal-sync-off") && l.contains("wal/off")), "{stdout}");
}
