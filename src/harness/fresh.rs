//! What makes a forked or a warm process as trustworthy as an exec'd one:
//! before its operation runs, the driver waits until it has stopped itself
//! (`SIGSTOP`, docs/PROTOCOL.md, "Fork server" and "Warm pool"), every
//! thread of it, then reads `/proc` to check that it leads its own process
//! group and holds no descriptor it could not hold after an exec: its three
//! standard streams are the ones asked for, and no other descriptor names a
//! file of the trial's folder or a SQLite file.
//!
//! Crash model: a process that inherited an open database, a journal or a
//! trial's file from its server (or opened one while it waited in the warm
//! pool) could write it behind the store's back, or keep a lock an exec'd
//! process would not hold; the crash states it leaves would then be no
//! evidence about the store. Such a child is refused, with one line that
//! names the descriptor.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::unistd::Pid;

use super::{Interrupt, POLL};

/// File names that are SQLite's, wherever they lie.
const SQLITE_SUFFIXES: &[&str] = &[".db", "-wal", "-journal", "-shm"];

/// Which launcher started the process: a refusal names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Forked by the child's fork server (docs/PROTOCOL.md §9).
    Fork,
    /// Exec'd ahead of need into the warm pool (docs/PROTOCOL.md §10).
    Warm,
}

impl Origin {
    fn launcher(self) -> &'static str {
        match self {
            Origin::Fork => "fork server",
            Origin::Warm => "warm pool",
        }
    }

    fn process(self) -> &'static str {
        match self {
            Origin::Fork => "a forked process",
            Origin::Warm => "a warm process",
        }
    }
}

/// Why a forked or warm process was not let run its operation, as one line.
#[derive(Debug, thiserror::Error)]
pub enum NotFresh {
    #[error(
        "{}: process {pid} holds descriptor {fd} ({target}) when it starts its operation; \
         {} must start as fresh as an exec'd one", .origin.launcher(), .origin.process()
    )]
    Stale { origin: Origin, pid: i32, fd: i32, target: String },
    #[error(
        "{}: process {pid} holds descriptor {fd} ({target}) where its {stream} should be ({expected}) \
         when it starts its operation; {} must start as fresh as an exec'd one", .origin.launcher(), .origin.process()
    )]
    Stdio { origin: Origin, pid: i32, fd: i32, stream: &'static str, target: String, expected: String },
    #[error(
        "{}: process {pid} is in process group {pgid}, not one of its own, when it starts its operation; \
         {} must lead its own group as an exec'd one does", .origin.launcher(), .origin.process()
    )]
    NotLeader { origin: Origin, pid: i32, pgid: i32 },
    #[error("{}: process {pid} ended before it stopped for its operation ({why})", .origin.launcher())]
    EndedEarly { origin: Origin, pid: i32, why: String },
    #[error("{}: process {pid} did not stop for its operation within {deadline:?}", .origin.launcher())]
    NeverStopped { origin: Origin, pid: i32, deadline: Duration },
    #[error("{}: the run was interrupted", .origin.launcher())]
    Interrupted { origin: Origin },
}

impl NotFresh {
    /// Whether the process only did not stop in time (a slow start, not a
    /// stale one).
    pub fn timed_out(&self) -> bool {
        matches!(self, NotFresh::NeverStopped { .. })
    }
}

/// What the driver asked the process's standard streams to be.
#[derive(Debug)]
pub(super) struct Expected {
    /// The trial's folder (a file under it is the trial's).
    pub trial: PathBuf,
    /// Where stdout and stderr go; `None` is `/dev/null`.
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
}

/// Waits (until `until`, or until `interrupt` is raised) for process `pid`
/// to stop before its operation, every thread of it, then checks it is
/// fresh. A process that ended instead is named with `ended`'s account of
/// its end.
pub(super) fn confirm(
    pid: Pid,
    origin: Origin,
    expected: &Expected,
    (until, deadline): (Instant, Duration),
    interrupt: &Interrupt,
    ended: impl FnOnce() -> String,
) -> Result<(), NotFresh> {
    loop {
        match stat(pid) {
            Some(s) if s.state == 'T' && all_threads_stopped(pid) => return check(pid, origin, &s, expected),
            Some(s) if s.state != 'Z' && s.state != 'X' => {}
            _ => return Err(NotFresh::EndedEarly { origin, pid: pid.as_raw(), why: ended() }),
        }
        if Instant::now() >= until {
            return Err(NotFresh::NeverStopped { origin, pid: pid.as_raw(), deadline });
        }
        if interrupt.is_set() {
            return Err(NotFresh::Interrupted { origin });
        }
        std::thread::sleep(POLL);
    }
}

/// Whether every thread of `pid` is in its stop: a `SIGSTOP` stops the
/// whole process, but each thread enters the stop on its own, and a thread
/// still running could start another that no tracer would ever see.
fn all_threads_stopped(pid: Pid) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.flatten().all(|t| {
        let text = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        parse_stat(&text).is_some_and(|s| s.state == 'T' || s.state == 't')
    })
}

/// The fields of `/proc/PID/stat` the check reads.
#[derive(Debug)]
struct Stat {
    state: char,
    pgrp: i32,
}

fn stat(pid: Pid) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// `pid (comm) state ppid pgrp ...`: the command may hold spaces and
/// parentheses, so the fields are read after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let mut fields = text.get(text.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    Some(Stat { state, pgrp: fields.next()?.parse().ok()? })
}

/// The checks on a stopped process: its group, then each descriptor.
fn check(pid: Pid, origin: Origin, stat: &Stat, expected: &Expected) -> Result<(), NotFresh> {
    if stat.pgrp != pid.as_raw() {
        return Err(NotFresh::NotLeader { origin, pid: pid.as_raw(), pgid: stat.pgrp });
    }
    let trial = std::fs::canonicalize(&expected.trial).unwrap_or_else(|_| expected.trial.clone());
    let streams = [
        ("stdin", Some(PathBuf::from("/dev/null"))),
        ("stdout", expected.stdout.clone()),
        ("stderr", expected.stderr.clone()),
    ]
    .map(|(name, path)| (name, canonical(path)));
    for (fd, target) in descriptors(pid) {
        let refused = match usize::try_from(fd).ok().and_then(|i| streams.get(i)) {
            Some((stream, want)) if target != *want => {
                let (target, expected) = (shown(&target), shown(want));
                return Err(NotFresh::Stdio { origin, pid: pid.as_raw(), fd, stream, target, expected });
            }
            Some(_) => false,
            None => is_refused(&target, &trial),
        };
        if refused {
            return Err(NotFresh::Stale { origin, pid: pid.as_raw(), fd, target: shown(&target) });
        }
    }
    Ok(())
}

/// A stream's file as `/proc` shows it: `/dev/null` for none.
fn canonical(path: Option<PathBuf>) -> PathBuf {
    let path = path.unwrap_or_else(|| PathBuf::from("/dev/null"));
    std::fs::canonicalize(&path).unwrap_or(path)
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// The process's descriptors and what each names, in order.
fn descriptors(pid: Pid) -> Vec<(i32, PathBuf)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return vec![] };
    let mut fds: Vec<(i32, PathBuf)> = dir
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, std::fs::read_link(e.path()).ok()?)))
        .collect();
    fds.sort();
    fds
}

/// Whether a descriptor other than the standard streams may not be held:
/// a file of the trial's folder, or a SQLite file anywhere (a database the
/// server opened while it imported, say). A deleted file keeps its name.
fn is_refused(target: &Path, trial: &Path) -> bool {
    let text = target.to_string_lossy();
    let name = text.strip_suffix(" (deleted)").unwrap_or(&text);
    Path::new(name).starts_with(trial) || SQLITE_SUFFIXES.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command() {
        let s = parse_stat("1234 (py (store) x) T 1200 1234 1200 0 -1").unwrap();
        assert_eq!((s.state, s.pgrp), ('T', 1234));
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn trial_files_and_sqlite_files_are_refused_and_others_are_not() {
        let trial = Path::new("/w/t1");
        for bad in ["/w/t1/acks.ndjson", "/w/t1/home/config.toml", "/tmp/cache.db", "/x/s.db-wal", "/x/s-journal"] {
            assert!(is_refused(Path::new(bad), trial), "{bad}");
        }
        assert!(is_refused(Path::new("/tmp/old.db (deleted)"), trial));
        for fine in ["pipe:[123]", "socket:[9]", "/usr/lib/python3.11/x.py", "/w/t10/store", "anon_inode:[eventfd]"] {
            assert!(!is_refused(Path::new(fine), trial), "{fine}");
        }
    }

    /// The refusal is one line, for a preflight to print as it is.
    #[test]
    fn a_violation_is_one_line_naming_the_descriptor() {
        let e = NotFresh::Stale { origin: Origin::Fork, pid: 1234, fd: 5, target: "/dev/shm/t/store.db".into() };
        let text = e.to_string();
        assert!(!text.contains('\n'));
        assert!(text.starts_with("fork server: process 1234 holds descriptor 5 (/dev/shm/t/store.db)"), "{text}");
        assert!(text.ends_with("a forked process must start as fresh as an exec'd one"), "{text}");
        let e = NotFresh::Stale { origin: Origin::Warm, pid: 1234, fd: 5, target: "/t/store.db".into() };
        assert!(e.to_string().starts_with("warm pool: process 1234 holds descriptor 5"), "{e}");
        assert!(e.to_string().ends_with("a warm process must start as fresh as an exec'd one"), "{e}");
    }

    #[test]
    fn descriptors_are_read_from_proc() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("open.db")).unwrap();
        use std::os::fd::AsRawFd;
        let fds = descriptors(nix::unistd::getpid());
        let held = fds.iter().find(|(fd, _)| *fd == file.as_raw_fd()).expect("the open file is listed");
        assert!(held.1.ends_with("open.db"));
        assert!(is_refused(&held.1, Path::new("/elsewhere")));
    }
}
