//! SQLite's library as a leg (matrix `libraries`, `sqlite = "bundled"` or a
//! path): the Python example, which links the system's libsqlite3, runs its
//! `wal` leg on the bundled library where its own refuses WAL; a child that
//! does not load the library skips the leg as not honored; `audit` shows a
//! leg and its bundled twin side by side; a path that is no library is bad
//! input. python3 must be on PATH.

use serde_json::Value;

use crate::common::{bin, one_leg_matrix, python_sqlite, results, run, run_json, scratch, short_catalog};

/// The Python example as a `--child`, optionally behind `env` words.
fn store(env: &str) -> String {
    format!("{env}python3 {}/examples/python-store/store.py", env!("CARGO_MANIFEST_DIR"))
}

/// The bundled SQLite's version: this test binary links the same
/// amalgamation (rusqlite, `bundled` through the reference store).
fn bundled_sqlite() -> String {
    rusqlite::version().to_string()
}

/// Cell 1, one timed trial on the short catalog, on `legs` of the
/// `libraries` matrix: the result per leg.
fn one_trial(child: &str, legs: &[&str]) -> Value {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let mut args = vec!["run", "--matrix", "libraries", "--child", child, "--cell", "1", "--kill", "timed"];
    args.extend(["--trials", "1", "--seed", "41", "--catalog", catalog.to_str().unwrap()]);
    for leg in legs {
        args.extend(["--leg", leg]);
    }
    run_json(&args, dir.path()).1
}

fn on_leg<'a>(report: &'a Value, leg: &str) -> &'a Value {
    let rs = results(report, "prefix-durability");
    rs.into_iter().find(|r| r["leg"] == leg).unwrap_or_else(|| panic!("no result on {leg}: {report:#}"))
}

#[test]
fn the_python_store_runs_wal_on_the_bundled_library_and_passes() {
    let report = one_trial(&store(""), &["bundled-wal"]);
    let r = on_leg(&report, "bundled-wal");
    assert_eq!(r["verdict"], "pass", "{r:#}");
    assert_eq!(r["effective_mode"], "wal", "{r:#}");
    let on = format!("on SQLite {} (bundled)", bundled_sqlite());
    assert!(r["reason"].as_str().unwrap().starts_with(&on), "{on}: {r:#}");
}

/// The same store on its own library: the `wal` leg skips naming the
/// WAL-reset gate where that library has the bug (3.40.1 here), as before.
#[test]
fn the_python_store_on_its_own_library_keeps_its_gate() {
    let report = one_trial(&store(""), &["wal"]);
    let r = on_leg(&report, "wal");
    let own = python_sqlite();
    let affected = crashcells_protocol::SqliteVersion::parse(&own).is_some_and(crashcells_protocol::wal_reset_affected);
    match affected {
        true => {
            assert_eq!(r["verdict"], "skip", "{r:#}");
            let reason = r["reason"].as_str().unwrap();
            assert!(reason.contains("WAL-reset gate") && reason.contains(&own), "{reason}");
        }
        false => assert_eq!(r["verdict"], "pass", "{r:#}"),
    }
}

/// A child whose loader never sees the library (its `LD_LIBRARY_PATH`
/// removed, as a runtime with SQLite compiled in never looks) ran its own
/// SQLite: the bundled leg is no evidence for the bundled library.
#[test]
fn a_child_that_did_not_load_the_library_skips_the_leg_as_not_honored() {
    let report = one_trial(&store("env -u LD_LIBRARY_PATH "), &["bundled-delete"]);
    let r = on_leg(&report, "bundled-delete");
    let (own, bundled) = (python_sqlite(), bundled_sqlite());
    if own == bundled {
        // Nothing tells the two apart: the child ran the version asked for.
        assert_eq!(r["verdict"], "pass", "{r:#}");
        return;
    }
    assert_eq!(r["verdict"], "skip", "{r:#}");
    let want = format!("requested SQLite library bundled ({bundled}), child ran SQLite {own}");
    assert!(r["reason"].as_str().unwrap().starts_with(&want), "{want}: {r:#}");
}

#[test]
fn audit_shows_a_leg_and_its_bundled_twin_side_by_side() {
    let dir = scratch();
    let legs = "[[legs]]\nname = \"wal\"\njournal_mode = \"wal\"\n\n\
                [[legs]]\nname = \"bundled-wal\"\njournal_mode = \"wal\"\nsqlite = \"bundled\"\n";
    let matrix = one_leg_matrix(dir.path(), legs);
    let out = bin()
        .args(["audit", "--no-crash", "--child", &store(""), "--matrix"])
        .arg(&matrix)
        .arg("--workdir")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let (own, bundled) = (python_sqlite(), bundled_sqlite());
    let row = |leg: &str| text.lines().find(|l| l.starts_with(&format!("{leg} "))).unwrap_or_else(|| panic!("{text}"));
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().take(2).collect();
    assert_eq!(header, ["leg", "sqlite"], "{text}");
    assert!(row("wal").contains(&format!("{own} (own)")), "{text}");
    let twin = row("bundled-wal");
    assert!(
        twin.contains(&format!("{bundled} (bundled)")) && twin.contains("wal/full") && twin.ends_with("yes"),
        "{text}"
    );
}

#[test]
fn a_library_path_that_is_no_sqlite_library_is_bad_input() {
    let dir = scratch();
    let matrix = one_leg_matrix(dir.path(), "[[legs]]\nname = \"x\"\nsqlite = \"no/such/libsqlite3.so\"\n");
    let out = run(&["run", "--matrix", matrix.to_str().unwrap(), "--cell", "1", "--kill", "timed"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("sqlite library `no/such/libsqlite3.so`:"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("error")).count(), 1, "{err}");
}
