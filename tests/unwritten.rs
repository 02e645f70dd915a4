//! Output never lost (issue 50): an `--out` that cannot be written when
//! the run ends (its folder gone, its disk full) still leaves the human
//! report on stdout, then one error line naming the file and the errno,
//! exit 2. The fault is made deterministic by removing `--out`'s folder
//! once the run is past its checks (its work folder exists).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{bin, scratch};

#[test]
fn an_out_that_cannot_be_written_still_leaves_the_human_report() {
    let dir = scratch();
    let (workdir, outdir) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&workdir).unwrap();
    std::fs::create_dir(&outdir).unwrap();
    let out = outdir.join("run.json");
    let driver = bin()
        .args(["run", "--cell", "1", "--kill", "timed", "--trials", "3", "--leg", "wal", "--refire", "0"])
        .args(["--format", "json", "--out"])
        .arg(&out)
        .arg("--workdir")
        .arg(&workdir)
        .arg("--evidence")
        .arg(dir.path().join("evidence"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::read_dir(&workdir).unwrap().next().is_none() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::remove_dir_all(&outdir).unwrap();
    let done = driver.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(stdout.contains("prefix-durability") && stdout.contains("1 result: "), "no human report: {stdout}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(&outdir.display().to_string()) && errors[0].contains("(os error 2)"), "{stderr}");
    assert!(!out.exists());
}
