//! The ORM example store (`examples/sqlalchemy-store`: SQLAlchemy's ORM on
//! the Python adapter library) and its CI check. `child-check` passes it
//! and its mutant `racy-claim` (sqlite3's legacy transaction
//! control: the ORM's claim reads outside the transaction that writes)
//! fires cell 2, which passes the intact store. An author's first version,
//! without `store_errors`, has SQLite's failure under SQLAlchemy's classes
//! named as the store's (exit 3), not as an adapter mistake (exit 2).
//!
//! They need a Python with SQLAlchemy: `CRASHCELLS_SQLALCHEMY_PYTHON`, else
//! the venv `.ci/run` makes (`target/ci-sqlalchemy`, the pinned version of
//! `examples/sqlalchemy-store/requirements.txt`). Without one those tests
//! say so and return, or fail under CI (`crashcells::testskip`).

use std::process::Command;

use crashcells::testskip::{Need, skip_or_fail};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const STORE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sqlalchemy-store/store.py");

/// The interpreter with SQLAlchemy, or `None` having said why the test
/// does nothing (or failed it, under CI).
fn sqlalchemy_python() -> Option<String> {
    let python = std::env::var("CRASHCELLS_SQLALCHEMY_PYTHON")
        .unwrap_or_else(|_| format!("{ROOT}/target/ci-sqlalchemy/bin/python"));
    let imports = Command::new(&python).args(["-c", "import sqlalchemy"]).output().is_ok_and(|o| o.status.success());
    if !imports {
        skip_or_fail(Need::SqlAlchemy, format_args!("`{python}` cannot import sqlalchemy"));
        return None;
    }
    Some(python)
}

// child-check is not run here: `.ci/run` runs the example's whole ci-check
// (child-check first), about two minutes of SQLAlchemy imports on two cores;
// the suite runs the part that is this store's finding, the mutant.
#[test]
fn ci_check_says_the_mutant_fires_cell_2() {
    let Some(python) = sqlalchemy_python() else { return };
    let mut cmd = Command::new(&python);
    // One rerun of the fire, not five: the verdict is checked, not the rate.
    cmd.current_dir(ROOT).env("PATH", crate::common::path_with(&[])).env("CRASHCELLS_REFIRE", "1");
    cmd.arg(format!("{ROOT}/examples/sqlalchemy-store/ci-check"));
    cmd.args(["--crashcells", env!("CARGO_BIN_EXE_crashcells"), "--python", &python]);
    cmd.args(["--part", "mutant"]);
    let out = cmd.output().expect("python runs ci-check");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("ok    fire  mutant racy-claim: consume-once/"), "{text}");
    assert!(text.contains("every verdict as expected"), "{text}");
}

#[test]
fn cell_2_passes_the_intact_store() {
    let Some(python) = sqlalchemy_python() else { return };
    let scratch = crate::common::scratch();
    let child = format!("{python} {STORE}");
    // As many races as the mutant's in ci-check, where each of them fires.
    let args =
        ["run", "--child", &child, "--cell", "consume-once", "--leg", "default", "--kill", "none", "--seed", "11"];
    let args = [&args[..], &["--trials", "3"]].concat();
    let (code, report) = crate::common::run_json(&args, scratch.path());
    let results = crate::common::results(&report, "consume-once");
    assert!(!results.is_empty() && results.iter().all(|r| r["verdict"] == "pass"), "{report:#}");
    assert_eq!(code, 0, "{report:#}");
}

#[test]
fn without_store_errors_a_failure_of_sqlite_is_still_the_stores() {
    let Some(python) = sqlalchemy_python() else { return };
    let scratch = crate::common::scratch();
    // A file that is no database: SQLite refuses it, SQLAlchemy wraps that
    // in its DatabaseError, which the variant's store_errors does not name.
    let db = scratch.path().join("s.db");
    std::fs::write(&db, vec![b'x'; 4096]).unwrap();
    let variant = format!("{ROOT}/tests/adapters/sqlalchemy_variant.py");
    let out = Command::new(&python)
        .arg(&variant)
        .args(["no-store-errors", "append", "--stop-after", "1", "--db"])
        .arg(&db)
        .arg("--acks")
        .arg(scratch.path().join("acks"))
        .output()
        .expect("python runs the variant");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("sqlalchemy_variant.py: error: (sqlite3.DatabaseError) file is not a database"), "{err}");
    assert!(!err.contains("crashcells adapter"), "{err}");
}
