//! The run's process container: where every child runs, so that nothing a
//! child starts outlives the run, and what a process that escapes its
//! group, or outlives its operation in it, is called.
//!
//! Crash model: the driver kills a child's whole process group, and a
//! process that left the group (`setsid`, a daemon's double fork) is out of
//! that `SIGKILL`'s reach. So every child runs in a PID namespace the run
//! owns: its pid 1 is a tiny init the driver forks from its main thread at
//! start (each spawn enters the namespace, [`spawn`]), which carries the parent-death signal (it fires when the thread
//! that forked it ends: the main thread lives as long as the driver) and
//! reaps orphans. When the driver dies, even by `SIGKILL`, init dies, and
//! the kernel kills every process of the namespace. Where a namespace
//! cannot be made (no `CAP_SYS_ADMIN`), the driver is the subreaper of what
//! its children leave, as before, and the run says so.
//!
//! Inside the namespace a process sees other pids than the driver does:
//! [`own_pid`] is the pid a process says of itself (a ready record's, a
//! warm line's), [`outer_pid`] turns a pid a fork server names back into
//! the driver's. Nothing else compares the two.
//!
//! A child may also get a crash state laid over the folder its files were
//! written in ([`Place`]), in a mount namespace of its own: SQLite's hot
//! journal names its super-journal by absolute path, and a state recovered
//! anywhere else is rolled forward half-committed.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Makes this process the reaper of its orphaned descendants, so that a
/// killed child's own children are reparented to us and can be reaped here,
/// rather than lingering as zombies under an init that may never reap them.
pub fn become_subreaper() {
    // SAFETY: a plain prctl on the calling process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// The environment variable that asks for the fallback (`subreaper`), so
/// that a test can show what a run without a namespace does and says.
pub const CONTAIN_ENV: &str = "CRASHCELLS_CONTAIN";

/// The container in force for this process's children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// A PID namespace whose pid 1 (`init`, in the driver's pids) dies with
    /// the driver; `ns` is the namespace's inode.
    Namespace { init: i32, ns: u64 },
    /// No namespace: the driver is the subreaper of what its children
    /// leave, and kills it as it exits; `why` says why not a namespace.
    Subreaper { why: String },
}

impl Containment {
    /// In a report's words.
    pub fn describe(&self) -> String {
        match self {
            Containment::Namespace { .. } => "a pid namespace (every process of the run dies with the driver)".into(),
            Containment::Subreaper { why } => format!(
                "the driver as subreaper (no pid namespace: {why}; a process that leaves its group outlives a \
                 driver killed by SIGKILL)"
            ),
        }
    }
}

static IN_FORCE: OnceLock<Containment> = OnceLock::new();

/// Makes the run's container, once, from the main thread before any other
/// thread exists (threads started later inherit where their children go):
/// a PID namespace, or the subreaper when the kernel refuses one.
pub fn contain() -> &'static Containment {
    IN_FORCE.get_or_init(|| {
        let made = match std::env::var(CONTAIN_ENV).as_deref() {
            Ok("subreaper") => Err(format!("{CONTAIN_ENV}=subreaper")),
            _ => make_namespace(),
        };
        made.unwrap_or_else(|why| {
            become_subreaper();
            Containment::Subreaper { why }
        })
    })
}

/// The container in force: the subreaper for a process that never asked
/// for a namespace (a library caller, a unit test).
pub fn in_force() -> &'static Containment {
    IN_FORCE.get_or_init(|| {
        become_subreaper();
        Containment::Subreaper { why: "not asked for".into() }
    })
}

/// Unshares the PID namespace for the main thread's children and forks its
/// init; on failure, the main thread's children stay in the driver's own.
fn make_namespace() -> Result<Containment, String> {
    let own: OwnedFd = std::fs::File::open("/proc/self/ns/pid").map_err(|e| format!("/proc/self/ns/pid: {e}"))?.into();
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: a plain syscall on the calling thread.
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
        return Err(format!("unshare(CLONE_NEWPID): {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the child runs only async-signal-safe calls and never returns.
    match unsafe { libc::fork() } {
        0 => init_main(&read, &write),
        -1 => {
            let e = std::io::Error::last_os_error();
            setns(&own).map_err(|e| format!("back to its own pid namespace: {e}"))?;
            Err(format!("forking its init: {e}"))
        }
        init => {
            // The main thread starts threads: its children stay in its own
            // namespace, and each spawn enters the run's ([`spawn`]).
            setns(&own).map_err(|e| format!("back to its own pid namespace: {e}"))?;
            drop(read);
            // Held open until the driver ends: its end is init's signal that
            // the driver died before init's parent-death signal was set.
            std::mem::forget(write);
            let into: OwnedFd = std::fs::File::open(format!("/proc/{init}/ns/pid"))
                .map_err(|e| format!("its init's namespace: {e}"))?
                .into();
            let ns = std::fs::metadata(format!("/proc/{init}/ns/pid")).map_err(|e| format!("its init: {e}"))?.ino();
            let _ = DOORS.set((into, own));
            Ok(Containment::Namespace { init, ns })
        }
    }
}

/// Pid 1 of the run's namespace: dies with the driver (its death signal,
/// or the end of the pipe if the driver died first) and reaps every orphan
/// the namespace's processes leave, until then. Async-signal-safe only: it
/// runs in a fork of the driver.
fn init_main(read: &OwnedFd, write: &OwnedFd) -> ! {
    let r = read.as_raw_fd();
    // SAFETY: prctl, close, poll, sigprocmask, sigtimedwait, waitpid and
    // _exit are async-signal-safe; nothing allocates.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::prctl(libc::PR_SET_NAME, c"crashcells-init".as_ptr());
        for fd in 0..1024 {
            if fd != r && fd != write.as_raw_fd() {
                libc::close(fd);
            }
        }
        libc::close(write.as_raw_fd());
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let second = libc::timespec { tv_sec: 1, tv_nsec: 0 };
        loop {
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            let mut fds = libc::pollfd { fd: r, events: libc::POLLIN, revents: 0 };
            if libc::poll(&mut fds, 1, 0) != 0 {
                libc::_exit(0); // the driver is gone
            }
            libc::sigtimedwait(&chld, std::ptr::null_mut(), &second);
        }
    }
}

/// The namespace's descriptor and the driver's own, held for the run:
/// a spawn enters the one and comes back to the other.
static DOORS: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();

/// Spawns `cmd` in the run's namespace. A thread's children go where its
/// `pid_for_children` says, but a thread whose `pid_for_children` is not
/// its own namespace cannot start a thread (`clone` refuses it with
/// `EINVAL`): so the calling thread enters the namespace for the spawn
/// alone, and comes back.
pub(super) fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let Some((into, back)) = DOORS.get().filter(|_| matches!(in_force(), Containment::Namespace { .. })) else {
        return cmd.spawn();
    };
    setns(into)?;
    let spawned = cmd.spawn();
    // Entering one's own active namespace is always allowed.
    setns(back)?;
    spawned
}

/// Whether the children start in the run's pid namespace.
pub(super) fn namespaced() -> bool {
    matches!(in_force(), Containment::Namespace { .. })
}

/// In a child between fork and exec, in the run's pid namespace: a mount
/// namespace of its own with a `/proc` of that pid namespace. A store reads
/// `/proc/<getpid()>` (a status file's start time, psutil): with the
/// driver's `/proc` that path names another process, since `getpid()` is
/// the namespace's pid. `/` is made private first, so that the new `/proc`
/// never propagates to the driver's mounts. Best effort: where either call
/// is refused the child keeps the driver's `/proc`, as under the subreaper.
/// Async-signal-safe: plain syscalls, nothing allocated.
pub(super) fn mount_own_proc() {
    // SAFETY: unshare and mount with constant C strings; the child is one
    // thread between fork and exec, so its mount namespace is its own.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return;
        }
        let none = std::ptr::null();
        if libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0 {
            return;
        }
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), flags, std::ptr::null());
    }
}

/// A crash state's folder laid over the folder its files were written in,
/// for one child: every absolute name inside the files (SQLite's pointer
/// from a hot journal to its super-journal, a store's own manifest)
/// resolves to the state's files, as after a real crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The folder that holds the state's files.
    pub state: PathBuf,
    /// The folder they were written in, which the child sees them at.
    pub at: PathBuf,
}

impl Place {
    /// The path `path` (inside [`Place::state`]) has for the child.
    pub fn seen(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.state).map_or_else(|_| path.to_path_buf(), |rest| self.at.join(rest))
    }

    /// The path a name the child saw (inside [`Place::at`]) has for the
    /// driver, whose `at` is not covered.
    pub fn real(&self, seen: &Path) -> PathBuf {
        seen.strip_prefix(&self.at).map_or_else(|_| seen.to_path_buf(), |rest| self.state.join(rest))
    }
}

/// In a child between fork and exec: a mount namespace of its own (nested in
/// the one [`mount_own_proc`] made, if it did), `/` private so that nothing
/// propagates to the driver's mounts, then `state` bound over `at`. The
/// names are made before the fork. Async-signal-safe: plain syscalls.
pub(super) fn bind_over(state: &CStr, at: &CStr) -> std::io::Result<()> {
    let none = std::ptr::null();
    // SAFETY: unshare and mount with C strings made before the fork; the
    // child is one thread, so its mount namespace is its own.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0
            || libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0
            || libc::mount(state.as_ptr(), at.as_ptr(), none, libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn setns(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: setns on the calling thread, with a descriptor we hold.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The pid a child's `getppid()` returns while the driver lives: the
/// driver's own, or 0 inside the namespace (its parent is outside it).
pub(super) fn parent_as_seen() -> libc::pid_t {
    match in_force() {
        Containment::Namespace { .. } => 0,
        Containment::Subreaper { .. } => std::process::id() as libc::pid_t,
    }
}

/// The pid process `pid` (the driver's) has in its own namespace: the last
/// of `/proc/PID/status`'s `NSpid`; `pid` itself where there is none.
pub fn own_pid(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    ns_pids(&status).and_then(|p| p.last().copied()).unwrap_or(pid)
}

fn ns_pids(status: &str) -> Option<Vec<u32>> {
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().map(|p| p.parse().ok()).collect()
}

/// The driver's pid of the process `inner` names in the run's namespace,
/// looked for among `parent`'s children first (a fork server's forks), then
/// in all of `/proc`; `inner` itself without a namespace, `None` if no
/// process of the namespace has it.
pub(super) fn outer_pid(inner: i32, parent: Option<u32>) -> Option<i32> {
    let Containment::Namespace { ns, .. } = in_force() else { return Some(inner) };
    let is_it = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let in_ns = std::fs::metadata(format!("/proc/{pid}/ns/pid")).is_ok_and(|m| m.ino() == *ns);
        in_ns && ns_pids(&status).and_then(|p| p.last().copied()) == Some(inner as u32)
    };
    let near = parent.map(children).unwrap_or_default();
    near.into_iter().chain(all_pids()).find(|&p| is_it(p)).map(|p| p as i32)
}

/// The children of `pid`, from each of its threads' `children` list.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let lists: Vec<String> =
        tasks.flatten().map(|t| std::fs::read_to_string(t.path().join("children")).unwrap_or_default()).collect();
    lists.iter().flat_map(|l| l.split_whitespace()).filter_map(|p| p.parse().ok()).collect()
}

fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// The processes whose parent is `parent`, read from `/proc/<pid>/stat`
/// (its fourth field, after the command's closing parenthesis).
pub(super) fn children_of(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            ppid == Some(parent)
        })
        .collect()
}

/// A process that left the session of the driver's children (`setsid`)
/// and was orphaned: out of reach of its group's `SIGKILL`, and named.
static ESCAPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Names and kills every orphan of the run (init's children, or the
/// subreaper's) that left the session its group started in: a daemon, a
/// `setsid` grandchild. Called after each group is reaped, when what the
/// group left has been handed to the reaper.
pub(super) fn sweep() {
    let (reaper, driver_sid) = match in_force() {
        Containment::Namespace { init, .. } => (*init as u32, sid(std::process::id())),
        Containment::Subreaper { .. } => (std::process::id(), sid(std::process::id())),
    };
    let Some(driver_sid) = driver_sid else { return };
    let orphans = match in_force() {
        Containment::Namespace { .. } => children(reaper),
        Containment::Subreaper { .. } => children_of(reaper),
    };
    for pid in orphans {
        let Some(s) = sid(pid) else { continue };
        if s == driver_sid {
            continue;
        }
        let said = format!(
            "process {} (`{}`) left its process group (a new session, {s}) and outlived its operation; killed",
            own_pid(pid),
            command_line(pid)
        );
        let raw = Pid::from_raw(pid as i32);
        let _ = killpg(raw, Signal::SIGKILL);
        let _ = kill(raw, Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(raw, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
        let mut seen = ESCAPED.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.contains(&said) {
            seen.push(said);
        }
    }
}

/// Names every process of group `pgid` still alive (a zombie is not)
/// after its leader, the operation's process, ended (`exit` says how): a
/// wrapper's background job, a worker nobody waited for. It would write on
/// after the operation the driver judges ended, and a later kill of the
/// group is not the crash it stands for. Processes that end within
/// [`OUTLIVE_GRACE`] of it are not named: an exit just behind its parent's
/// is no fault. The caller kills the group.
pub(super) fn outlived(pgid: Pid, exit: &str) {
    let end = std::time::Instant::now() + OUTLIVE_GRACE;
    let mut left = live_members(pgid);
    while !left.is_empty() && std::time::Instant::now() < end {
        std::thread::sleep(super::POLL.max(std::time::Duration::from_millis(5)));
        left = live_members(pgid);
    }
    for pid in left {
        let said = format!(
            "process {} (`{}`) stayed in its operation's group after the operation ended ({exit}) and outlived it; \
             killed",
            own_pid(pid),
            command_line(pid)
        );
        let mut seen = ESCAPED.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.contains(&said) {
            seen.push(said);
        }
    }
}

/// How long a process of an ended operation's group may take to end on
/// its own before it is named as outliving the operation.
const OUTLIVE_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// The processes of group `pgid` that are not zombies, from `/proc/PID/stat`
/// (its third field after the command is the group, its first the state).
fn live_members(pgid: Pid) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(')') else { return false };
            let fields: Vec<&str> = rest.split_whitespace().take(3).collect();
            fields.len() == 3 && fields[0] != "Z" && fields[2].parse::<i32>() == Ok(pgid.as_raw())
        })
        .collect()
}

/// Every process named so far that escaped its group or outlived its
/// operation, in the order seen.
pub fn escaped() -> Vec<String> {
    ESCAPED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The session of `pid`: `/proc/PID/stat`'s sixth field, after the
/// command's closing parenthesis.
fn sid(pid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(3)?.parse().ok()
}

/// A process's command line, its arguments spaced, cut to a line.
fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> =
        raw.split(|&b| b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    let line = words.join(" ");
    if line.chars().count() > 120 { format!("{}…", line.chars().take(120).collect::<String>()) } else { line }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_parent_is_read_from_its_stat() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        assert!(children_of(std::process::id()).contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!children_of(std::process::id()).contains(&child.id()));
    }

    #[test]
    fn a_processes_own_pid_is_the_last_of_its_ns_pids() {
        assert_eq!(ns_pids("Name:\tx\nNSpid:\t4012\t7\n"), Some(vec![4012, 7]));
        assert_eq!(ns_pids("Name:\tx\n"), None);
        assert_eq!(own_pid(std::process::id()), std::process::id());
    }

    #[test]
    fn a_placed_path_is_seen_at_the_folder_and_read_back_from_the_state() {
        let place = Place { state: "/w/b/1/s0".into(), at: "/w/census-x".into() };
        assert_eq!(place.seen(Path::new("/w/b/1/s0/store.db")), Path::new("/w/census-x/store.db"));
        assert_eq!(place.real(Path::new("/w/census-x/store.db.transport")), Path::new("/w/b/1/s0/store.db.transport"));
        assert_eq!(place.seen(Path::new("/elsewhere/x")), Path::new("/elsewhere/x"), "outside: unchanged");
    }

    #[test]
    fn a_session_is_read_from_the_stat() {
        // SAFETY: getsid on ourselves.
        let ours = unsafe { libc::getsid(0) };
        assert_eq!(sid(std::process::id()), Some(ours));
    }

    #[test]
    fn without_a_namespace_a_pid_is_its_own() {
        assert!(matches!(in_force(), Containment::Subreaper { .. }));
        assert_eq!(outer_pid(42, None), Some(42));
        assert_eq!(parent_as_seen(), std::process::id() as libc::pid_t);
    }
}
