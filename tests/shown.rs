//! What a user sees, snapshotted with what varies redacted (times, run
//! ids, folders, the SQLite version, the deadline): `list` (of a catalog of
//! stubs), `run --help`, a fire of each kill mode that sweeps points (a
//! mutant's, or the reference store's where a power loss takes an acked
//! commit in DELETE mode), a fire a known-findings file lists, a known
//! finding gone (a whole sweep where it no longer fires) and a run
//! interrupted mid-trial. Each fire is one kill point (`--point`), so the
//! whole takes seconds; the timed fire is `every_verdict`'s
//! (tests/reports.rs).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{bin, run, scratch};

/// One fire per kill mode that sweeps points: cell 1, seed 1, its deciding point.
const FIRES: &[&[&str]] = &[
    &["--leg", "delete", "--kill", "syscall", "--point", "81", "--mutant", "ack-before-commit"],
    &["--leg", "delete", "--kill", "power", "--point", "94"],
    &["--leg", "delete", "--kill", "torn", "--point", "94"],
    &["--leg", "wal", "--kill", "fault", "--point", "51", "--mutant", "ack-despite-io-error"],
    &["--leg", "wal", "--kill", "short-write", "--point", "87", "--mutant", "ignore-short-write"],
];

fn settings(dir: &Path) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(&regex::escape(&dir.display().to_string()), "[SCRATCH]");
    s.add_filter(r"\d{9,}-\d+", "[RUN-ID]");
    s.add_filter(r" +\d+\.\d\ds\b", " [TIME]s");
    // The time column is as wide as its longest time, and its header with it.
    s.add_filter(r"acked +time  reason", "acked  [TIME]  reason");
    s.add_filter(r"SQLite \d+\.\d+\.\d+", "SQLite [VERSION]");
    s.add_filter(&regex::escape(crashcells::VERSION), "[VERSION]");
    // `--deadline` or more: the run stretches it by the child's start on a loaded machine.
    s.add_filter(r"\b[\d.]+s( to [\d.]+s)? per wait", "[DEADLINE] per wait");
    s.add_filter(r"deadline [\d.]+s( to [\d.]+s)?([,)])", "deadline [DEADLINE]$2");
    // The fallback's line, where the tests may make no pid namespace.
    s.add_filter(r"(?m)^containment: .*\n", "");
    s
}

/// `crashcells run --cell 1 --seed 1 ARGS`, its exit code and what it printed.
fn shown(dir: &Path, args: &[&str], more: &[&str]) -> String {
    let all = [&["run", "--cell", "1", "--seed", "1"][..], args, more].concat();
    let out = run(&all, dir);
    let code = out.status.code().unwrap_or(-1);
    format!("$ crashcells {}\nexit {code}\n{}", all.join(" "), String::from_utf8_lossy(&out.stdout))
}

#[test]
fn a_fire_of_each_sweeping_kill_mode_and_a_known_one() {
    let dir = scratch();
    let mut text = String::new();
    for args in FIRES {
        let one = shown(dir.path(), args, &[]);
        if one.contains("unavailable") {
            return crate::common::tracing_refused("syscall kill points are unavailable here");
        }
        assert!(one.contains("\nexit 1\n"), "{one}");
        text.push_str(&one);
        text.push('\n');
    }
    let known = dir.path().join("known.toml");
    let listed = "[[finding]]\nfingerprint = \"prefix-durability/wal/full/short-write/corrupt\"\nissue = \"#28\"\n";
    std::fs::write(&known, listed).unwrap();
    let args = FIRES.last().unwrap();
    text.push_str(&shown(dir.path(), args, &["--known", known.to_str().unwrap()]));
    settings(dir.path()).bind(|| insta::assert_snapshot!("fires.human", text));
}

/// `list` of a catalog of its own (two stubs), so that a cell added by
/// DESIGN.md's recipe changes no snapshot; the mutants are the driver's.
#[test]
fn list_and_run_help() {
    let out = |args: &[&str]| String::from_utf8(bin().args(args).output().unwrap().stdout).unwrap();
    let dir = scratch();
    let catalog = crate::common::stub_catalog(dir.path());
    settings(dir.path()).bind(|| {
        insta::assert_snapshot!("list.human", out(&["list", "--catalog", &catalog]));
        insta::assert_snapshot!("run_help", out(&["run", "--help"]));
    });
}

/// A known finding that no longer fires where a whole sweep ran: the run
/// fails on it (exit 1) and says the file is wrong.
#[test]
fn a_known_finding_gone() {
    let dir = scratch();
    let known = dir.path().join("known.toml");
    let listed = "[[finding]]\nfingerprint = \"prefix-durability/delete/full/syscall/lost-ack\"\nissue = \"#28\"\n";
    std::fs::write(&known, listed).unwrap();
    let text = shown(dir.path(), &["--leg", "delete", "--kill", "syscall"], &["--known", known.to_str().unwrap()]);
    if text.contains("unavailable") {
        return crate::common::tracing_refused("syscall kill points are unavailable here");
    }
    assert!(text.contains("\nexit 1\n") && text.contains("GONE: "), "{text}");
    settings(dir.path()).bind(|| insta::assert_snapshot!("gone.human", text));
}

/// A run interrupted (`SIGINT`) while its one trial waits on a stalled
/// child: the result is `interrupted`, the report partial, the exit 130.
#[test]
fn a_run_interrupted_mid_trial() {
    let dir = scratch();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let args = ["run", "--cell", "1", "--seed", "1", "--leg", "default", "--kill", "timed", "--trials", "1"];
    let stalled = ["--mutant", "stall", "--deadline", "300"];
    let mut cmd = bin();
    cmd.args(args).args(stalled).arg("--workdir").arg(&work).arg("--evidence").arg(dir.path().join("evidence"));
    let driver = cmd.env("NO_COLOR", "1").stdout(std::process::Stdio::piped()).spawn().unwrap();
    // The trial's child has acked and stalls (the preflight's folder is another).
    let stalled_trial = || acks_outside_preflight(&work).is_some_and(|acks| acks.lines().count() > 2);
    let end = Instant::now() + Duration::from_secs(60);
    while !stalled_trial() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stalled_trial(), "the trial never stalled");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(driver.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = driver.wait_with_output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let all = [&args[..], &stalled[..]].concat();
    let text = format!("$ crashcells {}\nexit {code}\n{}", all.join(" "), String::from_utf8_lossy(&out.stdout));
    assert!(text.contains("\nexit 130\n") && text.contains("interrupted"), "{text}");
    settings(dir.path()).bind(|| insta::assert_snapshot!("interrupted.human", text));
}

/// The ack journal of a trial under `work` (not the preflight's), if one is written yet.
fn acks_outside_preflight(work: &Path) -> Option<String> {
    let mut folders = vec![work.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = path.to_string_lossy();
            if path.is_dir() && !name.contains("preflight-") {
                folders.push(path);
            } else if name.ends_with("acks.ndjson") && !name.contains("preflight-") {
                return std::fs::read_to_string(&path).ok();
            }
        }
    }
    None
}
