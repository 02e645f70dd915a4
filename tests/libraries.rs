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
    one_trial_with(child, legs, &[])
}

/// [`one_trial`] with more of `run`'s flags.
fn one_trial_with(child: &str, legs: &[&str], flags: &[&str]) -> Value {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let mut args = vec!["run", "--matrix", "libraries", "--child", child, "--cell", "1", "--kill", "timed"];
    args.extend(["--trials", "1", "--seed", "41", "--catalog", catalog.to_str().unwrap()]);
    for leg in legs {
        args.extend(["--leg", leg]);
    }
    args.extend(flags);
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

/// A bundled leg's operations are forked by a fork server of the
/// library's own (the run's server loaded the child's own SQLite), and
/// the forked child's ready record reports the bundled SQLite; with
/// `--fork-server off` the leg runs exec'd, on the same library.
#[test]
fn a_bundled_leg_is_forked_by_its_librarys_server_and_execd_without_one() {
    let on = format!("on SQLite {} (bundled)", bundled_sqlite());
    for (flags, children) in [(&[][..], "forked"), (&["--fork-server", "off", "--warm-pool", "off"][..], "exec")] {
        let report = one_trial_with(&store(""), &["bundled-delete"], flags);
        let r = on_leg(&report, "bundled-delete");
        assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("pass"), Some(children)), "{r:#}");
        assert!(r["reason"].as_str().unwrap().starts_with(&on), "{on}: {r:#}");
        // A server that served every operation, or none offered: nothing to say.
        assert!(report.get("launcher").is_none(), "{report:#}");
    }
}

/// A library's fork server whose forks run another SQLite than an exec'd
/// child with the same loader path (here a wrapper that clears the path
/// for the server alone) is not taken: the leg runs exec'd, on the
/// library, with the verdict an exec'd run gives, and the report's
/// `launcher` says why.
#[test]
fn a_librarys_server_whose_forks_run_another_sqlite_leaves_its_legs_execd() {
    let (own, bundled) = (python_sqlite(), bundled_sqlite());
    if own == bundled {
        // Nothing tells the two apart: no server runs another SQLite.
        return;
    }
    let dir = scratch();
    let wrap = dir.path().join("wrap.sh");
    let script = "for a in \"$@\"; do [ \"$a\" = fork-server ] && unset LD_LIBRARY_PATH; done\nexec \"$@\"\n";
    std::fs::write(&wrap, script).unwrap();
    let report = one_trial(&store(&format!("sh {} ", wrap.display())), &["bundled-delete"]);
    let r = on_leg(&report, "bundled-delete");
    assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("pass"), Some("exec")), "{r:#}");
    assert!(r["reason"].as_str().unwrap().starts_with(&format!("on SQLite {bundled} (bundled)")), "{r:#}");
    let launcher = report["launcher"].as_str().unwrap_or_default();
    let want = format!("fork server of the SQLite library bundled ({bundled}): its first fork ran SQLite {own}");
    assert!(launcher.starts_with(&want), "{want}: {report:#}");
}

/// A fire found through a library's fork server is confirmed exec'd on
/// that library: an exec'd child without it would run the child's own
/// SQLite, and its leg would skip as not honored instead.
#[test]
fn a_fire_found_forked_on_a_bundled_leg_is_confirmed_execd_on_the_library() {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let (child, catalog) = (store(""), catalog.to_str().unwrap());
    let mut args = vec!["run", "--matrix", "libraries", "--child", &child, "--leg", "bundled-delete"];
    args.extend(["--cell", "1", "--kill", "syscall", "--seed", "7", "--mutant", "ack-before-commit"]);
    args.extend(["--catalog", catalog]);
    let report = run_json(&args, dir.path()).1;
    let r = on_leg(&report, "bundled-delete");
    if r["reason"].as_str().unwrap_or_default().contains("unavailable") {
        return crate::common::tracing_refused(&r["reason"]);
    }
    assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("fire"), Some("forked")), "{r:#}");
    let details = r["details"].as_array().unwrap();
    let confirmed =
        details.iter().any(|d| d.as_str().unwrap().starts_with("confirmed exec'd (not through the fork server)"));
    assert!(confirmed, "{r:#}");
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
