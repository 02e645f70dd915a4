//! `--out` as a CI step meets it: a run that stops early leaves no older
//! report behind for the next step to upload as the current one, and a
//! second run given the same `--out` while the first holds it is refused.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{bin, run, scratch, stub_catalog};

/// A quick good run (a stub alone: nothing ran, exit 3) that writes `out`.
fn good_run(dir: &Path, out: &Path) {
    let catalog = stub_catalog(dir);
    let args = ["run", "--cell", "4", "--seed", "1", "--catalog", &catalog, "--format", "junit", "--out"];
    let done = run(&[&args[..], &[out.to_str().unwrap()]].concat(), dir);
    assert_eq!(done.status.code(), Some(3), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(out.exists());
}

#[test]
fn a_run_that_stops_on_bad_input_leaves_no_older_report_at_its_out() {
    let dir = scratch();
    let out = dir.path().join("run.xml");
    let bad: [&[&str]; 3] = [
        &["run", "--cell", "nope"],
        &["run", "--kill", "timed", "--point", "5"],
        // Refused by the parser itself.
        &["run", "--kill", "bogus"],
    ];
    for args in bad {
        good_run(dir.path(), &out);
        let stopped = run(&[args, &["--format", "junit", "--out", out.to_str().unwrap()]].concat(), dir.path());
        assert_eq!(stopped.status.code(), Some(2), "{args:?}");
        assert!(!out.exists(), "{args:?}: the older report was left at --out");
    }
    // `report` too; and a report rendered again onto its own source keeps it.
    let json = dir.path().join("run.json");
    std::fs::write(&json, "{}").unwrap();
    good_run(dir.path(), &out);
    let stopped = bin().args(["report", "--from"]).arg(&json).arg("--out").arg(&out).output().unwrap();
    assert_eq!((stopped.status.code(), out.exists()), (Some(2), false));
    let stopped = bin().args(["report", "--from"]).arg(&json).arg("--out").arg(&json).output().unwrap();
    assert_eq!((stopped.status.code(), json.exists()), (Some(2), true), "its own input is not removed");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!left.iter().any(|n| n.ends_with(".lock")), "no lock left: {left:?}");
}

#[test]
fn a_second_run_on_the_same_out_is_refused_while_the_first_holds_it() {
    let dir = scratch();
    let out = dir.path().join("run.xml");
    // The first run's child waits, in its preflight, for a file the test
    // makes once the second run was refused.
    let go = dir.path().join("go");
    let child = dir.path().join("waiting-child");
    let script = format!(
        "#!/bin/sh\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nexec {} child \"$@\"\n",
        go.display(),
        env!("CARGO_BIN_EXE_crashcells")
    );
    std::fs::write(&child, script).unwrap();
    std::fs::set_permissions(&child, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let catalog = stub_catalog(dir.path());
    let args = ["run", "--cell", "4", "--seed", "1", "--catalog", &catalog, "--format", "junit", "--out"];
    let first = bin()
        .args(args)
        .arg(&out)
        .arg("--child")
        .arg(&child)
        .args(["--workdir", dir.path().to_str().unwrap(), "--evidence", dir.path().join("ev").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = dir.path().join(".run.xml.lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = run(&[&args[..], &[out.to_str().unwrap()]].concat(), dir.path());
    std::fs::write(&go, "").unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!((second.status.code(), stderr.trim().lines().count()), (Some(2), 1), "{stderr}");
    assert!(stderr.contains(&format!("--out {}: another crashcells (pid {})", out.display(), first.id())), "{stderr}");
    assert!(stderr.contains("give each run its own --out"), "{stderr}");
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(3), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(out.exists() && !lock.exists(), "the first run's report, and no lock left");
}

/// `report --out` in a CI log is one line on stderr: the human report only
/// when asked (`--show`) or on a terminal. `run --out` still prints its own.
#[test]
fn report_out_is_quiet_unless_asked() {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let catalog = stub_catalog(dir.path());
    let args = ["run", "--cell", "4", "--seed", "1", "--catalog", &catalog, "--format", "json", "--out"];
    let ran = run(&[&args[..], &[json.to_str().unwrap()]].concat(), dir.path());
    assert!(String::from_utf8_lossy(&ran.stdout).contains("1 result: 0 fire"), "run prints its own report");
    let xml = dir.path().join("run.xml");
    let render = |extra: &[&str]| {
        bin().args(["report", "--format", "junit", "--from"]).arg(&json).arg("--out").arg(&xml).args(extra).output()
    };
    let quiet = render(&[]).unwrap();
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(3));
    assert!(quiet.stdout.is_empty(), "{}", String::from_utf8_lossy(&quiet.stdout));
    let counts = "(1 result: 0 fire, 0 error, 0 pass, 0 skip, 1 stub)";
    assert_eq!(stderr, format!("crashcells: report written to {} {counts}\n", xml.display()));
    let shown = render(&["--show"]).unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("1 result: 0 fire, 0 error, 0 pass, 0 skip, 1 stub"));
    assert!(xml.exists());
}
