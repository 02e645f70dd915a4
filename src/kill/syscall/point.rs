//! A syscall kill point: the Nth counted call of a traced run (its call,
//! file, offset and length), or the child's own end, and how a trapped call
//! is read as one.
//!
//! Crash model: the child is killed at the entry of the point's call,
//! which has not run, so the files hold exactly what calls 1..N-1 left; the
//! point after the last call is the state a crash after the workload's end
//! leaves. An open that creates a file is never a point: it is read here
//! only for [`crate::kill::outside`].
//!
//! Clause: none of its own; the cells judge the states these points leave.

use std::path::PathBuf;

use super::files::{FileKind, Targets, fd_kind, fd_path, path_kind, read_path};
use super::filter::syscall_name;
use crate::kill::{KillPoint, Ordinal, TrialIndex};

/// A kill point's call: a system call by name, or the child's own end
/// (the point after its last call, reported as `exit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    Sys(&'static str),
    End,
}

impl Call {
    /// Its name in reports: the call's, or `exit` for the end.
    pub fn name(self) -> &'static str {
        match self {
            Call::Sys(name) => name,
            Call::End => "exit",
        }
    }

    pub fn is_end(self) -> bool {
        self == Call::End
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One kill point: the Nth counted call, or the end of a workload that
/// ran to its own exit (the point after its last call: no file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub ordinal: Ordinal,
    pub syscall: Call,
    pub file: Option<FileKind>,
    pub offset: Option<u64>,
    pub len: Option<u64>,
}

impl Point {
    /// The point after the last call of a workload that ended on its own:
    /// the state it left is what a crash after its last call leaves.
    pub fn end(ordinal: Ordinal) -> Point {
        Point { ordinal, syscall: Call::End, file: None, offset: None, len: None }
    }

    /// The call in words, as much as the point says: `pwrite64 database
    /// offset 4096 length 4096`.
    pub fn call(&self) -> String {
        let mut out = self.syscall.to_string();
        if let Some(f) = self.file {
            out.push_str(&format!(" {}", f.as_str()));
        }
        if let Some(o) = self.offset {
            out.push_str(&format!(" offset {o}"));
        }
        if let Some(n) = self.len {
            out.push_str(&format!(" length {n}"));
        }
        out
    }

    pub fn kill_point(&self, trial: TrialIndex, after_acks: u64) -> KillPoint {
        KillPoint {
            trial,
            after_acks,
            ordinal: Some(self.ordinal.0),
            syscall: Some(self.syscall.to_string()),
            file: self.file.map(|f| f.as_str().to_string()),
            offset: self.offset,
            len: self.len,
            racer: None,
        }
    }
}

/// Classifies a trapped call: the point it is (ordinal 0, filled in by the
/// counter) if it touches a target file, else `None`.
pub(crate) fn classify(pid: u32, targets: &Targets, nr: i64, a: [u64; 6]) -> Option<Point> {
    let name = syscall_name(nr)?;
    let (file, offset, len) = match name {
        // Logged by a recording, never a kill point.
        "openat" | "open" | "creat" => return None,
        "write" => (fd_kind(pid, targets, a[0])?, None, Some(a[2])),
        "pwrite64" => (fd_kind(pid, targets, a[0])?, Some(a[3]), Some(a[2])),
        "writev" => (fd_kind(pid, targets, a[0])?, None, None),
        "pwritev" | "pwritev2" => (fd_kind(pid, targets, a[0])?, Some(a[3]), None),
        "fsync" | "fdatasync" => (fd_kind(pid, targets, a[0])?, None, None),
        "ftruncate" => (fd_kind(pid, targets, a[0])?, None, Some(a[1])),
        "unlink" => (path_kind(pid, targets, &[a[0]])?, None, None),
        "unlinkat" => (path_kind(pid, targets, &[a[1]])?, None, None),
        "rename" => (path_kind(pid, targets, &[a[0], a[1]])?, None, None),
        _ => (path_kind(pid, targets, &[a[1], a[3]])?, None, None),
    };
    Some(Point { ordinal: Ordinal(0), syscall: Call::Sys(name), file: Some(file), offset, len })
}

/// The absolute path an open of `pid` creates or truncates (`O_CREAT` or
/// `O_TRUNC`), for [`crate::kill::outside`]; `None` for any other call.
pub(super) fn created(pid: u32, nr: i64, args: [u64; 6]) -> Option<PathBuf> {
    let (dirfd, addr, flags) = match syscall_name(nr)? {
        "openat" => (args[0] as i32, args[1], args[2]),
        "open" => (libc::AT_FDCWD, args[0], args[1]),
        "creat" => (libc::AT_FDCWD, args[0], libc::O_CREAT as u64),
        _ => return None,
    };
    if (flags as i32) & (libc::O_CREAT | libc::O_TRUNC) == 0 {
        return None;
    }
    let path = read_path(pid, addr)?;
    if path.is_absolute() {
        return Some(path);
    }
    let base = match dirfd {
        libc::AT_FDCWD => std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
        fd => fd_path(pid, fd as u64),
    };
    Some(base?.join(path))
}
