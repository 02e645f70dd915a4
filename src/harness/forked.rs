//! A process a fork server forked, as the driver holds it: its pid, and
//! its end as the server reports it. The server keeps a forked process's
//! exit line only while such a handle lives (a [`super::Running`] or a
//! [`super::Traced`] holds it), so that nothing piles up for processes
//! nobody waits for.

use std::sync::Arc;
use std::time::Instant;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::Exit;
use super::forkserver::ForkServer;

/// A process the server forked, watched (its exit line kept) for as long
/// as this handle lives.
#[derive(Debug)]
pub(super) struct Forked {
    server: Arc<ForkServer>,
    pid: Pid,
}

impl Forked {
    pub(super) fn new(server: Arc<ForkServer>, pid: Pid) -> Forked {
        Forked { server, pid }
    }

    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    pub(super) fn server(&self) -> &ForkServer {
        &self.server
    }

    /// Its end, if the server reported it (or is gone: [`Exit::ServerLost`]).
    pub(super) fn try_exit(&self) -> Option<Exit> {
        self.server.exit_of(self.pid)
    }

    /// Waits for its end until `until`.
    pub(super) fn wait_exit(&self, until: Instant) -> Option<Exit> {
        self.server.wait_exit(self.pid, until)
    }

    /// Kills a process that will never run its operation; the server reaps it.
    pub(super) fn discard(self) {
        let _ = killpg(self.pid, Signal::SIGKILL);
        let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
    }
}

impl Drop for Forked {
    fn drop(&mut self) {
        self.server.unwatch(self.pid);
    }
}
