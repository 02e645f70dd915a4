//! `crashcells prune`: removes the evidence of old runs. Every fire and
//! error keeps its evidence under `<evidence>/<run-id>/` and nothing else
//! ever removes it, so a machine that runs the gate often collects it.
//!
//! Only folders named like a run id (`<seconds>-<pid>`, the run's start and
//! its driver's pid) are touched: pointing `--evidence` at the wrong folder
//! removes nothing else.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A run's evidence folder and when the run started.
struct RunFolder {
    path: PathBuf,
    started: (u64, u64),
}

/// The run folders in `root`, oldest first.
fn run_folders(root: &Path) -> Result<Vec<RunFolder>> {
    let entries = std::fs::read_dir(root).map_err(Error::io("evidence folder", root))?;
    let mut runs: Vec<RunFolder> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some(RunFolder { started: run_id(&e.file_name().to_string_lossy())?, path: e.path() }))
        .collect();
    runs.sort_by_key(|r| r.started);
    Ok(runs)
}

/// `<seconds>-<pid>` as numbers, or `None` for any other name.
fn run_id(name: &str) -> Option<(u64, u64)> {
    let (secs, pid) = name.split_once('-')?;
    Some((secs.parse().ok()?, pid.parse().ok()?))
}

/// Removes all but the `keep` newest run folders in `root`; returns the
/// lines to print (one per removed run, then a count).
pub fn prune(root: &Path, keep: usize) -> Result<Vec<String>> {
    if !root.is_dir() {
        return Ok(vec![format!("no evidence folder at {}: nothing to prune", root.display())]);
    }
    let runs = run_folders(root)?;
    let old = runs.len().saturating_sub(keep);
    let mut lines = Vec::new();
    for run in &runs[..old] {
        std::fs::remove_dir_all(&run.path).map_err(Error::io("removing", &run.path))?;
        lines.push(format!("removed {}", run.path.display()));
    }
    lines.push(format!("{old} removed, {} kept in {}", runs.len() - old, root.display()));
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_the_newest_runs_and_touches_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["1700000000-9", "1700000100-2", "1700000050-7", "notes", "12-x"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("1600000000-1"), "a file, not a run").unwrap();
        let lines = prune(dir.path(), 1).unwrap();
        assert_eq!(lines.last().unwrap(), &format!("2 removed, 1 kept in {}", dir.path().display()));
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
        left.sort();
        assert_eq!(left, ["12-x", "1600000000-1", "1700000100-2", "notes"]);
        assert!(prune(&dir.path().join("none"), 0).unwrap()[0].contains("nothing to prune"));
    }
}
