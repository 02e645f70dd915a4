//! The one set-up every child gets before exec, plain, traced or a fork
//! server: stderr to a file (or to memory, [`super::capture`]), a process group of its own, the parent-death
//! signal and the check that the driver is still its parent (as the child
//! sees it from the run's container, [`super::contain`]); and the tail of a
//! child's stderr, for a reason line.
//!
//! Crash model: each child leads a process group of its own, so that one
//! `SIGKILL` reaches everything it started; it carries the parent-death
//! signal, so that a driver killed itself leaves nothing running.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::capture::Capture;

/// The exit code of a child whose driver died before its exec: not an
/// errno, so that a traced child's failed exec (which exits with its errno)
/// is never mistaken for it.
pub(super) const ORPHANED: i32 = 255;

/// The set-up every child gets, plain or traced: stderr to `stderr` (where
/// it went: [`Capture`]), the
/// leader of a new process group, and before exec the parent-death signal,
/// a check that the driver is still its parent, in the run's namespace a
/// `/proc` of its own ([`super::contain::mount_own_proc`]), then `then` (a
/// traced child's request to be traced and its filter).
pub(super) fn prepare(
    cmd: &mut Command,
    stderr: Option<&Path>,
    mut then: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> std::io::Result<Capture> {
    ensure_subreaper();
    let mut capture = Capture::None;
    if let Some(path) = stderr {
        let (stdio, kept) = super::capture::open(path)?;
        cmd.stderr(stdio);
        capture = kept;
    }
    cmd.process_group(0);
    let parent = super::contain::parent_as_seen();
    let own_proc = super::contain::namespaced();
    // SAFETY: prctl, getppid and _exit are async-signal-safe and touch no
    // memory of the parent; `then` must be too (it is checked where given).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A driver that died between the fork and the prctl sent no
            // death signal: the child has been reparented, so it goes.
            if libc::getppid() != parent {
                libc::_exit(ORPHANED);
            }
            if own_proc {
                super::contain::mount_own_proc();
            }
            then()
        });
    }
    Ok(capture)
}

/// Makes sure a container is in force before the first child: the
/// namespace the driver made at start, or the subreaper.
pub(super) fn ensure_subreaper() {
    super::contain::in_force();
}

/// A stderr file quoted for a reason line: the store's own last error
/// line first, then the last lines, capped ([`super::quote`]).
pub fn stderr_tail(path: &Path) -> String {
    super::quote::quote_file(path)
}
