//! Where the command line's text goes: stdout and stderr that a closed pipe
//! does not turn into a panic, `--out` files written atomically with the
//! user's umask, the Markdown summary appended to `GITHUB_STEP_SUMMARY`,
//! and the line that says what a reclaim of dead runs' folders freed.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `text` to stdout. A reader that went away (`| head`, a closed
/// pipe) is not an error: the rest is dropped and the command ends as it
/// would have, quietly, as command-line tools do.
pub fn stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::io("stdout", "-")(e)),
        _ => Ok(()),
    }
}

/// A line on stderr, `crashcells: ` first; lost quietly if stderr is gone.
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "crashcells: {line}");
}

/// Writes `text` beside `path` and renames it into place, so that a reader
/// never sees half a report. The file is created with mode 0666 less the
/// umask, as any file a shell redirect makes (a temporary file's own 0600
/// would hide the report from a CI uploader running as another user).
/// A `path` that is a device, a pipe or a socket (`--out /dev/null`,
/// `/dev/stdout`, a FIFO a reader waits on) is written in place: a rename
/// would replace it with a file, and as root it would (`/dev/null` made a
/// regular file for every process of the machine).
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let written = std::fs::OpenOptions::new().write(true).open(path).and_then(|mut f| f.write_all(text.as_bytes()));
        return written.map_err(Error::io("--out", path));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".crashcells-out-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(Error::io("--out folder", dir))?;
    // Synced before the rename: a disk that fills while the data is only
    // in the page cache says ENOSPC here, not never.
    tmp.write_all(text.as_bytes()).and_then(|()| tmp.as_file().sync_all()).map_err(Error::io("--out", path))?;
    tmp.persist(path).map_err(|e| Error::io("--out", path)(e.error))?;
    Ok(())
}

/// The variable GitHub Actions sets to a file whose Markdown it shows on
/// the run's page.
pub const STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";

/// Appends `markdown` to the file `GITHUB_STEP_SUMMARY` names, if it is
/// set. A summary that cannot be written is said, never fatal: the report
/// itself went where it was asked to.
pub fn step_summary(markdown: &str) {
    let Some(path) = std::env::var_os(STEP_SUMMARY).filter(|p| !p.is_empty()) else { return };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{markdown}\n").as_bytes()));
    if let Err(e) = appended {
        note(&format!("{STEP_SUMMARY} {}: {e}", Path::new(&path).display()));
    }
}

/// Removes the scratch folders in `workdir` whose owner is dead, and says
/// what that freed on stderr (nothing when there were none).
pub(super) fn reclaim(workdir: &Path) {
    if let Some(line) = crate::scratch::reclaim(workdir).line(workdir) {
        note(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO stands for any file that is not one (`/dev/null` itself is
    /// not tested: a wrong answer would replace the machine's).
    #[test]
    fn a_pipe_is_written_in_place_never_replaced() {
        use std::io::Read;
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("report.fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // A reader that never blocks: opened first, it lets the write's open go through.
        use std::os::unix::fs::OpenOptionsExt;
        let mut reader = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&fifo).unwrap();
        write_atomically(&fifo, "{\"results\":[]}").unwrap();
        let mut got = String::new();
        let _ = reader.read_to_string(&mut got);
        assert_eq!(got, "{\"results\":[]}", "the report went through the pipe");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
    }

    #[test]
    fn an_atomic_write_honours_the_umask_and_replaces_the_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_atomically(&path, "one").unwrap();
        write_atomically(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        // SAFETY: reads the umask back at once; the tests share it, and
        // putting back what was read leaves it as it was.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !(umask as u32), "mode {mode:o} with umask {umask:o}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, ["r.json"], "no temporary file left beside it");
    }
}
