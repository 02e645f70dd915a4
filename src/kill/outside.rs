//! Files a traced child creates outside the folder it was given: named in
//! `run`'s report and by `child-check`'s `own-folder`, with the path.
//!
//! Crash model: the driver's crash states are the trial's folder. A store
//! that keeps state elsewhere (an absolute path, a folder of its own) has
//! state no kill point counts and no crash state holds, and leaves files
//! after the run. A folder the ready record declares (`sidecar`,
//! docs/PROTOCOL.md §3) is allowed. Only what a traced child creates or
//! truncates is seen (an open with `O_CREAT` or `O_TRUNC`): the calls the
//! syscall kill mode stops at.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Paths created outside the folder, across the process's traced runs.
static SEEN: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
/// How many traced runs looked.
static TRACED: AtomicUsize = AtomicUsize::new(0);
/// The most paths kept: a store that writes elsewhere writes there often.
const KEPT: usize = 20;

/// Counts one traced run that looks.
pub(crate) fn traced() {
    TRACED.fetch_add(1, Ordering::Relaxed);
}

/// Whether any traced run looked.
pub fn looked() -> bool {
    TRACED.load(Ordering::Relaxed) > 0
}

/// Keeps `path`, which a traced child created or truncated, if it is
/// outside `folder` (the trial's).
pub(crate) fn keep(path: PathBuf, folder: &Path) {
    let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
    if !outside(&path, &folder) {
        return;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.len() < KEPT {
        seen.insert(path);
    }
}

/// Whether `path` is out of `folder` and no file of the system's own (a
/// device, `/proc`), nor Python's compiled-module cache.
fn outside(path: &Path, folder: &Path) -> bool {
    let system = ["/dev", "/proc", "/sys"].iter().any(|s| path.starts_with(s));
    let cache = path.components().any(|c| c.as_os_str() == "__pycache__");
    !path.starts_with(folder) && !system && !cache
}

/// The paths created outside the folder that still exist (a temporary file
/// removed at once left nothing), less those in `sidecar`, each a line.
pub fn named(sidecar: Option<&Path>) -> Vec<String> {
    let seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.iter()
        .filter(|p| p.exists() && sidecar.is_none_or(|s| !p.starts_with(s)))
        .map(|p| format!("the store created {} (outside the folder it was given)", p.display()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_out_of_the_folder_is_outside_but_devices_and_caches_are_not() {
        let folder = Path::new("/w/trial-1");
        assert!(!outside(Path::new("/w/trial-1/store.db"), folder));
        assert!(!outside(Path::new("/w/trial-1/home/x"), folder));
        assert!(outside(Path::new("/w/elsewhere.db"), folder));
        assert!(!outside(Path::new("/dev/null"), folder));
        assert!(!outside(Path::new("/src/pkg/__pycache__/m.cpython-312.pyc"), folder));
    }

    #[test]
    fn a_file_still_there_is_named_unless_in_the_declared_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, gone) = (dir.path().join("side/kept.db"), dir.path().join("gone.tmp"));
        std::fs::create_dir(dir.path().join("side")).unwrap();
        std::fs::write(&kept, b"x").unwrap();
        SEEN.lock().unwrap().extend([kept.clone(), gone]);
        let all = named(None);
        assert!(all.iter().any(|n| n.contains(&kept.display().to_string())), "{all:?}");
        assert!(!all.iter().any(|n| n.contains("gone.tmp")), "{all:?}");
        assert!(!named(Some(&dir.path().join("side"))).iter().any(|n| n.contains("kept.db")));
    }
}
