//! The reference store's fork server (docs/PROTOCOL.md §9): `crashcells
//! child fork-server` starts once, then forks one process per operation the
//! driver asks for, each running it exactly as `crashcells child <op> ...`
//! would, without the exec: no dynamic loading, no second copy of the
//! driver's page tables, a few hundred microseconds instead of a few
//! milliseconds per process. It is the Python helper's twin
//! (`examples/forkserver/crashcells_forkserver.py`), line for line.
//!
//! Crash model: a forked process is killed with `SIGKILL` like an exec'd
//! child. It must start as fresh as one: its own process group, the
//! parent-death signal (the server is its parent; the server has its own,
//! so a dead driver takes both), no descriptor but its standard streams,
//! the operation's environment, folder and arguments; then it stops itself
//! (`SIGSTOP`) so that the driver can check all that before it runs. The
//! server is single-threaded, so a fork copies nothing half-held.

use std::ffi::OsString;
use std::io::Write;

use serde_json::{Value, json};

/// The word a ready record lists, and the operation that starts the server.
pub use crashcells_protocol::FORK_SERVER;

/// A forked process whose server died before it was set up: not an errno.
const EXIT_ORPHANED: i32 = 255;
/// A forked process that could not be set up (its streams, its folder).
const EXIT_SETUP: i32 = 3;

/// Serves forks until stdin ends; the exit code of the server.
pub fn serve() -> i32 {
    match Server::new().and_then(|s| s.run()) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("crashcells child fork-server: {e}");
            3
        }
    }
}

struct Server {
    pid: libc::pid_t,
    /// SIGCHLD, read as a descriptor (the signal is blocked): the loop
    /// waits on it and on stdin, and reaps when it is readable.
    children: libc::c_int,
}

impl Server {
    fn new() -> std::io::Result<Server> {
        // SAFETY: plain signal-mask and signalfd calls on this single-threaded process.
        let children = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
        };
        if children < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Server { pid: std::process::id() as libc::pid_t, children })
    }

    fn run(&self) -> std::io::Result<()> {
        send(&json!({"kind": FORK_SERVER, "protocol": crashcells_protocol::PROTOCOL, "pid": self.pid}))?;
        let mut pending = Vec::new();
        loop {
            let mut fds = [
                libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: self.children, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: two valid pollfd entries.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[1].revents != 0 {
                self.reap()?;
            }
            if fds[0].revents != 0 {
                let mut buf = [0u8; 65536];
                // SAFETY: reading into a buffer of its stated size.
                let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    return Ok(());
                }
                pending.extend_from_slice(&buf[..n as usize]);
                while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    if !line.trim_ascii().is_empty() {
                        self.handle(&line)?;
                    }
                }
            }
        }
    }

    /// Reports every forked process that ended.
    fn reap(&self) -> std::io::Result<()> {
        let mut info = [0u8; 128];
        // SAFETY: draining the signalfd into a buffer of one siginfo's size.
        while unsafe { libc::read(self.children, info.as_mut_ptr().cast(), info.len()) } > 0 {}
        loop {
            let mut status = 0;
            // SAFETY: waitpid on any child, without blocking.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return Ok(());
            }
            if libc::WIFSIGNALED(status) {
                send(&json!({"kind": "exit", "pid": pid, "signal": libc::WTERMSIG(status)}))?;
            } else if libc::WIFEXITED(status) {
                send(&json!({"kind": "exit", "pid": pid, "code": libc::WEXITSTATUS(status)}))?;
            }
        }
    }

    fn handle(&self, line: &[u8]) -> std::io::Result<()> {
        let request: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                return send(&json!({"kind": "refused", "id": null, "error": format!("unreadable request: {e}")}));
            }
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        if request.get("kind").and_then(Value::as_str) != Some("run") {
            return send(&json!({"kind": "refused", "id": id, "error": "unknown request kind"}));
        }
        // SAFETY: this process is single-threaded; the child only sets itself
        // up (async-signal-safe calls, and allocations no other thread holds
        // a lock of) before it runs the operation as a fresh process would.
        match unsafe { libc::fork() } {
            -1 => send(&json!({"kind": "refused", "id": id, "error": std::io::Error::last_os_error().to_string()})),
            0 => become_operation(&request, self.pid),
            pid => send(&json!({"kind": "forked", "id": id, "pid": pid})),
        }
    }
}

/// The forked process: set up as an exec'd child is, stop for the driver,
/// then run the operation. Never returns.
fn become_operation(request: &Value, server: libc::pid_t) -> ! {
    if let Err(e) = set_up(request, server) {
        eprintln!("crashcells child fork-server: setting up a forked process: {e}");
        // SAFETY: leaving the forked process.
        unsafe { libc::_exit(EXIT_SETUP) }
    }
    // SAFETY: stopping this very process.
    unsafe { libc::kill(libc::getpid(), libc::SIGSTOP) };
    let argv = request.get("argv").and_then(Value::as_array).cloned().unwrap_or_default();
    let args =
        std::iter::once(OsString::from("child")).chain(argv.iter().filter_map(Value::as_str).map(OsString::from));
    let code = crate::main_from(args);
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: leaving the forked process with the operation's exit code.
    unsafe { libc::_exit(code & 0xff) }
}

fn set_up(request: &Value, server: libc::pid_t) -> std::io::Result<()> {
    let check = |r: libc::c_int| if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
    // SAFETY: plain calls on this process: its group, its parent-death
    // signal, its signal mask (as an exec'd process has it), its descriptors.
    unsafe {
        check(libc::setpgid(0, 0))?;
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        // A server that died before the prctl sent no death signal.
        if libc::getppid() != server {
            libc::_exit(EXIT_ORPHANED);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        check(libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()))?;
        close_inherited();
    }
    let text = |key: &str| request.get(key).and_then(Value::as_str);
    onto(0, "/dev/null", libc::O_RDONLY)?;
    let out = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
    onto(1, text("stdout").unwrap_or("/dev/null"), out)?;
    onto(2, text("stderr").unwrap_or("/dev/null"), out)?;
    if let Some(env) = request.get("env").and_then(Value::as_object) {
        for (k, v) in env {
            // SAFETY: the process is single-threaded: nothing reads the
            // environment beside this.
            unsafe { std::env::set_var(k, v.as_str().unwrap_or_default()) };
        }
    }
    if let Some(dir) = text("cwd") {
        std::env::set_current_dir(dir)?;
    }
    Ok(())
}

/// Every descriptor but 0-2 goes: the control pipes, the signalfd.
///
/// # Safety
/// Closes descriptors nothing in this process uses any more.
unsafe fn close_inherited() {
    // SAFETY: close_range(2) on descriptors above 2; a kernel without it
    // (before 5.9) gets the loop.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..1024 {
                libc::close(fd);
            }
        }
    }
}

/// Opens `path` onto descriptor `fd`.
fn onto(fd: libc::c_int, path: &str, flags: libc::c_int) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path).map_err(std::io::Error::other)?;
    // SAFETY: open and dup2 on a path the request names.
    unsafe {
        let opened = libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644);
        if opened < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if opened != fd {
            // dup2 clears O_CLOEXEC on the copy.
            if libc::dup2(opened, fd) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(opened);
        } else {
            libc::fcntl(fd, libc::F_SETFD, 0);
        }
    }
    Ok(())
}

/// One control line on stdout, written whole with write(2): nothing of the
/// server's is ever buffered for a fork to write again.
fn send(line: &Value) -> std::io::Result<()> {
    let mut data = line.to_string().into_bytes();
    data.push(b'\n');
    let mut at = 0;
    while at < data.len() {
        // SAFETY: writing the bytes of `data` from `at` on.
        let n = unsafe { libc::write(1, data[at..].as_ptr().cast(), data.len() - at) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        at += n as usize;
    }
    Ok(())
}
