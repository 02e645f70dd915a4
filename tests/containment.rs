//! The run's process container (issue 50, item 1): a child that daemonizes
//! a grandchild (`setsid`) leaves nothing running after a `SIGKILL` of the
//! driver, and a run or `child-check` names the process that left its group.
//!
//! The mutant is the reference store behind a shell script that first
//! starts `sleep 300` in a session of its own, holding a log of the test
//! open: a scan of `/proc` for that log finds exactly its daemons.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::{bin, eventually, scratch};

/// Writes the daemonizing child into `dir`: its `--child` line and the log
/// its daemons hold open.
fn daemonizing_child(dir: &Path) -> (String, PathBuf) {
    let log = dir.join("daemons.log");
    let script = dir.join("daemonizing.sh");
    let text = format!(
        "#!/bin/sh\nsetsid sleep 300 </dev/null >>'{}' 2>&1 &\nexec '{}' child \"$@\"\n",
        log.display(),
        env!("CARGO_BIN_EXE_crashcells")
    );
    std::fs::write(&script, text).unwrap();
    (format!("sh {}", script.display()), log)
}

/// Live processes that hold `file` open.
fn holding(file: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
            fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == file))
        })
        .collect()
}

#[test]
fn a_driver_killed_with_sigkill_leaves_no_daemon_of_its_child() {
    let dir = scratch();
    let (child, log) = daemonizing_child(dir.path());
    let mut driver = bin()
        .args(["run", "--child", &child, "--cell", "1", "--leg", "default", "--kill", "timed", "--trials", "100000"])
        .args(["--fork-server", "off", "--workdir"])
        .arg(dir.path())
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = eventually(Duration::from_secs(30), || holding(&log).len() >= 2);
    driver.kill().unwrap(); // SIGKILL: no handler of the driver runs
    driver.wait().unwrap();
    assert!(started, "no daemon of the child appeared");
    let gone = eventually(Duration::from_secs(10), || holding(&log).is_empty());
    assert!(gone, "daemons left after the driver's SIGKILL: {:?}", holding(&log));
}

/// A normal run names the process that left its group, in its JSON report
/// and its human one, with the namespace or, asked for the fallback, the
/// subreaper, which the report then names too.
#[test]
fn a_run_names_the_process_that_left_its_group() {
    for contain in ["", "subreaper"] {
        let dir = scratch();
        let (child, log) = daemonizing_child(dir.path());
        let out = bin()
            .args(["run", "--child", &child, "--cell", "1", "--leg", "default", "--kill", "timed", "--trials", "1"])
            .args(["--fork-server", "off", "--format", "json", "--workdir"])
            .arg(dir.path())
            .arg("--evidence")
            .arg(dir.path().join("evidence"))
            .env("CRASHCELLS_CONTAIN", contain)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let escaped = report["escaped"].as_array().cloned().unwrap_or_default();
        assert!(
            escaped.iter().any(|e| e.as_str().is_some_and(|e| e.contains("(`sleep 300`) left its process group"))),
            "{contain}: {escaped:?}"
        );
        let containment = report["containment"].as_str().unwrap_or_default();
        let expected = if contain.is_empty() { "a pid namespace" } else { "the driver as subreaper" };
        assert!(containment.starts_with(expected), "{containment}");
        assert!(holding(&log).is_empty(), "{contain}: daemons left: {:?}", holding(&log));
    }
}

#[test]
fn child_check_fails_a_child_whose_process_leaves_its_group() {
    let dir = scratch();
    let (child, _) = daemonizing_child(dir.path());
    let out = bin()
        .args(["child-check", "--child", &child, "--only", "own-group", "--format", "json", "--workdir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == "own-group").cloned().unwrap();
    assert_eq!(check["status"], "fail", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("(`sleep 300`) left its process group"), "{check}");
    // The reference store keeps to its group.
    let out = bin()
        .args(["child-check", "--only", "own-group", "--format", "json", "--workdir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == "own-group").cloned().unwrap();
    assert_eq!(check["status"], "ok", "{check}");
    assert!(check["detail"].as_str().unwrap().contains("a pid namespace"), "{check}");
}

/// Writes a child that creates a file outside the folder it is given, then
/// runs the reference store: its `--child` line and that file's prefix.
fn child_writing_outside(dir: &Path) -> (String, String) {
    let outside = dir.join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(dir.join("work")).unwrap();
    let script = dir.join("outside.sh");
    let text = format!(
        "#!/bin/sh\n: > '{}/kept-'$$.txt\nexec '{}' child \"$@\"\n",
        outside.display(),
        env!("CARGO_BIN_EXE_crashcells")
    );
    std::fs::write(&script, text).unwrap();
    (format!("sh {}", script.display()), format!("{}/kept-", outside.display()))
}

/// A syscall run names the file a traced child created outside its
/// folder, with its path; the reference store creates none.
#[test]
fn a_syscall_run_names_a_file_created_outside_the_folder() {
    let dir = scratch();
    let (child, prefix) = child_writing_outside(dir.path());
    let run = |extra: &[&str]| {
        let out = bin()
            .args(["run", "--cell", "1", "--leg", "default", "--kill", "syscall", "--points", "1"])
            .args(["--fork-server", "off", "--format", "json", "--workdir"])
            .arg(dir.path().join("work"))
            .arg("--evidence")
            .arg(dir.path().join("evidence"))
            .args(extra)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        report["outside"].as_array().cloned().unwrap_or_default()
    };
    let named = run(&["--child", &child]);
    assert!(named.iter().any(|o| o.as_str().is_some_and(|o| o.contains(&prefix))), "{named:?}");
    assert_eq!(run(&[]), Vec::<serde_json::Value>::new());
}

#[test]
fn child_check_names_a_file_created_outside_the_folder() {
    let dir = scratch();
    let (child, prefix) = child_writing_outside(dir.path());
    let out = bin()
        .args(["child-check", "--child", &child, "--only", "syscall-determinism", "--only", "own-folder"])
        .args(["--format", "json", "--workdir"])
        .arg(dir.path().join("work"))
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == "own-folder").cloned().unwrap();
    assert_eq!(check["status"], "warning", "{check}");
    assert!(check["detail"].as_str().unwrap().contains(&prefix), "{check}");
}

/// A child in the run's namespace reads its own `/proc/<getpid()>`: the
/// namespace's pid names it in a `/proc` of its own (a store reads its
/// start time there), never another process of the driver's `/proc`.
#[test]
fn a_child_in_the_namespace_finds_itself_in_proc_by_its_own_pid() {
    let dir = scratch();
    let script = dir.path().join("self.sh");
    let text = format!(
        "#!/bin/sh\nread -r me rest < /proc/self/stat\n[ \"$me\" = \"$$\" ] || {{ echo \"/proc/self is $me, getpid $$\" >&2; exit 1; }}\nexec '{}' child \"$@\"\n",
        env!("CARGO_BIN_EXE_crashcells")
    );
    std::fs::write(&script, text).unwrap();
    let out = bin()
        .args(["run", "--child", &format!("sh {}", script.display()), "--cell", "1", "--leg", "default"])
        .args(["--kill", "timed", "--trials", "1", "--refire", "0", "--fork-server", "off", "--format", "json"])
        .arg("--workdir")
        .arg(dir.path())
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "pass", "{r:#}");
    assert!(report["containment"].as_str().unwrap_or_default().starts_with("a pid namespace"), "{report:#}");
}

/// The adapter whose every exec'd operation leaves a process in its own
/// group, sleeping on after the operation ended.
fn outliving_child() -> String {
    format!("python3 {}/tests/adapters/outlives.py", env!("CARGO_MANIFEST_DIR"))
}

/// A process left in its operation's group after the operation ended is
/// named in the run's report (a note: the verdict stands) and killed; the
/// reference store leaves none.
#[test]
fn a_run_names_a_process_that_outlived_its_operation() {
    let dir = scratch();
    let run = |child: &[&str]| {
        let out = bin()
            .args(["run", "--cell", "1", "--leg", "default", "--kill", "timed", "--trials", "1", "--refire", "0"])
            .args(["--fork-server", "off", "--warm-pool", "off", "--format", "json", "--workdir"])
            .arg(dir.path())
            .arg("--evidence")
            .arg(dir.path().join("evidence"))
            .args(child)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        report
    };
    let child = outliving_child();
    let report = run(&["--child", &child]);
    let escaped = report["escaped"].as_array().cloned().unwrap_or_default();
    let named = |e: &serde_json::Value| {
        e.as_str().is_some_and(|e| e.contains("outlives.py") && e.contains("stayed in its operation's group"))
    };
    assert!(escaped.iter().any(named), "{escaped:?}");
    assert_eq!(report["results"][0]["verdict"], "pass", "a note, not a verdict: {report:#}");
    let reference = run(&[]);
    assert!(reference["escaped"].as_array().is_none_or(Vec::is_empty), "{}", reference["escaped"]);
}

/// `child-check`'s `own-group` fails on a process that outlived its
/// operation in the operation's own group.
#[test]
fn child_check_fails_a_child_whose_process_outlives_its_operation() {
    let dir = scratch();
    let child = outliving_child();
    let out = bin()
        .args(["child-check", "--child", &child, "--only", "own-group", "--format", "json", "--workdir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let check = report["checks"].as_array().unwrap().iter().find(|c| c["check"] == "own-group").cloned().unwrap();
    assert_eq!(check["status"], "fail", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("outlives.py") && detail.contains("stayed in its operation's group"), "{check}");
}
