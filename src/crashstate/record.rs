//! Recording a traced child: at the entry of each trapped call, what the
//! call is about to do to the trial's files, read from the stopped child
//! (its buffers with `process_vm_readv`, a plain `write`'s offset from
//! `/proc/PID/fdinfo`), logged in order ([`super::Log`]).
//!
//! Crash model: the same as [`crate::kill::syscall`]: the child is stopped at each
//! call's entry, so what the call will write is in its memory and nothing of
//! it has reached the file yet. The log is checked against the disk after
//! the run (the self-check of `crate::pipeline::workload::recorded`): a child that
//! writes through `mmap`, or whose calls end short, disagrees there.

use super::{At, Effect, Files, Log};
use crate::harness::{TraceError, Traced};
use crate::kill::Ordinal;
use crate::kill::inject::Injected;
use crate::kill::syscall::short_count;
use crate::kill::syscall::{
    Asker, Driven, FileKind, Goal, Observer, Point, Targets, drive_asking, drive_observed, fd_path, read_path,
    syscall_name,
};

/// `pwritev2`'s flag for a write at the end of the file.
const RWF_APPEND: u64 = 0x10;

/// Drives `child` to `goal` as [`crate::kill::syscall::drive`] does, logging every
/// trapped call on the trial's files (and the folder's `fsync`). Under
/// `Goal::InjectAt(n, ..)` point n's call is logged as it was changed: a
/// failed call as [`Effect::Failed`] (it never runs, so no model may apply
/// it), a write cut short as the bytes it wrote.
pub fn record(child: &mut Traced, targets: &Targets, goal: Goal) -> Result<(Driven, Log), TraceError> {
    record_seeing(child, targets, goal, &mut |_| ())
}

/// [`record`], calling `see` at each counted call's stop before it is
/// logged: what the stopped child left beside the logged files (a race's
/// `-shm`, [`super::walindex`]) is read there.
pub fn record_seeing(
    child: &mut Traced,
    targets: &Targets,
    goal: Goal,
    see: &mut dyn FnMut(&Point),
) -> Result<(Driven, Log), TraceError> {
    let mut log = Log::default();
    let injecting = match goal {
        Goal::InjectAt(n, injected) => Some((n, injected)),
        _ => None,
    };
    let mut observe = |pid: u32, nr: i64, args: [u64; 6], point: Option<&crate::kill::syscall::Point>| {
        point.inspect(|p| see(p));
        if let Some(effect) = observe(pid, targets, nr, args, point.and_then(|p| p.file)) {
            let effect = match (injecting, point) {
                (Some((n, injected)), Some(p)) if p.ordinal == Ordinal(n) => changed(effect, injected),
                _ => effect,
            };
            log.push(point.cloned(), effect);
        }
    };
    let driven = drive_observed(child, targets, goal, &mut observe as &mut Observer)?;
    if matches!(driven, Driven::At(_)) {
        log.killed_at_last();
    }
    Ok((driven, log))
}

/// Drives `child` as [`record`] does, keeping the files the calls so far
/// left (the process-crash model, [`Files`]), and kills it at the first
/// counted call for which `ask`, shown those files (the call not yet run)
/// and the call, answers `true` ([`Goal::Asked`]): a kill placed by the
/// state a run reached, not by an ordinal.
pub fn record_asking(
    child: &mut Traced,
    targets: &Targets,
    ask: &mut dyn FnMut(&Files, &Point) -> bool,
) -> Result<(Driven, Log), TraceError> {
    let mut log = Log::default();
    let mut files = Files::default();
    let mut asked = |pid: u32, nr: i64, args: [u64; 6], point: Option<&Point>| {
        let kill = point.is_some_and(|p| ask(&files, p));
        if let Some(effect) = observe(pid, targets, nr, args, point.and_then(|p| p.file)) {
            files.apply(&effect);
            log.push(point.cloned(), effect);
        }
        kill
    };
    let driven = drive_asking(child, targets, &mut asked as &mut Asker)?;
    if matches!(driven, Driven::At(_)) {
        log.killed_at_last();
    }
    Ok((driven, log))
}

/// What a call changed by an injection does to the files: a failed one
/// nothing; a write cut short its first bytes only.
fn changed(effect: Effect, injected: Injected) -> Effect {
    match (injected, effect) {
        (Injected::Failed(errno), effect) => Effect::Failed { effect: Box::new(effect), errno },
        (Injected::Short, Effect::Write { file, at, mut data }) => {
            data.truncate(short_count(data.len() as u64) as usize);
            Effect::Write { file, at, data }
        }
        (Injected::Short, other) => other,
    }
}

/// What a trapped call is about to do, if it touches the trial's files.
/// `counted` is the file of a kill point (every kill point gets an effect,
/// an unreadable one included, so that the log numbers them all).
fn observe(pid: u32, targets: &Targets, nr: i64, a: [u64; 6], counted: Option<FileKind>) -> Option<Effect> {
    let name = syscall_name(nr)?;
    match (name, counted) {
        ("openat", _) => opened(pid, targets, a[1], a[2]),
        ("open", _) => opened(pid, targets, a[0], a[1]),
        ("creat", _) => opened(pid, targets, a[0], (libc::O_CREAT | libc::O_TRUNC) as u64),
        ("fsync" | "fdatasync", None) => fd_path(pid, a[0]).filter(|p| targets.is_dir(p)).map(|_| Effect::SyncDir),
        (_, None) => None,
        (_, Some(file)) => Some(counted_effect(pid, targets, name, a, file)),
    }
}

/// The effect of a kill point's call on `file`.
fn counted_effect(pid: u32, targets: &Targets, name: &'static str, a: [u64; 6], file: FileKind) -> Effect {
    let unread = Effect::Unread { syscall: name };
    let write = |at: Option<At>, data: Option<Vec<u8>>| match (at, data) {
        (Some(at), Some(data)) => Effect::Write { file, at, data },
        _ => unread.clone(),
    };
    match name {
        "write" => write(position(pid, a[0]), read_mem(pid, a[1], a[2])),
        "pwrite64" => write(Some(At::Offset(a[3])), read_mem(pid, a[1], a[2])),
        "writev" => write(position(pid, a[0]), read_iov(pid, a[1], a[2])),
        "pwritev" => write(Some(At::Offset(a[3])), read_iov(pid, a[1], a[2])),
        "pwritev2" => {
            let at = match (a[5] & RWF_APPEND != 0, a[3] as i64) {
                (true, _) => Some(At::End),
                (false, -1) => position(pid, a[0]),
                (false, o) => Some(At::Offset(o as u64)),
            };
            write(at, read_iov(pid, a[1], a[2]))
        }
        "fsync" => Effect::Sync { file, data_only: false },
        "fdatasync" => Effect::Sync { file, data_only: true },
        "ftruncate" => Effect::Truncate { file, len: a[1] },
        "unlink" | "unlinkat" => Effect::Unlink { file },
        "rename" => renamed(pid, targets, a[0], a[1]),
        _ => renamed(pid, targets, a[1], a[3]),
    }
}

/// An open of one of the trial's files that creates or truncates it.
fn opened(pid: u32, targets: &Targets, path: u64, flags: u64) -> Option<Effect> {
    let file = targets.kind(&read_path(pid, path)?)?;
    let flags = flags as libc::c_int;
    let (create, truncate) = (flags & libc::O_CREAT != 0, flags & libc::O_TRUNC != 0);
    (create || truncate).then_some(Effect::Open { file, create, truncate })
}

fn renamed(pid: u32, targets: &Targets, from: u64, to: u64) -> Effect {
    let kind = |addr| read_path(pid, addr).and_then(|p| targets.kind(&p));
    Effect::Rename { from: kind(from), to: kind(to) }
}

/// Where a plain `write` on `fd` lands: the descriptor's position, or the
/// end of the file when it was opened with `O_APPEND`.
fn position(pid: u32, fd: u64) -> Option<At> {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd as i32)).ok()?;
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let flags = u64::from_str_radix(field("flags:")?, 8).ok()?;
    if flags & libc::O_APPEND as u64 != 0 {
        return Some(At::End);
    }
    field("pos:")?.parse().ok().map(At::Offset)
}

/// `len` bytes at `addr` in the stopped child's memory.
fn read_mem(pid: u32, addr: u64, len: u64) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    let mut done = 0;
    while done < buf.len() {
        let local = libc::iovec { iov_base: buf[done..].as_mut_ptr().cast(), iov_len: buf.len() - done };
        let remote = libc::iovec { iov_base: (addr + done as u64) as *mut libc::c_void, iov_len: buf.len() - done };
        // SAFETY: reads into our own buffer, within its length.
        let n = unsafe { libc::process_vm_readv(pid as i32, &local, 1, &remote, 1, 0) };
        if n <= 0 {
            return None;
        }
        done += n as usize;
    }
    Some(buf)
}

/// The bytes of an iovec array of `count` entries at `addr`, in order.
fn read_iov(pid: u32, addr: u64, count: u64) -> Option<Vec<u8>> {
    const ENTRY: u64 = std::mem::size_of::<libc::iovec>() as u64;
    let table = read_mem(pid, addr, count * ENTRY)?;
    let mut data = Vec::new();
    for entry in table.chunks_exact(ENTRY as usize) {
        let word = |i: usize| u64::from_ne_bytes(entry[i..i + 8].try_into().expect("8 bytes"));
        data.extend(read_mem(pid, word(0), word(8))?);
    }
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_memory_and_a_descriptors_position_are_read() {
        let pid = std::process::id();
        let bytes = b"hello, tracer".to_vec();
        assert_eq!(read_mem(pid, bytes.as_ptr() as u64, bytes.len() as u64), Some(bytes.clone()));
        let (a, b) = (b"ab".to_vec(), b"cde".to_vec());
        let iov = [
            libc::iovec { iov_base: a.as_ptr() as *mut _, iov_len: 2 },
            libc::iovec { iov_base: b.as_ptr() as *mut _, iov_len: 3 },
        ];
        assert_eq!(read_iov(pid, iov.as_ptr() as u64, 2), Some(b"abcde".to_vec()));
        let dir = tempfile::tempdir().unwrap();
        use std::io::Write;
        let mut plain = std::fs::File::create(dir.path().join("f")).unwrap();
        plain.write_all(b"1234").unwrap();
        let appending = std::fs::OpenOptions::new().append(true).open(dir.path().join("f")).unwrap();
        use std::os::fd::AsRawFd;
        assert_eq!(position(pid, plain.as_raw_fd() as u64), Some(At::Offset(4)));
        assert_eq!(position(pid, appending.as_raw_fd() as u64), Some(At::End));
    }

    /// The call fault injection fails is logged as failed, never as if it
    /// ran: replayed, the log is the disk.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_call_made_to_fail_is_logged_as_failed_and_the_log_replays_to_the_disk() {
        use nix::errno::Errno;
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "printf a > store.db; sync store.db; printf b >> store.db; printf c >> store.db"]);
        cmd.current_dir(&dir);
        let filter = crate::kill::syscall::filter().unwrap();
        let mut child = match Traced::spawn(
            cmd,
            Some(&dir.join(crate::trialdir::STDERR)),
            filter,
            std::time::Duration::from_secs(20),
            &crate::harness::Interrupt::new(),
        ) {
            Err(TraceError::NotPermitted(why)) => {
                return crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
            }
            other => other.unwrap(),
        };
        let targets = Targets::new(&dir.join("store.db"), &dir.join("acks.ndjson"));
        let (driven, log) = record(&mut child, &targets, Goal::InjectAt(3, Injected::Failed(Errno::ENOSPC))).unwrap();
        assert!(matches!(driven, Driven::Exited { counted: 4, .. }), "{driven:?} {:?}", log.points);
        let failed: Vec<&Effect> =
            log.ran().iter().map(|e| &e.effect).filter(|e| matches!(e, Effect::Failed { .. })).collect();
        assert_eq!(failed.len(), 1, "{:?}", log.ran());
        assert_eq!(failed[0].describe(), "append of 1 byte to the database (made to fail with ENOSPC)");
        assert_eq!(std::fs::read(dir.join("store.db")).unwrap(), b"ac");
        let names = super::super::Names::new(&dir.join("store.db"), &dir.join("acks.ndjson"), &dir.join("t"));
        assert_eq!(super::super::Files::after(log.ran()).differs_from_disk(&dir, &names), None);
    }

    /// A script in a folder of its own, traced: `None` where tracing is refused.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn traced_script(script: &str) -> Option<(Traced, Targets, tempfile::TempDir)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]).current_dir(&path);
        let filter = crate::kill::syscall::filter().unwrap();
        let child = match Traced::spawn(
            cmd,
            Some(&path.join(crate::trialdir::STDERR)),
            filter,
            std::time::Duration::from_secs(20),
            &crate::harness::Interrupt::new(),
        ) {
            Err(TraceError::NotPermitted(why)) => {
                crate::testskip::skip_or_fail(crate::testskip::Need::Tracing, why);
                return None;
            }
            other => other.unwrap(),
        };
        Some((child, Targets::new(&path.join("store.db"), &path.join("acks.ndjson")), dir))
    }

    /// A recorded state is found again in runs whose calls differ: one more
    /// call first (the same files, at another ordinal: by state), or other
    /// bytes in the store (by the recorded call, once the same acks were
    /// written); the child is killed there, before the call runs.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn a_kill_asked_for_lands_where_a_run_that_differs_reaches_the_recorded_state() {
        use crate::crashstate::likeness::{Likeness, Sought};
        let run = |first: &str, pid: u32| {
            format!(
                "{first} printf a > store.db; printf '{{\"kind\":\"ready\",\"pid\":{pid}}}\\n' >> acks.ndjson; \
                 printf b >> store.db; printf '{{\"kind\":\"ack\",\"i\":0}}\\n' >> acks.ndjson; printf c >> store.db"
            )
        };
        let Some((mut child, targets, _dir)) = traced_script(&run("", 7)) else { return };
        let (_, log) = record(&mut child, &targets, Goal::ToEnd).unwrap();
        assert_eq!(log.total(), 5, "{:?}", log.points);
        let sought = Sought::new(&Files::after(log.before(5)), &log.point(5));
        for (script, ordinal, how) in [
            (run(": > store.db; sync store.db;", 40417), 6, Likeness::State),
            (run("", 9).replacen("printf b", "printf x", 1), 5, Likeness::Write),
        ] {
            let (mut child, targets, dir) = traced_script(&script).unwrap();
            let mut found = None;
            let (driven, _) = record_asking(&mut child, &targets, &mut |files: &Files, call: &Point| {
                found = sought.like(files, call);
                found.is_some()
            })
            .unwrap();
            assert!(matches!(&driven, Driven::At(p) if p.ordinal == Ordinal(ordinal)), "{script}: {driven:?}");
            assert_eq!(found, Some(how), "{script}");
            assert!(child.kill_and_reap().exit.is_sigkill());
            assert_eq!(std::fs::read(dir.path().join("store.db")).unwrap().len(), 2, "killed before `printf c`");
        }
    }
}
