//! The warm pool (docs/PROTOCOL.md §10), through the library's launcher,
//! with the Python example store and the tiny Node.js adapter
//! (tests/adapters/tiny.mjs, on examples/warmpool/crashcells_warm.mjs): an
//! operation in a warm process leaves what an exec'd one leaves, is killed
//! and reaped as an exec'd child is, and a traced one (a Node.js process,
//! threads and all) meets the same kill points; a warm process that holds a
//! database is refused, by the launcher and by `run`; and `child-check`
//! passes the honest Node.js helper and refuses one that reuses a process.

use std::path::Path;
use std::time::Instant;

use crashcells::harness::{ChildCommand, Exit, Interrupt, Launcher, group_alive};

use crate::common::scratch;
use crate::forkserver::{DEADLINE, Trial, calls, leaky, store, traced_allowed};

fn warm(child: ChildCommand, root: &Path, size: usize) -> Launcher {
    Launcher::with_warm_pool(child, &root.join("warm.stderr"), size, DEADLINE, &Interrupt::new())
        .expect("the pool gets warm")
}

fn node(env: &[&str]) -> ChildCommand {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adapters/tiny.mjs");
    let mut prefix: Vec<std::ffi::OsString> = env.iter().map(Into::into).collect();
    prefix.extend(["node".into(), script.into()]);
    ChildCommand { program: "env".into(), prefix, cwd: None, env: Vec::new() }
}

#[test]
fn a_warm_operation_leaves_what_an_exec_one_leaves_in_a_process_of_its_own() {
    let root = scratch();
    let pool = warm(store(), root.path(), 2);
    assert_eq!(pool.launcher(), "warm pool of 2");
    let (exec, first, second) = (
        Trial::new(root.path(), "exec", Some(3)),
        Trial::new(root.path(), "w1", Some(3)),
        Trial::new(root.path(), "w2", Some(3)),
    );
    let (exit, tail) = Launcher::exec(store()).run_to_end(&exec.launch(), DEADLINE, &Interrupt::new()).unwrap();
    assert_eq!(exit, Ok(Exit::Code(0)), "{tail}");
    let mut pids = Vec::new();
    for trial in [&first, &second] {
        let mut running = pool.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap();
        pids.push(running.pid());
        assert_eq!(
            running.wait_until(Instant::now() + DEADLINE, &Interrupt::new()),
            Ok(Exit::Code(0)),
            "{}",
            running.stderr_tail()
        );
        assert_eq!(trial.dump(), exec.dump());
        assert_eq!(trial.acks(), exec.acks());
        // The operation ran in the warm process itself.
        let ready = std::fs::read_to_string(trial.dir.join("acks.ndjson")).unwrap();
        let pid = pids.last().unwrap();
        assert!(ready.starts_with(&format!(r#"{{"kind":"ready","protocol":2,"pid":{pid},"#)), "{ready}");
    }
    assert_ne!(pids[0], pids[1], "a warm process is used once");
}

#[test]
fn a_killed_warm_process_is_reaped_as_sigkill_and_leaves_nothing() {
    let root = scratch();
    let pool = warm(store(), root.path(), 1);
    let trial = Trial::new(root.path(), "killed", None);
    let mut running = pool.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap();
    let acks = trial.dir.join("acks.ndjson");
    let until = Instant::now() + DEADLINE;
    while std::fs::read(&acks).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) < 3 {
        assert!(running.is_alive() && Instant::now() < until, "{}", running.stderr_tail());
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pgid = nix::unistd::Pid::from_raw(running.pid() as i32);
    running.kill_and_reap().check().unwrap();
    assert!(!group_alive(pgid));
}

/// A Node.js process has threads of its own before any user code: the
/// driver seizes every one of them, and the store's calls (in the `sqlite3`
/// processes it starts) stop at the same kill points as exec'd.
#[test]
fn a_traced_warm_node_process_meets_the_kill_points_of_an_exec_one() {
    if !traced_allowed() {
        return;
    }
    let root = scratch();
    let pool = warm(node(&[]), root.path(), 1);
    let exec = calls(&Launcher::exec(node(&[])), &Trial::new(root.path(), "exec", Some(2)));
    let warmed = calls(&pool, &Trial::new(root.path(), "warm", Some(2)));
    let points = |c: &[(Option<crashcells::kill::syscall::Point>, i64)]| {
        c.iter().filter_map(|(p, _)| p.clone()).collect::<Vec<_>>()
    };
    assert!(points(&exec).len() > 5, "{exec:?}");
    assert_eq!(points(&warmed), points(&exec));
}

#[test]
fn a_warm_process_that_holds_a_database_is_refused_naming_it() {
    let root = scratch();
    let pool = warm(leaky(), root.path(), 1);
    let trial = Trial::new(root.path(), "leaked", Some(1));
    let e = pool.spawn(&trial.launch(), DEADLINE, &Interrupt::new()).unwrap_err().to_string();
    let pattern = r"^warm pool: process \d+ holds descriptor \d+ \(.*/cache\.db \(deleted\)\) when it starts its operation; a warm process must start as fresh as an exec'd one$";
    assert!(regex::Regex::new(pattern).unwrap().is_match(&e), "{e}");
    // Nothing ran: the process was killed at its stop.
    assert!(!trial.dir.join("acks.ndjson").exists());
}

/// `run` with the fork server off takes the warm pool, and checks its first
/// process fresh before any cell.
#[test]
fn run_refuses_a_leaky_warm_pool_before_any_cell() {
    let dir = scratch();
    let args = ["run", "--child", &leaky().display(), "--cell", "1", "--seed", "3", "--fork-server", "off"];
    let out = crate::common::run(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("warm pool")).unwrap_or_default();
    assert!(line.contains("holds descriptor") && line.contains("cache.db"), "{stderr}");
    assert!(out.stdout.is_empty(), "no report: no cell ran");
}

fn warm_pool_check(child: &ChildCommand) -> serde_json::Value {
    crate::common::child_check_entry(child, "warm-pool")
}

#[test]
fn child_check_passes_the_node_helper() {
    let check = warm_pool_check(&node(&[]));
    assert_eq!(check["ok"], true, "{check}");
}

/// The deliberately broken helper hands every request to one worker: the
/// first request's ready record names it, not the warm process. The worker
/// leaves its group (detached), so the run's container kills it as an
/// escaped process when the first request's group is reaped: the second
/// request starts another, and the check names the first request's, not
/// a reuse.
#[test]
fn child_check_refuses_a_node_helper_that_reuses_a_process() {
    let check = warm_pool_check(&node(&["TINY_WARM_HELPER=reusing"]));
    assert_eq!(check["ok"], false, "{check}");
    let detail = check["detail"].as_str().unwrap();
    let named = detail.contains("but its ready record names process")
        && detail.ends_with("the operation must run in the warm process the driver started for it");
    assert!(named || detail.ends_with("a warm process is used once, never reused"), "{check}");
    assert!(detail.starts_with("request 1 ran in process"), "{check}");
}
