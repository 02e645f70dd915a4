//! `--out` claimed before anything else can fail: a lock beside the path,
//! so that two runs given one `--out` cannot both say "report written"
//! while one report is lost, and the older report at the path removed, so
//! that a run that stops early (bad input, exit 2) leaves no stale report
//! for a CI step to upload as the current one.
//!
//! The lock is an OS file lock (`File::try_lock`) on `.NAME.lock` beside
//! the path: it dies with its process, so a killed run leaves no stale
//! lock, only (at worst) the empty file, which the next run takes. The
//! file is removed when the claim ends; a run that opened it just before
//! must then find that the path it locked is no longer the file there, and
//! takes the new one (see [`OutClaim::take`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A claimed `--out`: held until dropped, at the command's end.
#[derive(Debug, Default)]
pub struct OutClaim {
    held: Option<(File, PathBuf)>,
}

/// The lock file of `out`: `.NAME.lock` in its folder.
pub fn lock_path(out: &Path) -> PathBuf {
    let name = out.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    folder(out).join(format!(".{name}.lock"))
}

fn folder(out: &Path) -> &Path {
    out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

impl OutClaim {
    /// Claims `out`: locks it against another run, then removes the report
    /// already there, unless it is one of `inputs` (`report --from R --out
    /// R` renders R again: it is replaced atomically, at the end). A path
    /// whose folder does not exist holds no report and takes no lock; the
    /// checks of the command say what is wrong with it.
    pub fn take(out: Option<&Path>, inputs: &[PathBuf]) -> Result<OutClaim> {
        let Some(out) = out else { return Ok(OutClaim::default()) };
        if !folder(out).is_dir() {
            return Ok(OutClaim::default());
        }
        let lock = lock_path(out);
        // Twice at most: a lock file removed between our open and our lock
        // (its run ended) is taken again, afresh.
        for _ in 0..2 {
            let file = open_lock(out, &lock)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Err(busy(out, &lock)),
                Err(TryLockError::Error(e)) => {
                    return Err(Error::Usage(format!("--out {}: cannot lock {}: {e}", out.display(), lock.display())));
                }
            }
            if still_there(&file, &lock) {
                mark(&file);
                let claim = OutClaim { held: Some((file, lock)) };
                remove_older(out, inputs)?;
                return Ok(claim);
            }
        }
        Err(busy(out, &lock))
    }
}

/// Opens (or makes) the lock file of `out`; a folder that takes no file is
/// said as `run`'s check of `--out` says it.
fn open_lock(out: &Path, lock: &Path) -> Result<File> {
    let opened = OpenOptions::new().create(true).truncate(false).write(true).read(true).open(lock);
    opened.map_err(|e| {
        let at = folder(out).display();
        Error::Usage(format!("--out {}: cannot write in {at} (its lock, {}): {e}", out.display(), lock.display()))
    })
}

/// Writes this process's id into the lock it holds, for the message of a
/// run that finds it held.
fn mark(mut file: &File) {
    let _ = file.set_len(0).and_then(|()| write!(file, "{}", std::process::id()));
}

impl Drop for OutClaim {
    /// Removes the lock file while still holding it, then unlocks (the file
    /// closes): a run waiting on it then finds it gone and makes its own.
    fn drop(&mut self) {
        if let Some((_, path)) = &self.held {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether `path` is still the file `file` locked (not removed, nor made
/// again, by a run that ended meanwhile).
fn still_there(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// The one line a second run on a held `--out` gets.
fn busy(out: &Path, lock: &Path) -> Error {
    let holder = std::fs::read_to_string(lock).ok().filter(|s| !s.trim().is_empty());
    let who = holder.map_or("another crashcells".into(), |pid| format!("another crashcells (pid {})", pid.trim()));
    Error::Usage(format!(
        "--out {}: {who} is writing this report (it holds {}); give each run its own --out",
        out.display(),
        lock.display()
    ))
}

/// Removes the report at `out`, if there is one and it is no input.
fn remove_older(out: &Path, inputs: &[PathBuf]) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(out) else { return Ok(()) };
    if meta.is_dir() || inputs.iter().any(|i| same(i, out)) {
        return Ok(());
    }
    std::fs::remove_file(out)
        .map_err(|e| Error::Usage(format!("--out {}: cannot remove the older report there: {e}", out.display())))
}

fn same(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The `--out` (and the `--from` files) of a command line clap refused, so
/// that a run that stops on a usage error leaves no older report either:
/// only for `run` and `report`, the commands that write one.
pub fn from_raw_args(args: &[std::ffi::OsString]) -> Option<(PathBuf, Vec<PathBuf>)> {
    let args: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    if !matches!(args.first(), Some(&"run") | Some(&"report")) {
        return None;
    }
    let values = |flag: &str| -> Vec<PathBuf> {
        let joined = format!("{flag}=");
        let mut found = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if *a == flag {
                found.extend(args.get(i + 1).map(PathBuf::from));
            } else if let Some(v) = a.strip_prefix(&joined) {
                found.push(PathBuf::from(v));
            }
        }
        found
    };
    let out = values("--out").pop()?;
    Some((out, values("--from")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_removes_the_older_report_and_refuses_a_second_claim_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.xml");
        std::fs::write(&out, "old").unwrap();
        let first = OutClaim::take(Some(&out), &[]).unwrap();
        assert!(!out.exists(), "the older report is gone");
        assert!(lock_path(&out).exists());
        let e = OutClaim::take(Some(&out), &[]).unwrap_err().to_string();
        assert!(e.contains(&format!("(pid {})", std::process::id())) && e.contains(".run.xml.lock"), "{e}");
        assert_eq!(e.lines().count(), 1);
        drop(first);
        assert!(!lock_path(&out).exists(), "the lock file goes with the claim");
        drop(OutClaim::take(Some(&out), &[]).unwrap());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing left behind");
    }

    #[test]
    fn an_input_is_not_removed_and_a_missing_folder_claims_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.json");
        std::fs::write(&out, "{}").unwrap();
        let claim = OutClaim::take(Some(&out), std::slice::from_ref(&out)).unwrap();
        assert!(out.exists(), "report --from R --out R reads R first");
        drop(claim);
        let nowhere = dir.path().join("no/such/run.json");
        assert!(OutClaim::take(Some(&nowhere), &[]).unwrap().held.is_none());
    }

    #[test]
    fn the_out_of_a_refused_command_line_is_found() {
        let args = |s: &str| s.split(' ').map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            from_raw_args(&args("crashcells run --kill bogus --out r.xml")),
            Some((PathBuf::from("r.xml"), vec![]))
        );
        assert_eq!(
            from_raw_args(&args("crashcells report --from a.json --out=r.md --bad")),
            Some((PathBuf::from("r.md"), vec![PathBuf::from("a.json")]))
        );
        assert_eq!(from_raw_args(&args("crashcells list --out r.xml")), None);
        assert_eq!(from_raw_args(&args("crashcells run --cell 1")), None);
    }
}
