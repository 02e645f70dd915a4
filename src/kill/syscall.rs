//! Syscall kill points: stop the child at the entry of its Nth file-mutating
//! system call on the store's files or the ack journal, and kill it there.
//!
//! Crash model: a seccomp filter traps only the calls that can change a file
//! (`write`, `pwrite64`, `writev`, `pwritev`, `pwritev2`, `fsync`,
//! `fdatasync`, `ftruncate`, `unlink`, `unlinkat`, `rename`, `renameat`,
//! `renameat2`); the driver counts those that touch the database, its
//! `-journal`, `-wal` or `-shm`, the ack journal, a file the workload
//! adds (the transport a child sends through), or any other file directly
//! in the store's folder (a marker, a manifest, a blob: the store's own,
//! [`FileKind::Other`]; the child's stderr aside), and at the Nth sends
//! `SIGKILL` to the group while the call has not run. The files then hold
//! exactly what calls 1..N-1 left, so a sweep over N visits every crash state
//! of a short workload, where a timed kill rarely lands inside a commit.
//!
//! A census first runs the workload until K acks and counts its points M;
//! the point after the Kth ack is M+1, so a sweep runs N = 1..=M+1 (a
//! workload run to its own end with `--stop-after` counts them all).
//!
//! The filter also traps what a recording ([`super::record`]) needs and no
//! kill point is made of: `open`/`openat`/`creat` with `O_CREAT` or
//! `O_TRUNC` (the filter looks at the flags, so the many plain opens of an
//! interpreter's start never stop the child), and `fsync` of the trial's
//! folder. They are never counted, so every kill point keeps its number.
//!
//! An injecting mode (`--kill fault`, issue 24) drives the same points with
//! `Goal::InjectAt`: the Nth call is not killed but changed as its
//! injection says ([`super::inject`]; [`super::fault`] makes it fail without
//! running), and the child runs on to its own end.
//!
//! A kill may also be placed by what the caller saw rather than by an
//! ordinal (`Goal::Asked`, [`drive_asking`]): a recorded fire sought again
//! in a run whose calls differ from the recording's.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::harness::{TraceError, TraceEvent, Traced, Traps};
use crate::kill::{KillPoint, Ordinal, TrialIndex};

/// The trapped system calls, by name and number on this architecture.
#[cfg(target_arch = "x86_64")]
const TRAPPED: &[(&str, i64)] = &[
    ("write", libc::SYS_write),
    ("pwrite64", libc::SYS_pwrite64),
    ("writev", libc::SYS_writev),
    ("pwritev", libc::SYS_pwritev),
    ("pwritev2", libc::SYS_pwritev2),
    ("fsync", libc::SYS_fsync),
    ("fdatasync", libc::SYS_fdatasync),
    ("ftruncate", libc::SYS_ftruncate),
    ("unlink", libc::SYS_unlink),
    ("unlinkat", libc::SYS_unlinkat),
    ("rename", libc::SYS_rename),
    ("renameat", libc::SYS_renameat),
    ("renameat2", libc::SYS_renameat2),
];

/// aarch64 has no `unlink`, `rename` or `renameat`: only their `at` forms.
#[cfg(target_arch = "aarch64")]
const TRAPPED: &[(&str, i64)] = &[
    ("write", libc::SYS_write),
    ("pwrite64", libc::SYS_pwrite64),
    ("writev", libc::SYS_writev),
    ("pwritev", libc::SYS_pwritev),
    ("pwritev2", libc::SYS_pwritev2),
    ("fsync", libc::SYS_fsync),
    ("fdatasync", libc::SYS_fdatasync),
    ("ftruncate", libc::SYS_ftruncate),
    ("unlinkat", libc::SYS_unlinkat),
    ("renameat2", libc::SYS_renameat2),
];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const TRAPPED: &[(&str, i64)] = &[];

/// Opens trapped only when their flags (the argument at the index given)
/// create or truncate; never kill points.
#[cfg(target_arch = "x86_64")]
const OPENS: &[(&str, i64, u8)] =
    &[("openat", libc::SYS_openat, 2), ("open", libc::SYS_open, 1), ("creat", libc::SYS_creat, u8::MAX)];

#[cfg(target_arch = "aarch64")]
const OPENS: &[(&str, i64, u8)] = &[("openat", libc::SYS_openat, 2)];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const OPENS: &[(&str, i64, u8)] = &[];

/// Why syscall kill points cannot run on this architecture, if they cannot.
pub fn unsupported_arch() -> Option<String> {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        None
    } else {
        Some(format!("syscall kill points need x86_64 or aarch64, not {}", std::env::consts::ARCH))
    }
}

/// The compiled filter: trace the calls above, allow every other. Compiled
/// once, before any fork, since the child may not allocate before exec.
pub fn filter() -> Result<&'static [seccompiler::sock_filter], String> {
    static FILTER: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    FILTER.get_or_init(|| compile(false)).as_deref().map_err(Clone::clone)
}

/// The filter and its test together, as the harness applies them to an
/// exec'd child (the filter) or a seized one (the test).
pub fn trap_set() -> Result<Traps, String> {
    Ok(Traps { filter: filter()?, test: traps })
}

/// [`trap_set`] and the lock calls ([`super::locks`]): for a process a
/// controlled schedule holds between two transactions. Only such a process
/// stops at its locks (a sweep's children never do: a lock call is no kill
/// point, and SQLite makes several per transaction).
pub fn lock_trap_set() -> Result<Traps, String> {
    static FILTER: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    let filter = FILTER.get_or_init(|| compile(true)).as_deref().map_err(Clone::clone)?;
    Ok(Traps { filter, test: traps_with_locks })
}

fn compile(locks: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        TRAPPED.iter().map(|&(_, nr)| (nr, vec![])).collect();
    for &(_, nr, flags) in OPENS {
        rules.insert(nr, open_rules(flags).map_err(|e| format!("seccomp filter: {e}"))?);
    }
    if let (true, Some(nr)) = (locks, super::locks::FCNTL) {
        rules.insert(nr, lock_rules().map_err(|e| format!("seccomp filter: {e}"))?);
    }
    let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(0), arch)
        .map_err(|e| format!("seccomp filter: {e}"))?;
    BpfProgram::try_from(f).map_err(|e| format!("seccomp filter: {e}"))
}

/// An open is trapped when its flags argument has `O_CREAT` or `O_TRUNC`;
/// `creat` (no flags argument, `u8::MAX`) always.
fn open_rules(flags: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    if flags == u8::MAX {
        return Ok(vec![]);
    }
    let with = |bit: libc::c_int| {
        let bit = bit as u64;
        SeccompCondition::new(flags, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    Ok(vec![with(libc::O_CREAT)?, with(libc::O_TRUNC)?])
}

/// An `fcntl` is trapped when its command (the second argument) sets a lock.
fn lock_rules() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let cmd = |c: libc::c_int| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, c as u64)
            .and_then(|c| SeccompRule::new(vec![c]))
    };
    super::locks::LOCK_CMDS.iter().map(|&c| cmd(c)).collect()
}

/// [`traps`], and the lock calls: the lock filter's test.
pub(crate) fn traps_with_locks(nr: i64, args: &[u64; 6]) -> bool {
    traps(nr, args) || super::locks::is_lock_call(nr, args)
}

/// Whether the filter traps call `nr` with `args`: the compiled filter's
/// test, for a tracee that stops at every system call instead (a process
/// forked by a fork server runs under no filter of ours). The same calls,
/// and an open's flags compared on their low 32 bits as the filter's
/// `Dword` does, so that a forked process's kill points are an exec'd one's.
pub(crate) fn traps(nr: i64, args: &[u64; 6]) -> bool {
    if TRAPPED.iter().any(|&(_, n)| n == nr) {
        return true;
    }
    let creates = |flags: u64| (flags as u32) & ((libc::O_CREAT | libc::O_TRUNC) as u32) != 0;
    OPENS.iter().find(|&&(_, n, _)| n == nr).is_some_and(|&(_, _, at)| at == u8::MAX || creates(args[at as usize]))
}

pub(crate) fn syscall_name(nr: i64) -> Option<&'static str> {
    let trapped = TRAPPED.iter().map(|&(name, n)| (name, n));
    let opens = OPENS.iter().map(|&(name, n, _)| (name, n));
    trapped.chain(opens).find(|&(_, n)| n == nr).map(|(name, _)| name)
}

/// Which of the trial's files a call touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    Database,
    Journal,
    Wal,
    Shm,
    Acks,
    /// The fake provider's log of a child that sends (cell 5): a send is a
    /// kill point, so a sweep visits the instants before and after it.
    Transport,
    /// Any other file directly in the store's folder: the store's too (a
    /// recovery that reads a marker beside its database must see it), so
    /// its calls are kill points and its bytes part of every state.
    Other(Sidecar),
}

/// The name of a file of the store's folder that is none of the trial's
/// known files, interned so that a [`FileKind`] stays `Copy`: the names a
/// store uses are few and the same in every trial, so the table stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sidecar(u32);

impl Sidecar {
    /// The sidecar named `name` (a file name, no folder).
    pub fn named(name: &str) -> Sidecar {
        let mut names = sidecar_names();
        let at = names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(Box::leak(name.to_owned().into_boxed_str()));
            names.len() - 1
        });
        Sidecar(at as u32)
    }

    /// Its file name.
    pub fn name(self) -> &'static str {
        sidecar_names().get(self.0 as usize).copied().unwrap_or("?")
    }
}

impl FileKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Database => "database",
            FileKind::Journal => "journal",
            FileKind::Wal => "wal",
            FileKind::Shm => "shm",
            FileKind::Acks => "acks",
            FileKind::Transport => "transport",
            FileKind::Other(s) => s.name(),
        }
    }

    /// Whether it is a wal-index: the database's `-shm`, or another
    /// database's in the folder (an `ATTACH`ed one's, a sidecar named
    /// `*-shm`). SQLite rebuilds a wal-index from the WAL whenever the
    /// first connection opens it, so no recovery reads one: it is no part
    /// of a crash state, and no loss of its bytes or names is a loss.
    pub fn is_index(self) -> bool {
        match self {
            FileKind::Shm => true,
            FileKind::Other(s) => is_index_name(s.name()),
            _ => false,
        }
    }
}

/// Whether a file of the store's folder named `name` is a wal-index.
pub fn is_index_name(name: &str) -> bool {
    name.ends_with("-shm")
}

fn sidecar_names() -> std::sync::MutexGuard<'static, Vec<&'static str>> {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The files whose calls count as kill points, and the trial's folder
/// (whose `fsync` makes their names durable).
#[derive(Clone, Debug)]
pub struct Targets {
    files: Vec<(PathBuf, FileKind)>,
    dir: Option<PathBuf>,
}

impl Targets {
    pub fn new(db: &Path, acks: &Path) -> Targets {
        let sib = crate::dbfiles::sibling;
        let files = vec![
            (db.to_path_buf(), FileKind::Database),
            (sib(db, "-journal"), FileKind::Journal),
            (sib(db, "-wal"), FileKind::Wal),
            (sib(db, "-shm"), FileKind::Shm),
            (acks.to_path_buf(), FileKind::Acks),
        ];
        Targets { files, dir: db.parent().map(Path::to_path_buf) }
    }

    /// Whether `path` is the trial's folder.
    pub fn is_dir(&self, path: &Path) -> bool {
        self.dir.as_deref() == Some(path)
    }

    /// These targets and `path`, as a file of `kind`.
    pub fn with(mut self, path: &Path, kind: FileKind) -> Targets {
        self.files.push((path.to_path_buf(), kind));
        self
    }

    /// The kind of `path`; a relative path is matched on its file name (the
    /// trial's folder is private, so names are unique within it).
    /// Any other file directly in the folder (not in a folder below it,
    /// such as the config home) is the store's: [`FileKind::Other`].
    pub fn kind(&self, path: &Path) -> Option<FileKind> {
        let by_name = path.is_relative();
        let known =
            self.files.iter().find(|(p, _)| if by_name { p.file_name() == path.file_name() } else { p == path });
        known.map(|f| f.1).or_else(|| self.sidecar(path))
    }

    fn sidecar(&self, path: &Path) -> Option<FileKind> {
        let beside = path.is_absolute() && path.parent() == self.dir.as_deref();
        let name = path.file_name()?.to_str()?;
        (beside && !crate::trialdir::is_harness_file(name)).then(|| FileKind::Other(Sidecar::named(name)))
    }
}

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

pub(crate) fn fd_kind(pid: u32, targets: &Targets, fd: u64) -> Option<FileKind> {
    targets.kind(&fd_path(pid, fd)?)
}

/// The path an open descriptor of the stopped child names.
pub(crate) fn fd_path(pid: u32, fd: u64) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/fd/{}", fd as i32)).ok()
}

fn path_kind(pid: u32, targets: &Targets, addrs: &[u64]) -> Option<FileKind> {
    addrs.iter().find_map(|&a| read_path(pid, a).and_then(|p| targets.kind(&p)))
}

/// The absolute path an open of `pid` creates or truncates (`O_CREAT` or
/// `O_TRUNC`), for [`super::outside`]; `None` for any other call.
fn created(pid: u32, nr: i64, args: [u64; 6]) -> Option<PathBuf> {
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

/// Reads a NUL-terminated path from the stopped child's memory, a page at
/// most at a time (a read may not cross into an unmapped page).
pub(crate) fn read_path(pid: u32, addr: u64) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    const PAGE: u64 = 4096;
    let mut bytes = Vec::new();
    let mut at = addr;
    while bytes.len() < libc::PATH_MAX as usize {
        let mut chunk = vec![0u8; (PAGE - at % PAGE) as usize];
        let local = libc::iovec { iov_base: chunk.as_mut_ptr().cast(), iov_len: chunk.len() };
        let remote = libc::iovec { iov_base: at as *mut libc::c_void, iov_len: chunk.len() };
        // SAFETY: reads into our own buffer of the stated length.
        let n = unsafe { libc::process_vm_readv(pid as i32, &local, 1, &remote, 1, 0) };
        if n <= 0 {
            return None;
        }
        chunk.truncate(n as usize);
        if let Some(end) = chunk.iter().position(|&b| b == 0) {
            bytes.extend_from_slice(&chunk[..end]);
            return Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)));
        }
        bytes.extend_from_slice(&chunk);
        at += n as u64;
    }
    None
}

/// What the tracer is after.
#[derive(Clone, Copy, Debug)]
pub enum Goal {
    /// Kill at the Nth counted point.
    KillAt(u64),
    /// Count the points until `acks` acks were written, and one more.
    Census { acks: u64 },
    /// Count every point until the child ends on its own.
    ToEnd,
    /// Change the Nth counted call as [`Injected`] says (make it fail
    /// without running, [`Traced::fail`]), and count on until the child
    /// ends on its own: `Driven::Exited` with `counted` of at least N if
    /// the injection was made.
    InjectAt(u64, Injected),
    /// Kill at the first counted call its asker says ([`drive_asking`]):
    /// a point that no ordinal names, such as where a run that does not
    /// make the same calls twice reaches a recorded fire's state again.
    /// Under [`drive`] or [`drive_observed`], which ask nothing, the child
    /// runs to its end.
    Asked,
}

/// What the tracer does to a call it injects into, at its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The call does not run and returns `-errno` (`crate::harness::Traced::fail`).
    Failed(nix::errno::Errno),
    /// A single-buffer write (`write`, `pwrite64`) of two or more bytes
    /// writes only its first [`short_count`] and returns that count
    /// (`crate::harness::Traced::shorten`): the child runs on with a short
    /// write, as write(2) may return one.
    Short,
}

/// How many of a write's `len` bytes a short write keeps: the first half,
/// at least one and never all of two or more.
pub fn short_count(len: u64) -> u64 {
    len / 2
}

impl Injected {
    /// Whether the call returned an error: an operation in flight then
    /// must not be acknowledged.
    pub fn is_error(self) -> bool {
        matches!(self, Injected::Failed(_))
    }

    /// What the call returned, as a finding says it: `failed with EIO`.
    pub fn returned(self) -> String {
        match self {
            Injected::Failed(errno) => format!("failed with {errno:?}"),
            Injected::Short => {
                "was cut short to those bytes, the first half of its count, and returned that count".into()
            }
        }
    }

    /// What became of the call, for a fire's evidence note.
    pub fn note(self) -> String {
        match self {
            Injected::Failed(errno) => format!("the call never ran: it returned -{errno:?} to the child"),
            Injected::Short => "the call ran on the first half of its bytes and returned that short count".into(),
        }
    }
}

/// How a traced run ended.
#[derive(Debug)]
pub enum Driven {
    /// The child is stopped at `point`, which has not run.
    At(Point),
    /// The child ended on its own after `counted` points.
    Exited { exit: crate::harness::Exit, counted: u64 },
}

/// Drives `child` to its goal, resuming it at every trapped call that is not
/// the point sought.
pub fn drive(child: &mut Traced, targets: &Targets, goal: Goal) -> Result<Driven, TraceError> {
    drive_observed(child, targets, goal, &mut |_, _, _, _| {})
}

/// What a recording is shown of each trapped call, before the call runs:
/// the stopped process, the call's number and arguments, and its kill point
/// if it is one (numbered).
pub type Observer<'a> = dyn FnMut(u32, i64, [u64; 6], Option<&Point>) + 'a;

/// What [`drive_asking`] shows each trapped call, as [`Observer`]; its
/// answer, for a kill point, is whether to kill there.
pub type Asker<'a> = dyn FnMut(u32, i64, [u64; 6], Option<&Point>) -> bool + 'a;

/// [`drive`], showing every trapped call to `observe` first (the one the
/// child is killed at included).
pub fn drive_observed(
    child: &mut Traced,
    targets: &Targets,
    goal: Goal,
    observe: &mut Observer,
) -> Result<Driven, TraceError> {
    drive_with(child, targets, goal, &mut |pid, nr, args, point| {
        observe(pid, nr, args, point);
        false
    })
}

/// Drives `child` to the first counted call `ask` answers `true` for
/// ([`Goal::Asked`]), showing it every trapped call first; `Driven::At`
/// that call, which has not run, or the child's own end.
pub fn drive_asking(child: &mut Traced, targets: &Targets, ask: &mut Asker) -> Result<Driven, TraceError> {
    drive_with(child, targets, Goal::Asked, ask)
}

fn drive_with(child: &mut Traced, targets: &Targets, goal: Goal, observe: &mut Asker) -> Result<Driven, TraceError> {
    let mut counted = 0;
    let mut ack_writes = 0;
    let mut census_end = None;
    super::outside::traced();
    loop {
        let (nr, args) = match child.next_syscall()? {
            TraceEvent::Exited(exit) => return Ok(Driven::Exited { exit, counted }),
            TraceEvent::Syscall { nr, args } => (nr, args),
        };
        let pid = child.stopped_pid();
        if let (Some(folder), Some(path)) = (targets.dir.as_deref(), created(pid, nr, args)) {
            super::outside::keep(path, folder);
        }
        let point = classify(pid, targets, nr, args).map(|mut p| {
            counted += 1;
            p.ordinal = Ordinal(counted);
            p
        });
        let asked = observe(pid, nr, args, point.as_ref());
        if let (Some(_), Goal::InjectAt(n, injected)) = (&point, goal)
            && counted == n
        {
            match injected {
                Injected::Failed(errno) => child.fail(errno)?,
                // write and pwrite64 both take their count third.
                Injected::Short => child.shorten(short_count(args[2]))?,
            }
            continue;
        }
        if let Some(p) = point {
            let at = match goal {
                Goal::KillAt(n) => counted == n,
                Goal::Census { acks } => {
                    if p.file == Some(FileKind::Acks) && p.syscall.name().contains("write") {
                        ack_writes += 1;
                    }
                    // The ready record is the first write on the ack journal.
                    if census_end.is_none() && ack_writes > acks {
                        census_end = Some(counted);
                    }
                    census_end.is_some_and(|m| counted == m + 1)
                }
                Goal::Asked => asked,
                Goal::ToEnd | Goal::InjectAt(..) => false,
            };
            if at {
                return Ok(Driven::At(p));
            }
        }
        child.resume()?;
    }
}

/// Where [`drive_until`] left the child.
#[derive(Debug)]
pub enum Halted {
    /// Stopped at the entry of a trapped call `ask` chose (a kill point or
    /// not: a lock call), which has not run; `counted` points passed, that
    /// call included if it is one.
    At {
        counted: u64,
    },
    Exited {
        exit: crate::harness::Exit,
        counted: u64,
    },
}

/// Drives `child` to the first trapped call `ask` answers `true` for,
/// whether or not it is a kill point (a controlled schedule holds a process
/// at a lock call, or just after one), counting kill points as every drive
/// does: a lock call is never one, so their numbers stay a sweep's.
pub fn drive_until(child: &mut Traced, targets: &Targets, ask: &mut Asker) -> Result<Halted, TraceError> {
    let mut counted = 0;
    super::outside::traced();
    loop {
        let (nr, args) = match child.next_syscall()? {
            TraceEvent::Exited(exit) => return Ok(Halted::Exited { exit, counted }),
            TraceEvent::Syscall { nr, args } => (nr, args),
        };
        let pid = child.stopped_pid();
        if let (Some(folder), Some(path)) = (targets.dir.as_deref(), created(pid, nr, args)) {
            super::outside::keep(path, folder);
        }
        let point = classify(pid, targets, nr, args).map(|mut p| {
            counted += 1;
            p.ordinal = Ordinal(counted);
            p
        });
        if ask(pid, nr, args, point.as_ref()) {
            return Ok(Halted::At { counted });
        }
        child.resume()?;
    }
}

/// The points a sweep visits: `only` if given; else `sample` of the
/// `candidates` (every point of the workload, or the ones its census
/// chose) drawn with `seed` (in order); else every candidate.
pub fn sweep_points(candidates: Vec<u64>, only: Option<u64>, sample: Option<u32>, seed: u64) -> Vec<u64> {
    if let Some(n) = only {
        return vec![n];
    }
    let mut all = candidates;
    if let Some(k) = sample.filter(|&k| (k as usize) < all.len()) {
        fastrand::Rng::with_seed(seed).shuffle(&mut all);
        all.truncate(k as usize);
        all.sort_unstable();
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_match_the_store_files_and_the_acks() {
        let t = Targets::new(Path::new("/t/store.db"), Path::new("/t/acks.ndjson"));
        assert_eq!(t.kind(Path::new("/t/store.db-wal")), Some(FileKind::Wal));
        assert_eq!(t.kind(Path::new("/t/store.db-journal")), Some(FileKind::Journal));
        assert_eq!(t.kind(Path::new("/t/acks.ndjson")), Some(FileKind::Acks));
        assert_eq!(t.kind(Path::new("store.db")), Some(FileKind::Database));
        assert_eq!(t.kind(Path::new("/other/store.db")), None);
        assert_eq!(t.kind(Path::new("/t/child.stderr")), None, "the child's stderr is not the store's");
        assert_eq!(t.kind(Path::new("/t/home/config.toml")), None, "a folder below is not the store's");
        let marker = t.kind(Path::new("/t/store.db.dirty")).unwrap();
        assert_eq!((marker, marker.as_str()), (FileKind::Other(Sidecar::named("store.db.dirty")), "store.db.dirty"));
        let t = t.with(Path::new("/t/transport.ndjson"), FileKind::Transport);
        assert_eq!(t.kind(Path::new("/t/transport.ndjson")), Some(FileKind::Transport));
        assert_eq!(t.kind(Path::new("/t/acks.ndjson")), Some(FileKind::Acks));
    }

    #[test]
    fn sampled_points_are_seeded_sorted_and_within_range() {
        let a = sweep_points((1..=100).collect(), None, Some(10), 7);
        assert_eq!(a, sweep_points((1..=100).collect(), None, Some(10), 7));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|&p| (1..=100).contains(&p)));
        assert_eq!(sweep_points(vec![1, 2, 3], None, Some(10), 7), [1, 2, 3]);
        assert_eq!(sweep_points(vec![1, 2, 3], Some(9), None, 7), [9]);
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn traps_is_the_filters_test() {
        let with = |flags: libc::c_int| [0, 0, flags as u64, 0, 0, 0];
        assert!(traps(libc::SYS_write, &[0; 6]));
        assert!(traps(libc::SYS_renameat2, &[0; 6]));
        assert!(!traps(libc::SYS_read, &[0; 6]));
        assert!(traps(libc::SYS_openat, &with(libc::O_WRONLY | libc::O_CREAT)));
        assert!(traps(libc::SYS_openat, &with(libc::O_RDWR | libc::O_TRUNC)));
        assert!(!traps(libc::SYS_openat, &with(libc::O_RDWR | libc::O_CLOEXEC)));
        // Only the low 32 bits are the flags, as the filter reads them.
        assert!(!traps(libc::SYS_openat, &[0, 0, (libc::O_CREAT as u64) << 32, 0, 0, 0]));
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_filter_compiles() {
        assert!(filter().unwrap().len() > TRAPPED.len());
        let locks = lock_trap_set().unwrap();
        assert!(locks.filter.len() > filter().unwrap().len(), "the lock filter adds fcntl's rules");
    }

    /// The lock filter traps what the plain one does, and fcntls that set
    /// a lock; the plain one never a lock call, so a sweep's child never
    /// stops at one.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn only_the_lock_filter_traps_lock_calls() {
        let setlk = [3, libc::F_SETLKW as u64, 0, 0, 0, 0];
        assert!(traps_with_locks(libc::SYS_fcntl, &setlk) && !traps(libc::SYS_fcntl, &setlk));
        assert!(!traps_with_locks(libc::SYS_fcntl, &[3, libc::F_SETFD as u64, 0, 0, 0, 0]));
        assert!(traps_with_locks(libc::SYS_write, &[0; 6]));
        let at = |nr| classify(std::process::id(), &Targets::new(Path::new("/t/s.db"), Path::new("/t/a")), nr, setlk);
        assert_eq!(at(libc::SYS_fcntl), None, "a lock call is never a kill point");
    }
}
