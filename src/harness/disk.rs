//! The harness's own disk: the failures of its own files (the work
//! folder's trial folders and recovery copies, the children's stderr
//! captures), kept so that a result found while they failed is the
//! harness's error naming the disk, never the store's finding
//! ([`crate::pipeline::result::fold::blame_full_disk`]).
//!
//! Crash model: a full disk (`ENOSPC`, `EDQUOT`) and a failing one (`EIO`)
//! are the same to a judge: a file the harness meant to write is missing
//! or short, and what the store is judged on is not what it left. The
//! faults `--kill fault` injects into the store's own calls never pass
//! through here: they are the store's to survive.

use std::path::Path;
use std::sync::Mutex;

/// Every disk failure of the harness's own files so far, in order: the
/// file and the error.
static FAILED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether `e` says the disk is full or failing.
pub fn is_disk_error(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT | libc::EIO))
}

/// Keeps `e`, a failure of the harness's own file at `path`, if the disk
/// caused it.
pub fn failed(path: &Path, e: &std::io::Error) {
    if is_disk_error(e) {
        FAILED.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{}: {e}", path.display()));
    }
}

/// `r`, a write of the harness's own file at `path`, with its disk
/// failure kept ([`failed`]).
pub fn checked<T>(path: &Path, r: std::io::Result<T>) -> std::io::Result<T> {
    if let Err(e) = &r {
        failed(path, e);
    }
    r
}

/// How many disk failures were kept so far: a mark for [`since`].
pub fn mark() -> usize {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).len()
}

/// The last disk failure kept after `mark`, if any.
pub fn since(mark: usize) -> Option<String> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).get(mark..)?.last().cloned()
}

/// The bytes an unprivileged writer may still use on `dir`'s disk.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    Some((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk and a failing one are kept alike; any other error (a
    /// missing folder, a refused permission) is not the disk's.
    #[test]
    fn enospc_and_eio_are_the_disks_and_nothing_else() {
        let at = mark();
        let path = Path::new("work/t1/child.stderr");
        failed(path, &std::io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(since(at), None);
        failed(path, &std::io::Error::from_raw_os_error(libc::EIO));
        assert!(since(at).unwrap().starts_with("work/t1/child.stderr: Input/output error"), "{:?}", since(at));
        let _ = checked::<()>(path, Err(std::io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(since(at).unwrap().contains("No space left on device"), "{:?}", since(at));
    }
}
