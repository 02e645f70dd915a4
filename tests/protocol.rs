//! The external child protocol (docs/PROTOCOL.md): the Python store runs the
//! default gate and its mutants fire, a tiny adapter written from the
//! document passes `child-check`, and children of another protocol (or of
//! none) are refused with exit 2 and a message that says why. python3 must be
//! on PATH.

use serde_json::Value;

use crate::common::{bin, python_sqlite, results, run, run_json, scratch};

/// A `--child` value for a Python script of this repository.
fn python(script: &str) -> String {
    format!("python3 {}/{script}", env!("CARGO_MANIFEST_DIR"))
}

const STORE: &str = "examples/python-store/store.py";

#[test]
fn python_store_passes_every_cell_of_the_gate_or_skips_with_reasons() {
    let dir = scratch();
    // Cells 1 to 3, each leg and kill mode of the gate, each short: one trial
    // (or race) of a short window, and a few sampled kill points. Cells 4
    // and 5 have a test of their own.
    let catalog = crate::common::short_catalog(dir.path());
    let args = [
        "run",
        "--child",
        &python(STORE),
        "--cell",
        "1",
        "--cell",
        "2",
        "--cell",
        "3",
        "--seed",
        "21",
        "--trials",
        "1",
        "--points",
        "3",
        "--catalog",
    ];
    let (code, report) = run_json(&[&args[..], &[catalog.to_str().unwrap()]].concat(), dir.path());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["sqlite_version"], python_sqlite(), "the report names the child's SQLite");
    for id in ["prefix-durability", "consume-once", "rotation-atomicity"] {
        let rs = results(&report, id);
        assert!(!rs.is_empty(), "{id}");
        for r in rs {
            match r["verdict"].as_str().unwrap() {
                "pass" => {}
                "skip" => assert!(!r["reason"].as_str().unwrap().is_empty(), "a skip states its reason: {r:#}"),
                _ => panic!("{id} neither passed nor skipped: {r:#}"),
            }
        }
    }
    assert!(report["summary"]["pass"].as_u64().unwrap() >= 3, "{:#}", report["summary"]);
}

#[test]
fn python_store_skips_wal_only_where_its_sqlite_has_the_wal_reset_bug() {
    let dir = scratch();
    let args = ["run", "--child", &python(STORE), "--cell", "1", "--leg", "wal", "--trials", "1", "--seed", "22"];
    let catalog = crate::common::short_catalog(dir.path());
    let args = [&args[..], &["--kill", "timed", "--catalog", catalog.to_str().unwrap()]].concat();
    let (_, report) = run_json(&args, dir.path());
    let r = &results(&report, "prefix-durability")[0];
    // The range is the protocol's (its corpus, protocol/corpus/version.json).
    let v = crashcells_protocol::SqliteVersion::parse(&python_sqlite()).expect("python's sqlite3 version");
    if crashcells_protocol::wal_reset_affected(v) {
        assert_eq!(r["verdict"], "skip", "{r:#}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("WAL-reset gate") && reason.contains(&python_sqlite()), "{reason}");
    } else {
        assert_eq!(r["verdict"], "pass", "{r:#}");
    }
}

/// Runs a Python mutant on cell `cell` until it fires. A run stops at its
/// first fire. Timed kills seldom land between the two commits of a split
/// rotation (about 1 trial in 17 measured on the Python store), so the
/// bound is generous; a short window keeps each trial short.
fn python_mutant_fires(cell: &str, mutant: &str, needle: &str) {
    let dir = scratch();
    let args = ["run", "--child", &python(STORE), "--cell", cell, "--leg", "default", "--mutant", mutant];
    let catalog = crate::common::short_catalog(dir.path());
    let extra = ["--seed", "23", "--trials", "100", "--kill", "timed", "--catalog", catalog.to_str().unwrap()];
    let (code, report) = run_json(&[&args[..], &extra].concat(), dir.path());
    assert_eq!(code, 1, "{mutant}: {report:#}");
    let fired = report["results"].as_array().unwrap().iter().find(|r| r["verdict"] == "fire");
    let fired = fired.unwrap_or_else(|| panic!("{mutant} did not fire: {report:#}"));
    assert!(fired["reason"].as_str().unwrap().contains(needle), "{mutant}: {fired:#}");
    assert!(fired["repro"].as_str().unwrap().contains("--child"), "{fired:#}");
}

// One test per mutant, so that the slow ones run beside other tests.
#[test]
fn python_ack_before_commit_fires() {
    python_mutant_fires("1", "ack-before-commit", "was lost");
}

#[test]
fn python_racy_claim_fires() {
    python_mutant_fires("2", "racy-claim", "racers won");
}

#[test]
fn python_split_rotation_fires() {
    python_mutant_fires("3", "split-rotation", "orphan");
}

#[test]
fn python_store_passes_fork_determinism_and_outbox_exactly_once() {
    let dir = scratch();
    let args = ["run", "--child", &python(STORE), "--cell", "4", "--cell", "5", "--leg", "default"];
    let (code, report) =
        run_json(&[&args[..], &["--trials", "1", "--points", "6", "--seed", "25"]].concat(), dir.path());
    assert_eq!(code, 0, "{report:#}");
    for id in ["fork-determinism", "outbox-exactly-once"] {
        let rs = results(&report, id);
        assert_eq!(rs.len(), 2, "timed and syscall: {report:#}");
        for r in rs {
            let refused = r["verdict"] == "skip" && r["reason"].as_str().unwrap().contains("unavailable");
            if refused {
                crate::common::tracing_refused(&r["reason"]);
                continue;
            }
            assert_eq!(r["verdict"], "pass", "{r:#}");
        }
    }
}

#[test]
fn a_version_1_child_skips_the_cells_whose_operations_it_lacks() {
    let dir = scratch();
    let args = ["run", "--child", &python("tests/adapters/tiny.py"), "--cell", "4", "--cell", "5", "--leg", "default"];
    let (code, report) =
        run_json(&[&args[..], &["--trials", "1", "--points", "1", "--seed", "26"]].concat(), dir.path());
    assert_eq!(code, 3, "nothing ran: {report:#}");
    for (id, op) in [("fork-determinism", "fork"), ("outbox-exactly-once", "deliver")] {
        let rs = results(&report, id);
        assert_eq!(rs.len(), 2, "{report:#}");
        for r in rs {
            assert_eq!(r["verdict"], "skip", "{r:#}");
            assert_eq!(r["reason"], format!("the child does not implement `{op}`"), "{r:#}");
        }
    }
}

/// A version-1 child has no `operations` list: one without `rotate` says
/// so with the protocol's "unsupported operation" exit code (69). Cell 3
/// then skips on every leg and kill mode, naming the operation, never six
/// errors; `child-check` does not run the rotate checks, and the child
/// conforms.
#[test]
fn a_version_1_child_without_rotate_says_so_and_the_cell_skips() {
    let dir = scratch();
    let child = python("tests/adapters/tiny_without_rotate.py");
    let args = ["run", "--child", &child, "--cell", "3", "--trials", "1", "--seed", "27"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 3, "nothing ran: {report:#}");
    let rs = results(&report, "rotation-atomicity");
    assert_eq!(rs.len(), 6, "three legs, timed and syscall: {report:#}");
    for r in rs {
        assert_eq!(
            (&r["verdict"], &r["reason"]),
            (&Value::from("skip"), &Value::from("the child does not implement `rotate`")),
            "{r:#}"
        );
    }
    let (code, report) = child_check(&child);
    assert_eq!((code, failing(&report)), (0, Vec::<String>::new()), "{report:#}");
    for check in ["rotate", "rotate-state"] {
        let c = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == check).unwrap();
        assert_eq!(c["status"], "not-run", "{c:#}");
        assert_eq!(c["detail"], "the child does not implement `rotate` (it exited 69: unsupported operation)");
    }
}

#[test]
fn child_check_runs_the_optional_checks_only_for_a_child_that_lists_them() {
    let optional =
        ["rotate-shapes", "fork", "fork-state", "deliver", "deliver-state", "catch-up-arrived", "catch-up-missing"];
    let status = |report: &Value, check: &str| -> (String, String) {
        let checks = report["checks"].as_array().unwrap();
        let c = checks.iter().find(|c| c["check"] == check).unwrap_or_else(|| panic!("{check} not reported"));
        (c["status"].as_str().unwrap().to_string(), c["detail"].as_str().unwrap_or_default().to_string())
    };
    // Only the optional checks' steps (and `append`'s) run: the others are
    // the whole check's tests.
    let (_, report) = child_check_only(&python(STORE), &optional);
    for check in optional {
        assert_eq!(status(&report, check).0, "ok", "{check}: {report:#}");
    }
    // Every known check is reported; those of an operation the child does
    // not list are `not run`, and say which operation.
    let (_, report) = child_check_only(&python("tests/adapters/tiny.py"), &optional);
    for check in optional {
        let (status, detail) = status(&report, check);
        assert_eq!(status, "not-run", "{check}: {report:#}");
        let named = ["rotate-shapes", "fork", "deliver", "catch-up"];
        assert!(named.iter().any(|n| detail.contains(n)), "{detail}");
    }
    // A child that lists `rotate-shapes` but rotates without them fails the
    // check: cell 3 would judge its rotations by a rule it does not follow.
    let (code, report) = child_check_only(&variant("ignore-shapes"), &["rotate-shapes"]);
    let (status, detail) = status(&report, "rotate-shapes");
    assert_eq!((code, status.as_str()), (1, "fail"), "{report:#}");
    assert!(detail.contains("without `carried`"), "{detail}");
}

/// `child-check --format json` of `child`: exit code and report.
fn child_check(child: &str) -> (i32, Value) {
    child_check_only(child, &[])
}

/// `child-check --format json --only CHECKS` of `child` (every check when
/// `only` is empty): exit code and report.
fn child_check_only(child: &str, only: &[&str]) -> (i32, Value) {
    let dir = scratch();
    let only = (!only.is_empty()).then(|| format!("--only={}", only.join(",")));
    let out = bin()
        .args(["child-check", "--child", child, "--format", "json", "--workdir"])
        .arg(dir.path())
        .args(only)
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (out.status.code().unwrap_or(-1), report)
}

fn failing(report: &Value) -> Vec<String> {
    let checks = report["checks"].as_array().expect("checks");
    checks.iter().filter(|c| c["status"] == "fail").map(|c| format!("{}: {}", c["check"], c["detail"])).collect()
}

#[test]
fn a_tiny_adapter_written_from_the_document_passes_child_check() {
    let (code, report) = child_check(&python("tests/adapters/tiny.py"));
    assert_eq!(failing(&report), Vec::<String>::new(), "{report:#}");
    assert_eq!((code, &report["conforming"]), (0, &Value::Bool(true)), "{report:#}");
    assert_eq!(report["schema"], "crashcells.child-check.v1");
}

#[test]
fn the_python_store_and_the_reference_child_pass_child_check() {
    for child in [python(STORE), String::new()] {
        let (code, report) = if child.is_empty() {
            let out = bin().args(["child-check", "--format", "json"]).output().unwrap();
            (out.status.code().unwrap(), serde_json::from_slice(&out.stdout).unwrap())
        } else {
            child_check(&child)
        };
        assert_eq!((code, failing(&report)), (0, Vec::new()), "{child}: {report:#}");
    }
}

#[test]
fn child_check_names_what_a_broken_child_gets_wrong() {
    let cases = [
        ("version", "protocol-version", "speaks protocol 3"),
        ("journal", "ready", "READY!!"),
        ("stdout", "ready", "on stdout"),
    ];
    for (how, check, needle) in cases {
        let (code, report) = child_check(&format!("{} {how}", python("tests/adapters/wrong.py")));
        assert_eq!(code, 1, "{how}: {report:#}");
        let failed = failing(&report);
        assert!(
            failed.iter().any(|f| f.starts_with(&format!("\"{check}\"")) && f.contains(needle)),
            "{how}: {failed:?}"
        );
    }
}

#[test]
fn a_wrong_version_or_garbage_child_stops_the_run_with_exit_2() {
    let cases = [
        ("version", "the child speaks protocol 3 but this driver speaks 1 and 2"),
        ("journal", "ack journal line 1 is not a ready record: \"READY!!\""),
        ("stdout", "wrote no ready record to its ack journal (it printed \"hello from a store"),
    ];
    for (how, needle) in cases {
        let dir = scratch();
        let child = format!("{} {how}", python("tests/adapters/wrong.py"));
        let out = run(&["run", "--child", &child, "--cell", "1", "--seed", "24"], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{how}: {stderr}");
        assert!(stderr.contains(needle), "{how}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{how}: one line expected: {stderr}");
        assert!(stderr.contains("docs/PROTOCOL.md"), "{stderr}");
    }
}

/// A `--child` value for a variant of the Python store (tests/adapters/variant.py).
fn variant(names: &str) -> String {
    format!("{} {names}", python("tests/adapters/variant.py"))
}

/// The checks of a child-check report, as `(check, status, detail)`.
fn checks(report: &Value) -> Vec<(String, String, String)> {
    let all = report["checks"].as_array().expect("checks");
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    all.iter().map(|c| (s(&c["check"]), s(&c["status"]), s(&c["detail"]))).collect()
}

/// Every check docs/PROTOCOL.md §7 names, in its order.
const EVERY_CHECK: [&str; 33] = [
    "ready",
    "protocol-version",
    "ready-fields",
    "stop-after",
    "acks",
    "append-state",
    "ack-after-effect",
    "rotate",
    "rotate-state",
    "rotate-shapes",
    "dump-canonical",
    "dump-deterministic",
    "dump-batch",
    "park",
    "claim-barrier",
    "claim-exit-codes",
    "claim-state",
    "config-home",
    "config-errors",
    "journal-policy",
    "fork",
    "fork-state",
    "deliver",
    "deliver-state",
    "catch-up-arrived",
    "catch-up-missing",
    "co-append",
    "co-append-state",
    "syscall-determinism",
    "fork-server",
    "warm-pool",
    "own-group",
    "own-folder",
];

#[test]
fn child_check_lists_every_check_when_operations_fail_and_checks_dump_on_what_succeeded() {
    let (code, report) = child_check(&variant("rotate-fails,park-fails"));
    assert_eq!(code, 1, "{report:#}");
    let all = checks(&report);
    let names: Vec<&str> = all.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(names, EVERY_CHECK, "{report:#}");
    let status = |name: &str| all.iter().find(|(c, _, _)| c == name).map(|(_, s, d)| (s.clone(), d.clone())).unwrap();
    assert_eq!(status("rotate").0, "fail", "{report:#}");
    assert_eq!(status("park").0, "fail", "{report:#}");
    assert_eq!(status("rotate-state"), ("not-run".into(), "needs a successful `rotate`".into()));
    for claim in ["claim-barrier", "claim-exit-codes", "claim-state"] {
        let (s, why) = status(claim);
        assert_eq!(s, "not-run", "{claim}: {report:#}");
        assert!(why.starts_with("needs a successful `park`") || why.starts_with("needs claimants"), "{claim}: {why}");
    }
    let not_run = all.iter().filter(|(_, s, _)| s == "not-run").count();
    assert_eq!(not_run, 4, "rotate-state and the three claim checks: {report:#}");
    // `dump` is still checked, on the store the successful `append` left.
    for dump in ["dump-canonical", "dump-deterministic"] {
        let (s, detail) = status(dump);
        assert_eq!(s, "ok", "{dump}: {report:#}");
        assert!(detail.ends_with("on the states of append"), "{dump}: {detail}");
    }
}

/// `syscall-determinism` records `append --stop-after 3` twice: the
/// example store makes the same calls both times and passes; a store that
/// commits a random number of extra rows after each append gets the
/// warning, naming the first call that differs and what a run does about
/// it, and still conforms (its calls are no protocol fault).
#[test]
fn child_check_warns_of_a_store_whose_system_calls_differ_between_two_recordings() {
    if let Some(why) = crashcells::kill::syscall::unsupported_arch() {
        return crate::common::tracing_refused(why);
    }
    let (_, good) = child_check_only(&python(STORE), &["syscall-determinism"]);
    let (code, bad) = child_check_only(&python("tests/adapters/nondeterministic.py"), &["syscall-determinism"]);
    let of = |report: &Value| checks(report).into_iter().find(|(c, _, _)| c == "syscall-determinism").unwrap();
    let (_, status, detail) = of(&good);
    if status == "not-run" {
        crate::common::tracing_refused(&detail);
        return;
    }
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains("made the same"), "{detail}");
    let (_, status, detail) = of(&bad);
    assert_eq!(status, "warning", "{detail}");
    assert!(detail.contains("differ (") && detail.contains(": counted call "), "{detail}");
    assert!(detail.contains("reported as an `error` naming the non-determinism, never as a fire"), "{detail}");
    assert_eq!((code, failing(&bad)), (0, Vec::<String>::new()), "{bad:#}");
}

/// A store whose restart resends what already arrived (at least once by
/// design, as Hermes's gateway) keeps the protocol: `catch-up-arrived` is
/// the store's finding, named with the cell that fires on it, and the
/// adapter conforms.
#[test]
fn a_stores_own_finding_is_reported_as_one_and_the_adapter_conforms() {
    let (code, report) = child_check_only(&variant("resend"), &["catch-up-arrived", "catch-up-missing"]);
    assert_eq!((code, &report["conforming"]), (0, &Value::Bool(true)), "{report:#}");
    let all = report["checks"].as_array().unwrap();
    let arrived = all.iter().find(|c| c["check"] == "catch-up-arrived").unwrap();
    assert_eq!((&arrived["status"], &arrived["cell"]), (&Value::from("finding"), &Value::from("outbox-exactly-once")));
    assert!(arrived["detail"].as_str().unwrap().contains("delivered 2 times"), "{arrived:#}");
    assert!(all.iter().all(|c| c["status"] != "fail"), "{report:#}");
}

#[test]
fn a_store_without_rotation_that_refuses_delete_with_a_reason_conforms() {
    // The checks it is about: rotation's, the config's, and `dump` on the
    // states the operations that succeeded left (`park`: the claim's).
    let only = ["rotate", "config-home", "park", "dump-canonical"];
    let (code, report) = child_check_only(&variant("no-rotate,refuse-delete"), &only);
    assert_eq!((code, failing(&report)), (0, Vec::<String>::new()), "{report:#}");
    let all = checks(&report);
    assert_eq!(all.len(), EVERY_CHECK.len(), "{report:#}");
    let of = |name: &str| all.iter().find(|(c, _, _)| c == name).unwrap().clone();
    for rotation in ["rotate", "rotate-state"] {
        let (_, s, why) = of(rotation);
        assert_eq!(s, "not-run", "{report:#}");
        assert!(why.contains("does not implement `rotate`"), "{why}");
    }
    let (_, s, detail) = of("config-home");
    assert_eq!(s, "ok", "{report:#}");
    assert!(detail.contains("refused by the child's resolver") && detail.contains("applies WAL on open"), "{detail}");
    assert!(of("dump-canonical").2.ends_with("on the states of append, claim"), "{report:#}");
}

#[test]
fn a_child_that_runs_another_mode_without_a_resolver_fails_config_home_and_shows_why() {
    let dir = scratch();
    let out = bin()
        .args(["child-check", "--only", "config-home,config-errors", "--child", &variant("silent-wal"), "--workdir"])
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("config-home")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("FAIL") && line.contains("silent fallback"), "{line}");
    assert_eq!(text.lines().filter(|l| l.starts_with("FAIL")).count(), 1, "{text}");
}

/// A timed leg whose child's ready record shows it will not honor the mode
/// skips at once. The window here is one no child reaches in ten seconds
/// (ten million appends) and the deadline a minute: before, the trial waited
/// for the window until the deadline ended it as an error.
#[test]
fn a_leg_the_child_will_not_honor_skips_at_its_ready_record() {
    let dir = scratch();
    let catalog = dir.path().join("cells");
    std::fs::create_dir(&catalog).unwrap();
    let cell = include_str!("../cells/1-prefix-durability.toml").replace("window = 200", "window = 10000000");
    assert!(cell.contains("window = 10000000"));
    std::fs::write(catalog.join("1-prefix-durability.toml"), cell).unwrap();
    let catalog = catalog.to_string_lossy().into_owned();
    let child = variant("refuse-delete");
    let args = [
        "run",
        "--child",
        &child,
        "--catalog",
        &catalog,
        "--cell",
        "1",
        "--leg",
        "delete",
        "--kill",
        "timed",
        "--deadline",
        "60",
        "--seed",
        "26",
    ];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 3, "every leg skipped: {report:#}");
    let r = &results(&report, "prefix-durability")[0];
    assert_eq!(r["verdict"], "skip", "{r:#}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("requested delete, child ran wal") && reason.contains("applies WAL on open"),
        "{reason}"
    );
    assert_eq!(r["effective_mode"], "wal", "{r:#}");
    let ms = r["duration_ms"].as_u64().unwrap();
    assert!(ms < 10_000, "the skip took {ms} ms: it waited for the window");
}

/// A store whose start costs real CPU (a heavy import), exec'd for every
/// operation, races eight claimants at a time on every unit of the pool: its
/// races must reach verdicts, not "racers were not ready" errors, because
/// the readiness deadline scales with the start the preflight measured and
/// the claimants that start at once. A deadline that does not scale (2 s
/// here, against 8 × 2 × 0.3 s of CPU on a couple of cores) fails this.
#[test]
fn a_slow_starting_store_gets_verdicts_not_readiness_errors() {
    let dir = scratch();
    let child = format!("env CRASHCELLS_EXAMPLE_SLOW_START=0.3 {}", python(STORE));
    let args = ["run", "--child", &child, "--cell", "2", "--kill", "timed", "--trials", "2"];
    let rest = ["--seed", "7", "--deadline", "2", "--jobs", "2", "--fork-server", "off", "--warm-pool", "off"];
    let (code, report) = run_json(&[&args[..], &rest[..]].concat(), dir.path());
    let r = &results(&report, "consume-once")[0];
    assert_eq!((code, r["verdict"].as_str()), (0, Some("pass")), "{r:#}");
}

/// A `--child` for the Python store started 1.2 s late (a sleep, no CPU:
/// the test loads no core), written in `dir`.
fn slow_store(dir: &std::path::Path) -> String {
    let store = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(STORE);
    let slow = dir.join("slow.sh");
    std::fs::write(&slow, format!("sleep 1.2\nexec python3 {} \"$@\"\n", store.display())).unwrap();
    format!("sh {}", slow.display())
}

/// `child-check` scales its deadline as `run` does (docs/PROTOCOL.md §1):
/// a store that takes 1.2 s to start is checked with `--deadline 1` and
/// conforms, its claimant held at
/// the barrier while a `dump` reads the store (two children at once) too,
/// because every wait is its measured start × 2 × 3. A deadline that does
/// not scale fails its `ready` check. (Its `--only`: the fork server's
/// check runs each operation exec'd too, 1.2 s a start.)
#[test]
fn child_check_scales_its_deadline_with_the_childs_start() {
    let dir = scratch();
    let child = slow_store(dir.path());
    let out = bin()
        .args(["child-check", "--deadline", "1", "--only", "claim-barrier", "--workdir"])
        .arg(dir.path())
        .args(["--child", &child])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("ok      claim-barrier"), "{stdout}");
}

/// `audit` scales its waits as `run` does: the same 1.2 s store, audited
/// with `--deadline 1`, gets its row (the preflight assumes a start as
/// long as the default deadline; the leg's wait for its acks is the
/// measured start × 3). Before, the preflight's 1 s ended the audit.
#[test]
fn audit_scales_its_deadline_with_the_childs_start() {
    let dir = scratch();
    let child = slow_store(dir.path());
    let matrix = crate::common::one_leg_matrix(dir.path(), "[[legs]]\nname = \"delete\"\njournal_mode = \"delete\"\n");
    let out = bin()
        .args(["audit", "--no-crash", "--deadline", "1", "--format", "json", "--matrix"])
        .arg(&matrix)
        .arg("--workdir")
        .arg(dir.path())
        .args(["--child", &child])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let row = &report["rows"][0];
    assert_eq!((&row["leg"], &row["ran_mode"]), (&Value::from("delete"), &Value::from("delete")), "{report:#}");
}

/// A result run through the Python store's fork server, through its warm
/// pool, and with every operation exec'd reaches the same verdict at the
/// same kill points: forking or warming is only where the interpreter's
/// start is paid. The report says when a warm pool ran the operations.
#[test]
fn a_result_through_the_fork_server_or_warm_pool_matches_the_exec_d_one_point_for_point() {
    let dir = scratch();
    const LAUNCHERS: [[&str; 4]; 3] = [
        ["--fork-server", "on", "--warm-pool", "off"],
        ["--fork-server", "off", "--warm-pool", "on"],
        ["--fork-server", "off", "--warm-pool", "off"],
    ];
    let run = |launcher: &[&str], mutant: &[&str]| {
        let args = ["run", "--child", &python(STORE), "--cell", "1", "--leg", "delete", "--kill", "syscall"];
        run_json(&[&args[..], &["--seed", "9"], launcher, mutant].concat(), dir.path())
    };
    let kept = |(code, report): &(i32, Value)| {
        let r = &results(report, "prefix-durability")[0];
        // A write of the ack journal is as long as its line, and the ready
        // record's holds the pid: the launchers' pids may differ in digits.
        let mut kill_points = r["kill_points"].clone();
        for p in kill_points.as_array_mut().into_iter().flatten().filter(|p| p["file"] == "acks") {
            p["len"] = Value::Null;
        }
        let points = (r["points_planned"].clone(), r["points_landed"].clone(), kill_points);
        // The repro names the path its children took (`children`); the rest is the same.
        let flags = ["--fork-server on", "--fork-server off", "--warm-pool on", "--warm-pool off"];
        let repro = flags.iter().fold(r["repro"].as_str().unwrap().to_string(), |s, f| s.replace(&format!(" {f}"), ""));
        (*code, r["verdict"].clone(), points, repro)
    };
    let path = |(_, report): &(i32, Value)| {
        let r = &results(report, "prefix-durability")[0];
        let repro = r["repro"].as_str().unwrap();
        let flags = repro[repro.find(" --fork-server").unwrap_or(repro.len())..].trim().to_string();
        (r["children"].as_str().unwrap_or("none").to_string(), flags)
    };
    let passes: Vec<_> = LAUNCHERS.iter().map(|l| run(l, &[])).collect();
    let launchers: Vec<_> = passes.iter().map(|(_, r)| r["launcher"].as_str().unwrap_or("exec")).collect();
    assert!(
        launchers[0] == "exec" && launchers[1].starts_with("warm pool of ") && launchers[2] == "exec",
        "{launchers:?}"
    );
    assert_eq!(kept(&passes[0]), kept(&passes[2]), "forked: {:#}\nexec'd: {:#}", passes[0].1, passes[2].1);
    assert_eq!(kept(&passes[1]), kept(&passes[2]), "warm: {:#}\nexec'd: {:#}", passes[1].1, passes[2].1);
    assert_eq!(kept(&passes[2]).1, "pass");
    // And a fire lands on the same point every way, its repro the same (no
    // rerun of it: how often it fires again is no part of what is compared).
    let mutant = ["--mutant", "ack-before-commit", "--refire", "0"];
    let fired: Vec<_> = LAUNCHERS.iter().map(|l| run(l, &mutant)).collect();
    let paths: Vec<_> = fired.iter().map(path).collect();
    let said = |c: &str, f: &str| (c.to_string(), f.to_string());
    assert_eq!(
        paths,
        [
            said("forked", "--fork-server on"),
            said("warm", "--fork-server off --warm-pool on"),
            said("exec", "--fork-server off --warm-pool off")
        ],
        "each fire says its path, and its repro reruns it"
    );
    let fires: Vec<_> = fired.iter().map(kept).collect();
    assert_eq!(fires[0], fires[2]);
    assert_eq!(fires[1], fires[2]);
    assert_eq!(fires[2].1, "fire");
}

/// A store's own failure, after its ready record, where the protocol
/// promises an answer, is a finding about the store (a fire of that cell,
/// with the store's words, a fingerprint kind of its own, and evidence);
/// a child that breaks the protocol before its ready record is still the
/// harness's error.
#[test]
fn a_stores_own_failure_is_a_fire_and_a_broken_protocol_an_error() {
    let dir = scratch();
    let variant = |v: &str| format!("{} {v}", python("tests/adapters/variant.py"));
    let result = |child: &str, rest: &[&str]| {
        let (_, report) = run_json(&[&["run", "--child", child, "--seed", "5"][..], rest].concat(), dir.path());
        report["results"][0].clone()
    };
    // A claim in a deferred transaction: racing claimants cannot upgrade.
    // Whether two overlap is the scheduler's: 4 races missed on a loaded
    // machine, and the first race that fails ends the result.
    let r = result(&variant("deferred-claim"), &["--cell", "2", "--kill", "timed", "--trials", "20"]);
    assert_eq!(r["verdict"], "fire", "{r:#}");
    assert_eq!(r["violation"], "store-failed-claim", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("database is locked"), "{r:#}");
    assert!(r["evidence"].is_string(), "{r:#}");
    // A dump on a read-only connection cannot roll back a hot journal.
    let r = result(&variant("readonly-dump"), &["--cell", "1", "--leg", "delete", "--kill", "syscall"]);
    assert_eq!((r["verdict"].as_str(), r["violation"].as_str()), (Some("fire"), Some("store-failed-dump")), "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("attempt to write a readonly database"), "{r:#}");
    // A claimant that never writes its ready record broke the protocol.
    let r = result(&variant("claim-no-ready"), &["--cell", "2", "--kill", "timed", "--trials", "1"]);
    assert_eq!(r["verdict"], "error", "{r:#}");
}

/// `journal-policy` (#53): a store that calls the reference resolver with
/// no policy of its own runs DELETE where a leg asks for WAL on a SQLite
/// with the WAL-reset bug, and is warned in one line naming the leg `run`
/// will skip; it still conforms. The first store of docs/adapters/python.md
/// applies what it is asked (`decided_by` `config`) and passes. Where
/// python3's SQLite has no bug, the resolver gives WAL too and both pass.
#[test]
fn child_check_warns_a_store_that_copied_the_resolver_naming_the_legs_it_hides() {
    let dir = scratch();
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/adapters/python.md")).unwrap();
    let first = page.split("```python\n").nth(1).and_then(|b| b.split("```").next()).expect("a python block");
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/python");
    let notes = dir.path().join("notes.py");
    std::fs::write(&notes, format!("import sys\nsys.path.insert(0, {sdk:?})\n{first}")).unwrap();
    let policy = |child: &str| {
        let (code, report) = child_check_only(child, &["journal-policy"]);
        let (_, status, detail) = checks(&report).into_iter().find(|(c, _, _)| c == "journal-policy").unwrap();
        (code, status, detail)
    };
    let (code, status, detail) = policy(&format!("python3 {}", notes.display()));
    assert_eq!((code, status.as_str()), (0, "ok"), "{detail}");
    assert_eq!(detail, "journal_mode = \"wal\" ran wal: every leg it is given runs");
    let (code, status, detail) = policy(&python("tests/adapters/resolve_no_policy.py"));
    let v = crashcells_protocol::SqliteVersion::parse(&python_sqlite()).expect("python's sqlite3 version");
    if !crashcells_protocol::wal_reset_affected(v) {
        assert_eq!((code, status.as_str()), (0, "ok"), "{detail}");
        return;
    }
    assert_eq!((code, status.as_str()), (0, "warning"), "{detail}");
    assert!(detail.starts_with("hides leg wal: asked for journal_mode = \"wal\", the store ran delete, "), "{detail}");
    assert!(detail.contains("decided by wal-reset-gate (WAL-reset gate: SQLite"), "{detail}");
    assert_eq!(detail.lines().count(), 1, "{detail}");
}
