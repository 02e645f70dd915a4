//! The harness's own robustness, as users meet it: no orphans when the driver
//! is killed, no hang on a stalled child, no panic on bad input, and an
//! interrupted run that kills its children and still writes its report.
//!
//! Processes are found by their command line: every child of a run names the
//! run's private work folder (`--db <workdir>/...`), so a scan of `/proc` for
//! that folder finds exactly this test's processes, whatever else runs.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::{bin, eventually, run, run_json, scratch};

/// Pids of live processes (not this test) whose command line mentions `needle`.
/// A zombie has an empty command line and so never matches.
fn processes_mentioning(needle: &Path) -> Vec<u32> {
    let needle = needle.to_string_lossy().into_owned();
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            // An exec'd child names the run's folders on its command line; a
            // forked one (a fork server's) has the server's, but holds a
            // file of its trial's folder open (its stderr, at least).
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(&needle)
                || open_files(pid).iter().any(|f| f.contains(&needle))
        })
        .collect()
}

/// The paths of the files process `pid` holds open.
fn open_files(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).map(|p| p.display().to_string()).collect()
}

/// Starts a long run (far more trials than the test waits for) with trials
/// in `workdir`, and waits until one of its children is running.
fn start_long_run(workdir: &Path, extra: &[&str]) -> Child {
    let mut cmd = bin();
    cmd.args(["run", "--cell", "prefix-durability", "--leg", "default", "--trials", "100000"])
        .args(extra)
        .arg("--workdir")
        .arg(workdir)
        .arg("--evidence")
        .arg(workdir.with_extension("evidence"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut driver = cmd.spawn().expect("the binary runs");
    let driver_pid = driver.id();
    // A trial's child, not the preflight's, nor a fork of the driver not yet
    // exec'd (it still has the driver's command line): the run is then in
    // its results. An exec'd one names its ack journal; a forked one holds
    // it open once its operation runs.
    let in_a_trial = |pid: &u32| {
        let cmdline = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
            .replace('\0', " ");
        let acks = open_files(*pid).into_iter().find(|f| f.ends_with("acks.ndjson"));
        let exec_d = cmdline.contains(" --acks ") && !cmdline.contains("/preflight-");
        let forked = acks.is_some_and(|f| !f.contains("/preflight-"));
        *pid != driver_pid && (exec_d || forked)
    };
    let child_seen = eventually(Duration::from_secs(30), || processes_mentioning(workdir).iter().any(in_a_trial));
    if !child_seen {
        let _ = driver.kill();
        panic!("no child of the run appeared");
    }
    driver
}

/// Waits for `child` within `limit`, killing it if it overstays.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<i32> {
    let mut status = None;
    eventually(limit, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the driver did not end within {limit:?}");
    }
    status.and_then(|s| s.code())
}

#[test]
fn a_driver_killed_with_sigkill_leaves_no_child() {
    let dir = scratch();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let mut driver = start_long_run(&workdir, &[]);
    driver.kill().unwrap(); // SIGKILL: no handler of the driver runs
    driver.wait().unwrap();
    let gone = eventually(Duration::from_secs(10), || processes_mentioning(&workdir).is_empty());
    assert!(gone, "children left after the driver's SIGKILL: {:?}", processes_mentioning(&workdir));
}

#[test]
fn sigint_and_sigterm_kill_the_children_and_write_a_partial_report() {
    interrupt_with(Signal::SIGINT, 1);
    interrupt_with(Signal::SIGTERM, 1);
}

/// `timeout` and CI runners signal the driver and its whole process group:
/// the same interrupt arrives more than once in an instant, and must not
/// count as a second Ctrl-C (which would abandon the report).
#[test]
fn an_interrupt_delivered_several_times_at_once_still_writes_the_report() {
    interrupt_with(Signal::SIGINT, 3);
}

fn interrupt_with(signal: Signal, times: usize) {
    let dir = scratch();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let out = dir.path().join("run.json");
    let out_arg = out.to_str().unwrap();
    let mut driver = start_long_run(&workdir, &["--format", "json", "--out", out_arg]);
    let started = Instant::now();
    for _ in 0..times {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(driver.id() as i32), signal).unwrap();
    }
    let code = wait_bounded(&mut driver, Duration::from_secs(30));
    assert_eq!(code, Some(128 + signal as i32), "an interrupted run exits 128 + {signal}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!((&report["interrupted"], &report["signal"]), (&true.into(), &(signal as i32).into()), "{report}");
    // The result cut short is interrupted, not an error, and says so truly:
    // no deadline of 30 s passed in the second the run lasted.
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "interrupted", "{r}");
    assert_eq!(report["summary"]["error"], 0, "{report}");
    let reason = r["reason"].as_str().unwrap();
    assert!(reason.contains("interrupted before a verdict"), "{reason}");
    if started.elapsed() < Duration::from_secs(30) {
        assert!(!reason.contains("within 30s") && !reason.contains("deadline"), "{reason}");
    }
    assert!(processes_mentioning(&workdir).is_empty(), "children left: {:?}", processes_mentioning(&workdir));
    let left: Vec<_> = std::fs::read_dir(&workdir).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "temp folders left: {left:?}");
    // Its JUnit is no green suite of skipped cases: an error says what did not run.
    let xml = bin().args(["report", "--format", "junit", "--from"]).arg(&out).output().unwrap();
    let xml = String::from_utf8_lossy(&xml.stdout);
    let name = signal.as_str();
    assert!(xml.contains("<testcase name=\"crashcells/incomplete\" classname=\"crashcells\">"), "{xml}");
    assert!(xml.contains(&format!("<error message=\"the run was interrupted by {name}: a partial report;")), "{xml}");
    assert!(xml.contains("type=\"interrupted\"/>"), "{xml}");
    assert!(xml.contains("errors=\"1\""), "{xml}");
}

#[test]
fn a_stalled_child_is_an_error_with_its_stderr_within_the_deadline() {
    let dir = scratch();
    let args = ["run", "--cell", "prefix-durability", "--leg", "default", "--mutant", "stall", "--deadline", "1"];
    let (code, report) = run_json(&args, dir.path());
    assert_eq!(code, 2, "{report}");
    let r = &report["results"][0];
    assert_eq!(r["verdict"], "error", "{r}");
    let reason = r["reason"].as_str().unwrap();
    // `--deadline 1`, or more where the machine's load stretched it
    // (Context::scaled_deadline): never less.
    let deadline = regex::Regex::new(r"within the ([\d.]+)s deadline").unwrap();
    let secs: f64 = deadline.captures(reason).map_or(0.0, |c| c[1].parse().unwrap());
    assert!(reason.contains("child stalled") && secs >= 1.0, "{reason}");
    assert!(reason.contains("stall mutant: blocking forever"), "the stderr tail is missing: {reason}");
}

#[test]
fn a_child_that_exits_at_once_is_refused_before_any_cell_runs() {
    let dir = scratch();
    let out = run(&["run", "--cell", "prefix-durability", "--leg", "default", "--child", "true"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("crashcells: error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("no ready record") && errors[0].contains("exit code 0"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A child that prints binary and then blocks speaks no protocol: the
/// preflight, which waits at least 30 s for a slow start, stops at once.
#[test]
fn a_child_that_prints_binary_is_refused_without_waiting_for_the_preflights_floor() {
    let dir = scratch();
    let child = dir.path().join("binary-child");
    std::fs::write(&child, "#!/bin/sh\nprintf '\\177ELF\\002\\001\\000\\000'\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&child, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let args = ["run", "--cell", "1", "--seed", "1", "--deadline", "3", "--child", child.to_str().unwrap()];
    let out = run(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
    assert!(stderr.contains(r#"(it printed "\u{7f}ELF"#), "{stderr}");
    assert!(stderr.contains("what it wrote is no protocol, so it was not waited for"), "{stderr}");
    assert!(processes_mentioning(dir.path()).is_empty(), "{:?}", processes_mentioning(dir.path()));
}

#[test]
fn the_users_crashcells_home_does_not_reach_the_trials() {
    let dir = scratch();
    let not_a_folder = dir.path().join("afile");
    std::fs::write(&not_a_folder, "x").unwrap();
    let out = bin()
        .args(["run", "--cell", "prefix-durability", "--leg", "default", "--trials", "1", "--kill", "timed"])
        .args(["--format", "json"])
        .arg("--workdir")
        .arg(dir.path())
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .env("CRASHCELLS_HOME", &not_a_folder)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report}");
}

/// Each run's fires on every leg of cell 1 kept under its own run id. The
/// short catalog and no refires: where its kills land and how often a fire
/// fires again are not the subject, and a shorter run overlaps the other more.
#[test]
fn two_runs_at_once_keep_their_evidence_apart() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let spawn = || {
        bin()
            .args(["run", "--cell", "1", "--mutant", "drop-append", "--kill", "timed", "--refire", "0", "--catalog"])
            .arg(&catalog)
            .args(["--format", "json", "--workdir"])
            .arg(dir.path())
            .arg("--evidence")
            .arg(dir.path().join("evidence"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let paths = |c: Child| -> Vec<String> {
        let out = c.wait_with_output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let results = report["results"].as_array().unwrap().clone();
        results.iter().filter_map(|r| r["evidence"].as_str().map(String::from)).collect()
    };
    let (pa, pb) = (paths(a), paths(b));
    assert!(!pa.is_empty() && !pb.is_empty());
    for p in &pa {
        assert!(!pb.contains(p), "both runs kept evidence in {p}");
        assert!(Path::new(p).join("result.json").is_file(), "{p}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["evidence"], "temp folders left beside the evidence");
}

/// Runs `crashcells args` (with `env`), expecting exit 2, one line on stderr
/// that contains every needle, and no panic.
fn fails_with<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], env: &[(&str, &Path)], needles: &[&str]) {
    let mut cmd = bin();
    cmd.args(args).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{args:?}: `{needle}` not in: {stderr}");
    }
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: one line expected: {stderr}");
}

#[test]
fn every_bad_input_is_one_line_and_exit_2() {
    let dir = scratch();
    let d = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    std::fs::write(d("afile"), "x").unwrap();
    std::fs::write(d("bad.toml"), "garbage [[").unwrap();
    std::fs::create_dir(d("badcat")).unwrap();
    std::fs::write(d("badcat/1-x.toml"), "nope = [").unwrap();
    let (afile, under_file) = (d("afile"), d("afile/sub"));
    let workdir = dir.path().to_string_lossy().into_owned();
    // Cell 4 only names a cell: every check here fires before one runs.
    let run = |extra: &[&str]| -> Vec<String> {
        let head = ["run", "--cell", "4", "--workdir", &workdir];
        head.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    fails_with(&["run", "--cell", "nope"], &[], &["unknown cell `nope`"]);
    fails_with(&run(&["--mutant", "nope"]), &[], &["unknown mutant `nope`"]);
    fails_with(&run(&["--matrix", "nope"]), &[], &["unknown matrix `nope`"]);
    fails_with(&run(&["--matrix", &d("bad.toml")]), &[], &["matrix", "bad.toml"]);
    fails_with(&run(&["--matrix", &d("afile/m.toml")]), &[], &["matrix", "afile/m.toml"]);
    fails_with(&run(&["--catalog", &d("badcat")]), &[], &["catalog", "1-x.toml"]);
    fails_with(&run(&["--catalog", &afile]), &[], &["catalog", "afile"]);
    fails_with(&["list", "--catalog", &d("missing")], &[], &["catalog", "missing"]);
    fails_with(&run(&["--trials", "0"]), &[], &["--trials"]);
    fails_with(&run(&["--seed", "abc"]), &[], &["--seed", "abc"]);
    fails_with(&run(&["--out", &d("missing/x.json")]), &[], &["--out", "does not exist"]);
    fails_with(&run(&["--out", &d("afile/x.json")]), &[], &["--out", "is not a folder"]);
    fails_with(&run(&["--evidence", &afile]), &[], &["--evidence", "afile is not a folder"]);
    fails_with(&run(&["--evidence", &under_file]), &[], &["--evidence", "afile is not a folder"]);
    fails_with(&["run", "--cell", "4", "--workdir", &under_file], &[], &["--workdir", "not a folder"]);
    fails_with(&["run", "--cell", "4", "--workdir", "/proc"], &[], &["--workdir /proc: cannot make a folder in it"]);
    // Unusable places to keep evidence or write the report are refused
    // before any child runs (root included: /proc takes no new file).
    fails_with(&run(&["--evidence", "/proc/crashcells-ev"]), &[], &["--evidence", "cannot make folders in /proc"]);
    fails_with(&run(&["--out", "/proc/run.json"]), &[], &["--out /proc/run.json: cannot write in /proc"]);
    fails_with(&["audit", "--workdir", "/proc"], &[], &["--workdir /proc: cannot make a folder in it"]);
    fails_with(&run(&["--trials", "-1"]), &[], &["--trials", "-1"]);
    fails_with(&run(&["--cell", "9"]), &[], &["unknown cell `9`", "1 prefix-durability"]);
    fails_with(&run(&["--kill", "timed", "--point", "3"]), &[], &["--point", "--kill timed"]);
    fails_with(&run(&["--kill", "syscall", "--trial", "3"]), &[], &["--trial", "--kill syscall"]);
    fails_with(&run(&["--kill", "timed", "--trial", "3"]), &[], &["--trial N reruns a trial", "--seed"]);
    fails_with(&run(&["--kill", "syscall", "--point", "3"]), &[], &["--point N reruns a kill point", "--seed"]);
    fails_with(&run(&["--child", " "]), &[], &["--child", "empty"]);
    fails_with(&["report", "--from", &d("bad.toml")], &[], &["report", "bad.toml"]);
    let home = Path::new(&afile);
    let db = d("x.db");
    let child = ["child", "append", "--db", &db, "--acks", &under_file, "--stop-after", "1"];
    fails_with(&child, &[("CRASHCELLS_HOME", home)], &["CRASHCELLS_HOME is not a folder"]);
}

/// A `dump` that hangs costs its result one deadline, not one per pass,
/// batch and confirmation (about five before, then two): the batched
/// dump's, whose error its first state takes (its states are not
/// recovered alone, each of which would hang as long again). Its second
/// pass is not run (the first already failed), its trial is not recovered
/// alone a second time, and a recorded point is not confirmed by a real
/// kill whose recovery would hang as well. The error names `--deadline`
/// and the start it was scaled from. The deadline is long enough (8 s)
/// that a second wait could not hide in the margin the result's own work
/// gets (a short workload and its kills: about a second, a few at load).
#[test]
fn a_hung_dump_costs_its_result_one_deadline() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let child = format!("python3 {}/tests/adapters/hung_dump.py", env!("CARGO_MANIFEST_DIR"));
    let base = ["run", "--child", &child, "--cell", "1", "--leg", "delete", "--seed", "1", "--deadline", "8"];
    let rest = ["--fork-server", "off", "--warm-pool", "off", "--catalog", catalog.to_str().unwrap()];
    for kill in [&["--kill", "timed", "--trials", "2"][..], &["--kill", "syscall", "--points", "8"][..]] {
        let (_, report) = run_json(&[&base[..], kill, &rest[..]].concat(), dir.path());
        let r = &report["results"][0];
        let reason = r["reason"].as_str().unwrap_or_default();
        assert_eq!(r["verdict"], "error", "{r:#}");
        assert!(reason.contains("recovery pass 1 did not finish within"), "{reason}");
        assert!(reason.contains("start took") && reason.contains("raise --deadline, now 8s"), "{reason}");
        let (took, deadline) = (r["duration_ms"].as_u64().unwrap(), r["deadline_ms"].as_u64().unwrap());
        assert!(took < deadline + 6_000, "{took} ms at a deadline of {deadline} ms: {r:#}");
    }
}

/// A store slow to start (its imports take 1.2 s, every operation exec'd)
/// under a `--deadline` shorter than its start gets verdicts, not
/// readiness errors: every wait scales from the start the preflight
/// measured. The scaled-down stand-in for a framework whose imports take a
/// minute on a loaded runner.
#[test]
fn a_store_slower_to_start_than_the_deadline_gets_verdicts() {
    let dir = scratch();
    let catalog = crate::common::short_catalog(dir.path());
    let child = format!("python3 {}/tests/adapters/slow_import.py", env!("CARGO_MANIFEST_DIR"));
    let args = ["run", "--child", &child, "--cell", "1", "--leg", "delete", "--seed", "1", "--deadline", "1"];
    let rest = ["--kill", "timed", "--trials", "1", "--fork-server", "off", "--catalog", catalog.to_str().unwrap()];
    let (code, report) = run_json(&[&args[..], &rest[..]].concat(), dir.path());
    let r = &report["results"][0];
    assert_eq!((code, r["verdict"].as_str(), r["children"].as_str()), (0, Some("pass"), Some("exec")), "{r:#}");
    assert!(r["deadline_ms"].as_u64().unwrap() > 3 * 1200, "scaled from the start: {r:#}");
}
