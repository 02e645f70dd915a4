//! A fast path never changes a verdict: a fire found through a fork server
//! is run again with every operation exec'd before it is reported. Fork
//! servers written from docs/PROTOCOL.md §9 with state kept between forks
//! (tests/adapters/: a module-level cache a warm-up fills; a
//! `random.Random()` instance made at import, which every fork shares) make
//! the Python example store fire only when forked: the result is an
//! `error` naming the fork server, never a fire, and the same store exec'd
//! passes. A real finding forked is reported as a fire, confirmed exec'd.

use std::path::Path;

use serde_json::Value;

use crate::common::{results, run_json, scratch, short_catalog};

fn adapter(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adapters").join(name);
    format!("python3 {}", path.display())
}

/// Runs `args` against `child` with its fork server, then with it off,
/// with `catalog` (the short one if `None`): the only result of each.
fn forked_and_execd(child: &str, catalog: Option<&str>, args: &[&str]) -> (Value, Value) {
    let dir = scratch();
    let short = short_catalog(dir.path());
    let catalog = catalog.unwrap_or(short.to_str().unwrap());
    let mut all = [&["run", "--child", child, "--seed", "3", "--trials", "1", "--catalog", catalog], args].concat();
    let (_, forked) = run_json(&all, dir.path());
    all.extend(["--fork-server", "off", "--warm-pool", "off"]);
    let (_, execd) = run_json(&all, dir.path());
    let one = |report: Value| report["results"].as_array().expect("results")[0].clone();
    (one(forked), one(execd))
}

fn assert_only_forked(forked: &Value, execd: &Value) {
    assert_eq!(forked["verdict"], "error", "{forked:#}");
    let reason = forked["reason"].as_str().unwrap();
    assert!(reason.contains("fires only through the fork server: there it found"), "{reason}");
    assert!(reason.contains("look for state the fork server's processes made"), "{reason}");
    assert!(forked["fingerprint"].is_null(), "an error has no fingerprint: {forked:#}");
    assert_eq!(execd["verdict"], "pass", "{execd:#}");
}

/// Every racer draws the same token from the shared generator and wins.
#[test]
fn a_shared_random_generator_in_the_fork_server_gives_an_error_not_a_fire() {
    let child = adapter("shared_rng_forkserver.py");
    // Two racers, not the catalog's eight (nor three in the exec'd sweep):
    // the exec'd runs that find no fire start every racer's interpreter, and
    // two forks that draw one token are already two winners.
    let dir = scratch();
    let cell =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cells/2-consume-once.toml")).unwrap();
    let cell = cell.replace("racers = 8", "racers = 2").replace("sweep_racers = 3", "sweep_racers = 2");
    std::fs::write(dir.path().join("2-consume-once.toml"), cell).unwrap();
    let catalog = dir.path().to_str();
    let (forked, execd) = forked_and_execd(&child, catalog, &["--cell", "2", "--leg", "default", "--kill", "none"]);
    assert_only_forked(&forked, &execd);
    let reason = forked["reason"].as_str().unwrap();
    assert!(reason.contains("racers won the handoff") && reason.contains("trials 0 to 7 pass"), "{reason}");
}

/// The warm-up's cache says the session exists: a forked `append` never
/// creates it, in a timed trial and in the syscall sweep's recording alike.
#[test]
fn a_cache_the_fork_servers_warm_up_filled_gives_an_error_not_a_fire() {
    let child = adapter("cached_forkserver.py");
    for kill in ["timed", "syscall"] {
        let (forked, execd) = forked_and_execd(&child, None, &["--cell", "1", "--leg", "delete", "--kill", kill]);
        assert_only_forked(&forked, &execd);
    }
}

/// A warm process warms up too (docs/PROTOCOL.md §10): the same cache, the
/// same error, naming the warm pool.
#[test]
fn a_cache_each_warm_process_filled_gives_an_error_naming_the_warm_pool() {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let child = adapter("cached_forkserver.py");
    let args = ["run", "--child", &child, "--seed", "3", "--trials", "1", "--cell", "1", "--leg", "delete"];
    let rest = ["--kill", "timed", "--fork-server", "off", "--catalog", catalog.to_str().unwrap()];
    let (_, report) = run_json(&[&args[..], &rest[..]].concat(), dir.path());
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "error", "{r:#}");
    assert!(r["reason"].as_str().unwrap().contains("fires only through the warm pool of"), "{r:#}");
}

/// A real finding found forked stays a fire, and says it fired exec'd too.
#[test]
fn a_fire_found_forked_is_confirmed_execd_and_reported() {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let catalog = catalog.to_str().unwrap();
    let args =
        ["run", "--cell", "1", "--leg", "delete", "--mutant", "drop-append", "--seed", "7", "--catalog", catalog];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 1, "{report:#}");
    for r in results(&report, "prefix-durability") {
        assert_eq!(r["verdict"], "fire", "{r:#}");
        let details = r["details"].as_array().unwrap();
        let confirmed =
            details.iter().any(|d| d.as_str().unwrap().starts_with("confirmed exec'd (not through the fork server)"));
        assert!(confirmed, "{r:#}");
    }
}

/// Every result says which path judged it (its children forked or exec'd,
/// its states recorded or real runs) and the deadline it ran under, and its
/// repro reruns that path.
#[test]
fn every_result_says_which_path_judged_it_and_its_repro_reruns_that_path() {
    let dir = scratch();
    let catalog = short_catalog(dir.path());
    let catalog = catalog.to_str().unwrap();
    let base = ["run", "--cell", "1", "--leg", "delete", "--seed", "5", "--trials", "1", "--catalog", catalog];
    let (_, forked) = run_json(&base, dir.path());
    let plain = ["--fork-server", "off", "--warm-pool", "off", "--mutant", "drop-append"];
    let (_, execd) = run_json(&[&base[..], &plain[..]].concat(), dir.path());
    let path = |r: &Value| (r["kill"].clone(), r["children"].clone(), r["states"].clone());
    let forked: Vec<_> = results(&forked, "prefix-durability").into_iter().map(path).collect();
    assert_eq!(
        forked,
        [
            ("timed".into(), "forked".into(), "re-executed".into()),
            ("syscall".into(), "forked".into(), "recorded".into())
        ]
    );
    for r in results(&execd, "prefix-durability") {
        assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("fire"), Some("exec")), "{r:#}");
        assert!(r["repro"].as_str().unwrap().ends_with("--fork-server off --warm-pool off"), "{r:#}");
        assert!(r["deadline_ms"].as_u64().is_some_and(|ms| ms >= 30_000), "the default deadline or more: {r:#}");
    }
}

/// A scratch catalog whose cell 1 appends twice, not the catalog's four:
/// a planted bug fires at the first, and a passing sweep costs half the
/// points. Its folder, kept alive by the caller.
fn two_appends() -> tempfile::TempDir {
    let cells = scratch();
    let cell = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("cells/1-prefix-durability.toml"))
        .expect("cell 1");
    assert!(cell.contains("\nsweep_ops = 4\n"), "the catalog's cell 1 changed: {cell}");
    let two = cell.replace("\nsweep_ops = 4\n", "\nsweep_ops = 2\n");
    std::fs::write(cells.path().join("1-prefix-durability.toml"), two).expect("a scratch cell");
    cells
}

/// Cell 1's syscall sweep on the delete leg of `child` with `args`: its
/// only result, or none where ptrace is refused (said, or a failure in CI).
fn swept(child: &str, args: &[&str]) -> Option<Value> {
    let (dir, cells) = (scratch(), two_appends());
    let catalog = cells.path().to_str().unwrap();
    let base = ["run", "--child", child, "--catalog", catalog, "--cell", "1", "--leg", "delete", "--kill", "syscall"];
    let (_, report) = run_json(&[&base[..], args].concat(), dir.path());
    let r = report["results"].as_array().expect("results")[0].clone();
    if r["reason"].as_str().unwrap_or_default().contains("unavailable") {
        crate::common::tracing_refused(&r["reason"]);
        return None;
    }
    Some(r)
}

/// Whether `r`'s details say the plain path confirmed it.
fn confirmed_execd(r: &Value) -> bool {
    let details = r["details"].as_array().expect("details");
    details.iter().any(|d| d.as_str().unwrap_or_default().starts_with("confirmed exec'd (not through the fork server)"))
}

/// A store whose calls differ from run to run (a thread pool,
/// tests/adapters/pooled.py), through its fork server: the planted
/// ack-before-commit found forked is found again exec'd as the forked
/// confirmation found it (where a run reaches the state, or the write,
/// again), a confirmed fire, never "fires only through the fork server";
/// without the bug it passes.
#[test]
fn a_thread_pool_stores_fire_found_forked_is_found_again_execd() {
    let child = adapter("pooled_forkserver.py");
    let Some(r) = swept(&child, &["--seed", "7", "--mutant", "ack-before-commit"]) else { return };
    assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("fire"), Some("forked")), "{r:#}");
    assert!(confirmed_execd(&r), "{r:#}");
    let Some(r) = swept(&child, &["--seed", "7"]) else { return };
    assert_eq!(r["verdict"], "pass", "{r:#}");
}

/// A store whose imports take over a second exec'd and milliseconds forked
/// (tests/adapters/slow_import.py), under a one-second `--deadline`: the
/// run's waits scale from the forked start, but the exec'd children that
/// confirm a fire found forked wait as long as the exec'd start needs, so
/// the fire is confirmed, not an exec'd child's readiness error blamed on
/// the fork server.
#[test]
fn a_fire_found_forked_on_a_store_slow_to_import_is_confirmed_execd_in_time() {
    let child = adapter("slow_import.py");
    let args = ["--seed", "3", "--deadline", "1", "--mutant", "ack-before-commit"];
    let Some(r) = swept(&child, &args) else { return };
    assert_eq!((r["verdict"].as_str(), r["children"].as_str()), (Some("fire"), Some("forked")), "{r:#}");
    assert!(confirmed_execd(&r), "{r:#}");
}
