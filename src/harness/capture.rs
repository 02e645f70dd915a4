//! Where a child's stderr is kept: its file in the trial's folder, with
//! room reserved for it before the child starts; or, where that file
//! cannot be written (the work folder's disk is full or failing), a pipe
//! whose last bytes the driver keeps in memory. Either way a reason line
//! can still quote the store's last error line ([`super::quote`]).
//!
//! Crash model: a store that fills the disk it shares with the harness
//! (the work folder on `/dev/shm`) panics with `ENOSPC`, and its panic
//! message, written after the disk filled, is lost with the file. So the
//! first [`RESERVE`] bytes of the file are allocated before the child
//! starts (`fallocate`, keeping the file's size), and released when the
//! child is done ([`Capture::release`]); a disk that has not even that
//! room, or a file that cannot be made, sends stderr to memory instead, and
//! the failure is the harness's disk error ([`super::disk`]).

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The bytes of a stderr file allocated before its child starts: more
/// than a traceback or a panic message takes.
pub const RESERVE: i64 = 16 * 1024;

/// The most bytes of stderr kept in memory: the end, which is what a
/// quote reads.
const KEPT: usize = 64 * 1024;

/// How long a quote waits for a pipe's last bytes after its child ended:
/// a background process may hold the pipe open for ever.
const DRAIN: Duration = Duration::from_millis(200);

/// Where a child's stderr went.
#[derive(Clone, Debug, Default)]
pub enum Capture {
    /// Nowhere the driver reads (inherited, or a warm process's own).
    #[default]
    None,
    /// A file, read back for a quote.
    File(PathBuf),
    /// A pipe into memory: the file could not be written.
    Memory(Arc<Kept>),
}

impl Capture {
    /// A file someone else opens for the child (a fork server's fork, a
    /// warm process): the driver only reads it.
    pub fn of(path: Option<&Path>) -> Capture {
        path.map_or(Capture::None, |p| Capture::File(p.to_path_buf()))
    }

    /// The quote of what the child wrote ([`super::quote`]).
    pub fn quote(&self) -> String {
        match self {
            Capture::None => String::new(),
            Capture::File(path) => super::quote::quote_file(path),
            Capture::Memory(kept) => super::quote::quote(&String::from_utf8_lossy(&kept.drained())),
        }
    }

    /// Frees the room [`RESERVE`]d past what the child wrote, once it is
    /// done writing: a run keeps many stderr files, most of them empty.
    pub fn release(&self) {
        if let Capture::File(path) = self {
            release(path);
        }
    }
}

/// Stderr kept in memory: its last [`KEPT`] bytes, and whether the pipe
/// has ended (every writer closed it).
#[derive(Debug, Default)]
pub struct Kept {
    state: Mutex<(Vec<u8>, bool)>,
    ended: Condvar,
}

impl Kept {
    /// What was kept, after the pipe ended or [`DRAIN`] passed.
    fn drained(&self) -> Vec<u8> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (state, _) =
            self.ended.wait_timeout_while(state, DRAIN, |(_, ended)| !*ended).unwrap_or_else(|p| p.into_inner());
        state.0.clone()
    }

    fn push(&self, bytes: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0.extend_from_slice(bytes);
        let over = state.0.len().saturating_sub(KEPT);
        state.0.drain(..over);
    }

    fn end(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.ended.notify_all();
    }
}

/// Opens the child's stderr at `path`, [`RESERVE`] bytes of it allocated:
/// the file and its [`Capture`], or where it cannot be written, a pipe's
/// write end and the memory its reader thread fills.
pub fn open(path: &Path) -> std::io::Result<(std::process::Stdio, Capture)> {
    match file_with_room(path, RESERVE) {
        Ok(file) => Ok((file.into(), Capture::File(path.to_path_buf()))),
        Err(e) => {
            super::disk::failed(path, &e);
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(std::io::Error::from)?;
            let kept = Arc::new(Kept::default());
            keep(read, Arc::clone(&kept))?;
            Ok((write.into(), Capture::Memory(kept)))
        }
    }
}

/// The file at `path`, made empty, with `room` bytes allocated (its size
/// kept at 0). A file system that cannot allocate ahead (`EOPNOTSUPP`)
/// gives the file as it is; one without the room is an error.
fn file_with_room(path: &Path, room: i64) -> std::io::Result<std::fs::File> {
    // Asked of the file system first: an allocation past the free space
    // would fill the disk before it failed.
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if super::disk::free_bytes(folder).is_some_and(|free| free < room as u64) {
        return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    let file = std::fs::File::create(path)?;
    // SAFETY: fallocate on a descriptor we own.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, room) };
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        _ if r == 0 => Ok(file),
        Some(libc::EOPNOTSUPP | libc::ENODEV | libc::ENOSYS | libc::EINVAL) => Ok(file),
        _ => {
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}

/// Frees the allocation past the end of the file at `path`, if it has
/// one: a truncation to its own size frees it (ext4 and tmpfs alike), and
/// is done only where the blocks allocated exceed the size, so that a file
/// allocated as written is never touched.
fn release(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(file) = std::fs::OpenOptions::new().write(true).open(path) else { return };
    let Ok(meta) = file.metadata() else { return };
    let written = meta.len().div_ceil(meta.blksize().max(512)) * meta.blksize().max(512);
    if meta.blocks() * 512 > written {
        let _ = file.set_len(meta.len());
    }
}

/// Reads the pipe's `read` end into `kept` on a thread of its own, until
/// every writer has closed it.
fn keep(read: OwnedFd, kept: Arc<Kept>) -> std::io::Result<()> {
    let mut pipe = std::fs::File::from(read);
    std::thread::Builder::new().name("stderr-kept".into()).spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => kept.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        kept.end();
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;
    use std::process::Command;

    use super::*;

    /// A capture path that cannot be made: the child's stderr goes to
    /// memory, and its last error line is quoted all the same.
    #[test]
    fn a_capture_that_cannot_be_written_is_kept_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (stdio, capture) = open(&dir.path().join("gone/child.stderr")).unwrap();
        assert!(matches!(capture, Capture::Memory(_)), "{capture:?}");
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo 'Traceback (most recent call last):' >&2; echo 'OSError: [Errno 28] No space' >&2; exit 1",
        ]);
        cmd.stderr(stdio);
        let status = cmd.status().unwrap();
        drop(cmd);
        assert_eq!(status.code(), Some(1));
        assert!(capture.quote().starts_with("OSError: [Errno 28] No space"), "{}", capture.quote());
    }

    /// A disk without the room to reserve is an error before the child
    /// starts (the caller then keeps stderr in memory); with room, the
    /// reservation is freed once the child is done.
    #[test]
    fn room_is_reserved_for_stderr_and_freed_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("child.stderr");
        let st = nix::sys::statvfs::statvfs(dir.path()).unwrap();
        let free = (st.blocks_available() as i64).saturating_mul(st.fragment_size() as i64);
        let e = file_with_room(&path, free.saturating_add(1 << 30)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        assert!(!path.exists(), "no capture is made");
        let file = file_with_room(&path, RESERVE).unwrap();
        let blocks = || std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(blocks() >= RESERVE as u64, "{} bytes allocated", blocks());
        assert_eq!(file.metadata().unwrap().len(), 0, "the size is kept");
        Capture::File(path.clone()).release();
        assert!(blocks() < RESERVE as u64, "{} bytes still allocated", blocks());
    }

    /// Memory keeps the end of a long stderr, not all of it.
    #[test]
    fn memory_keeps_the_last_bytes() {
        let kept = Kept::default();
        kept.push(&vec![b'a'; KEPT]);
        kept.push(b"\nValueError: the end\n");
        kept.end();
        let got = kept.drained();
        assert_eq!(got.len(), KEPT);
        assert!(got.ends_with(b"ValueError: the end\n"));
    }
}
