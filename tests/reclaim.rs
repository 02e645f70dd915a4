//! The run's own files reclaimed (issue 50): a driver killed by SIGKILL
//! leaves its work folder (in `/dev/shm`, memory, by default); the next
//! run at its start, and `crashcells prune`, remove the folders whose
//! owner is dead and say what that freed, and never touch a live owner's.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crashcells::scratch::{OWNER, Owner};

use crate::common::{bin, scratch};

/// The scratch folders (named as the harness names them) in `workdir`.
fn scratch_folders(workdir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(workdir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("crashcells-"))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// A folder as a run leaves it, owned by `owner`, with a 64 KiB store.
fn left_folder(workdir: &Path, name: &str, owner: &Owner) -> PathBuf {
    let dir = workdir.join(name);
    std::fs::create_dir_all(dir.join("append-1/home")).unwrap();
    std::fs::write(dir.join("append-1/store.db"), vec![1u8; 65_536]).unwrap();
    std::fs::write(dir.join(OWNER), owner.render()).unwrap();
    dir
}

fn prune(workdir: &Path, evidence: &Path) -> String {
    let out = bin().arg("prune").arg("--workdir").arg(workdir).arg("--evidence").arg(evidence).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A run's start removes the folder of a dead owner (its pid now names
/// another process start) and says what it freed; it keeps a live
/// owner's (this test's own), and `prune` then finds nothing more.
#[test]
fn a_run_reclaims_the_folders_of_dead_runs_and_keeps_the_live_ones() {
    let dir = scratch();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let me = Owner::me().expect("/proc says who this test is");
    let dead = left_folder(&workdir, "crashcells-1-2-dead", &Owner { start: me.start + 1, ..me.clone() });
    let live = left_folder(&workdir, "crashcells-3-4-live", &me);
    let out = bin()
        .args(["run", "--cell", "1", "--kill", "timed", "--trials", "1", "--leg", "wal", "--refire", "0"])
        .arg("--workdir")
        .arg(&workdir)
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let said = format!("reclaimed 1 folder of dead runs in {}: ", workdir.display());
    assert!(stderr.lines().any(|l| l.contains(&said) && l.ends_with("KiB freed")), "{stderr}");
    assert!(!dead.exists(), "the dead run's folder is still there");
    assert_eq!(scratch_folders(&workdir), std::slice::from_ref(&live), "only the live owner's folder stays");
    assert!(prune(&workdir, &dir.path().join("evidence")).starts_with("reclaimed 0 folders of dead runs in "));
    assert!(live.exists());
}

/// A driver killed by SIGKILL in the middle of its run leaves its work
/// folder; `prune` removes it and says how much that freed.
#[test]
fn prune_reclaims_what_a_killed_driver_left() {
    let dir = scratch();
    let workdir = dir.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    let mut driver = bin()
        .args(["run", "--cell", "1", "--kill", "timed", "--trials", "200", "--leg", "wal", "--jobs", "1"])
        .arg("--workdir")
        .arg(&workdir)
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The work folder is made (with its owner) before the first child starts.
    let start = Instant::now();
    while scratch_folders(&workdir).is_empty() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    driver.kill().unwrap();
    driver.wait().unwrap();
    assert_eq!(scratch_folders(&workdir).len(), 1, "the killed driver's work folder");
    let line = prune(&workdir, &dir.path().join("evidence"));
    assert!(line.starts_with("reclaimed 1 folder of dead runs in "), "{line}");
    assert!(line.contains(&workdir.display().to_string()), "{line}");
    assert!(scratch_folders(&workdir).is_empty(), "left: {:?}", scratch_folders(&workdir));
}
