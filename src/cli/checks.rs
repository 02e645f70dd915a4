//! What `run` checks before any child runs: the folders it will write in
//! (work folder, `--out`, the evidence folder) are usable, and the options
//! make sense together. Each failure is bad input: one line, exit 2, and
//! nothing started, rather than a fire whose evidence is lost an hour in.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::options::{RunOptions, WorkdirArg};
use crate::pipeline::result::dispatch::trial_count;
use crate::plan::Job;

/// `--workdir`, or the command's default, checked to be a folder this
/// process can make folders in (an audit or a run in a read-only folder
/// must say so, not blame the child).
pub fn workdir_or(given: &WorkdirArg, default: fn() -> PathBuf) -> Result<PathBuf> {
    let workdir = given.dir.clone().unwrap_or_else(default);
    if !workdir.is_dir() {
        return Err(Error::Usage(format!("--workdir {}: not a folder", workdir.display())));
    }
    probe_folder(&workdir)
        .map_err(|e| Error::Usage(format!("--workdir {}: cannot make a folder in it: {e}", workdir.display())))?;
    Ok(workdir)
}

/// Makes and removes a folder in `dir`: the one sure test that a write
/// there works (permission bits do not tell for root, nor for a read-only
/// mount).
fn probe_folder(dir: &Path) -> std::io::Result<()> {
    tempfile::Builder::new().prefix(".crashcells-probe-").tempdir_in(dir).map(drop)
}

/// `--out PATH`: its folder exists and takes a new file.
pub fn out_path(out: &Option<PathBuf>) -> Result<()> {
    let Some(path) = out else { return Ok(()) };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let bad = |why: String| Err(Error::Usage(format!("--out {}: {why}", path.display())));
    if parent.exists() && !parent.is_dir() {
        return bad(format!("{} is not a folder", parent.display()));
    }
    if !parent.is_dir() {
        return bad(format!("folder {} does not exist", parent.display()));
    }
    if path.is_dir() {
        return bad("is a folder".into());
    }
    match tempfile::Builder::new().prefix(".crashcells-out-").tempfile_in(parent) {
        Ok(_) => Ok(()),
        Err(e) => bad(format!("cannot write in {}: {e}", parent.display())),
    }
}

/// The evidence folder is made on first use, deep inside a run; a path that
/// can never become a folder (a file on the way, a read-only place) is bad
/// input now, not a lost piece of evidence later. Nothing is left behind:
/// a run that keeps no evidence makes no folder.
pub fn evidence_path(root: &Path, given: bool) -> Result<()> {
    let flag = if given { "--evidence" } else { "--evidence (default under the current folder)" };
    let Some(existing) = root.ancestors().find(|p| p.exists() && !p.as_os_str().is_empty()) else {
        // A relative path whose every ancestor is still to be made: in `.`.
        return probe_folder(Path::new("."))
            .map_err(|e| Error::Usage(format!("{flag} {}: cannot be made here: {e}", root.display())));
    };
    if !existing.is_dir() {
        return Err(Error::Usage(format!("{flag}: {} is not a folder", existing.display())));
    }
    probe_folder(existing).map_err(|e| {
        Error::Usage(format!("{flag} {}: cannot make folders in {}: {e}", root.display(), existing.display()))
    })
}

/// `--cwd`, the folder the child runs in: made absolute against `start`,
/// the folder the run starts in, and for a `--child` run set to `start` when
/// not given, so that every repro of the run names the folder where the
/// child's relative paths start and runs from any other. A reference run
/// needs none (its child is this binary, by its absolute path).
pub fn child_folder(o: &mut RunOptions, start: &Path) -> Result<()> {
    let dir = match (&o.cwd, &o.child.command) {
        // `join` keeps an absolute path as it is.
        (Some(given), _) => start.join(given),
        (None, Some(_)) => start.to_path_buf(),
        (None, None) => return Ok(()),
    };
    if !dir.is_dir() {
        return Err(Error::Usage(format!("--cwd {}: not a folder", dir.display())));
    }
    o.cwd = Some(dir);
    Ok(())
}

/// Options that make no sense together: a kill point or a sample of points
/// for timed kills only, a trial number for syscall kills only, a trial,
/// a kill point or a share of the plan without a seed to plan it with.
pub fn options(o: &RunOptions) -> Result<()> {
    let bad = |m: &str| Err(Error::Usage(m.to_string()));
    let modes = o.kill.modes();
    let (name, sweeps) = (o.kill.as_str(), modes.iter().any(|k| k.sweeps_points()));
    if !sweeps && o.point.is_some() {
        return bad(&format!("--point selects a syscall kill point, and --kill {name} has none (use --kill syscall)"));
    }
    if !sweeps && o.points.is_some() {
        return bad(&format!(
            "--points samples syscall kill points, and --kill {name} has none (use --kill syscall or all)"
        ));
    }
    if modes.iter().all(|k| k.sweeps_points()) && o.trial.is_some() {
        return bad(&format!("--trial selects a timed trial, and --kill {name} runs kill points (use --point)"));
    }
    if o.trial.is_some() && o.seed.is_none() {
        return bad("--trial N reruns a trial of the run a seed planned: give its --seed (a repro names both)");
    }
    if o.point.is_some() && o.seed.is_none() {
        return bad("--point N reruns a kill point of the run a seed planned: give its --seed (a repro names both)");
    }
    if o.partition.is_some() && o.seed.is_none() {
        return bad("--partition needs --seed: every share must plan the same run (e.g. --seed $GITHUB_RUN_ID)");
    }
    Ok(())
}

/// `--trial N` names a trial of the plan: below the trials of every timed
/// result it selects (a stub runs none, a sweep has kill points instead).
/// A trial beyond them would check nothing and pass.
pub fn trial_in_plan(o: &RunOptions, jobs: &[Job]) -> Result<()> {
    let Some(n) = o.trial else { return Ok(()) };
    let timed = jobs.iter().filter(|j| j.leg.is_some() && !j.kill.sweeps_points());
    match timed.map(|j| (j, trial_count(j, o))).find(|(_, count)| n >= *count) {
        Some((job, count)) => Err(Error::Usage(format!(
            "--trial {n} is outside the plan: cell {} runs trials 0 to {} (--trials raises it)",
            job.cell.id,
            count.saturating_sub(1)
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{ChildArg, KillArg};
    use crate::plan::KillMode;

    #[test]
    fn a_read_only_place_is_refused_and_a_new_folder_is_not_made() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("evidence/run-1");
        evidence_path(&root, true).unwrap();
        assert!(!dir.path().join("evidence").exists(), "the check makes nothing");
        let afile = dir.path().join("afile");
        std::fs::write(&afile, "x").unwrap();
        let e = evidence_path(&afile.join("run-1"), true).unwrap_err().to_string();
        assert!(e.contains("afile is not a folder"), "{e}");
        // /proc takes no new folder, whoever asks (root included).
        let e = evidence_path(Path::new("/proc/crashcells-evidence/run-1"), true).unwrap_err().to_string();
        assert!(e.starts_with("--evidence /proc/crashcells-evidence/run-1: cannot make folders in /proc"), "{e}");
        let e = out_path(&Some("/proc/r.json".into())).unwrap_err().to_string();
        assert!(e.starts_with("--out /proc/r.json: cannot write in /proc"), "{e}");
    }

    #[test]
    fn a_child_runs_in_the_start_folder_unless_told_and_the_folder_is_absolute() {
        let start = tempfile::tempdir().unwrap();
        std::fs::create_dir(start.path().join("sub")).unwrap();
        let mut child = RunOptions { child: ChildArg::given("python3 store.py"), ..RunOptions::default() };
        child_folder(&mut child, start.path()).unwrap();
        assert_eq!(child.cwd.as_deref(), Some(start.path()));
        let mut given = RunOptions { cwd: Some("sub".into()), ..child.clone() };
        child_folder(&mut given, start.path()).unwrap();
        assert_eq!(given.cwd, Some(start.path().join("sub")));
        let mut reference = RunOptions::default();
        child_folder(&mut reference, start.path()).unwrap();
        assert_eq!(reference.cwd, None, "the reference child is this binary, found from anywhere");
        let mut missing = RunOptions { cwd: Some("nope".into()), ..child };
        let e = child_folder(&mut missing, start.path()).unwrap_err().to_string();
        assert_eq!(e, format!("--cwd {}: not a folder", start.path().join("nope").display()));
    }

    #[test]
    fn options_that_contradict_each_other_are_refused() {
        let timed = RunOptions { kill: KillMode::Timed.into(), point: Some(3), ..RunOptions::default() };
        assert!(options(&timed).unwrap_err().to_string().starts_with("--point"));
        let sampled = RunOptions { kill: KillMode::Timed.into(), points: Some(3), ..RunOptions::default() };
        assert!(options(&sampled).unwrap_err().to_string().starts_with("--points"));
        let syscall = RunOptions { kill: KillMode::Syscall.into(), trial: Some(1), ..RunOptions::default() };
        assert!(options(&syscall).unwrap_err().to_string().starts_with("--trial selects a timed trial"));
        let alone = RunOptions { kill: KillMode::Timed.into(), trial: Some(1), ..RunOptions::default() };
        assert!(options(&alone).unwrap_err().to_string().starts_with("--trial N reruns a trial"));
        let part = RunOptions { partition: Some("1/2".parse().unwrap()), ..RunOptions::default() };
        assert!(options(&part).unwrap_err().to_string().starts_with("--partition needs --seed"));
        let unseeded = RunOptions { kill: KillMode::Syscall.into(), point: Some(5), ..RunOptions::default() };
        assert!(options(&unseeded).unwrap_err().to_string().starts_with("--point N reruns a kill point"));
        let all =
            RunOptions { kill: KillArg::ALL, point: Some(3), trial: Some(1), seed: Some(1), ..RunOptions::default() };
        assert!(options(&all).is_ok(), "each applies to its own kill mode");
    }
}
