//! A run's fork server as the launcher keeps it (docs/PROTOCOL.md §9, "A
//! server that fails"): the server every operation is forked through while
//! it lives; one that ended is started again, once; when the second one
//! ends too (or cannot start), every later operation is exec'd. One that
//! does not answer a request in time is retired: that operation and every
//! later one are exec'd. A server's end costs the run its speed, never its
//! verdicts: what happened is kept as notes for the run's report.
//!
//! Crash model: a server that ends takes the processes it forked with it
//! (their parent-death signal); those operations end by
//! [`super::Exit::ServerLost`], an error that names the server's end. Only
//! operations asked for after it are served by the next server or exec'd.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::forkserver::ForkServer;
use super::forkwire::ForkError;
use super::{ChildCommand, Interrupt};

/// How many times a server that ended is started again before the run
/// execs: once. A server that ends twice will end again.
pub(super) const RESTARTS: u32 = 1;

/// The fork server of a run, replaced once if it ends.
#[derive(Debug)]
pub(super) struct Served {
    child: ChildCommand,
    stderr: PathBuf,
    deadline: Duration,
    /// When the first server started: a note says when each end was seen.
    began: Instant,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The server to fork through; `None` once the run execs.
    server: Option<Arc<ForkServer>>,
    restarts: u32,
    /// What happened to the servers, in order, for the report.
    notes: Vec<String>,
    /// The note of the server retired for not answering, if one was.
    retired: Option<String>,
}

impl Served {
    /// Starts the first server (stderr to `stderr`, its line within
    /// `deadline`, unless `interrupt` is raised first).
    pub(super) fn start(
        child: &ChildCommand,
        stderr: &Path,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Served, ForkError> {
        let server = ForkServer::start(child, stderr, deadline, interrupt)?;
        let state = State { server: Some(server), restarts: 0, notes: vec![], retired: None };
        let (child, stderr, began) = (child.clone(), stderr.to_path_buf(), Instant::now());
        Ok(Served { child, stderr, deadline, began, state: Mutex::new(state) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The server to fork through: the running one, a new one in place of
    /// one that ended (up to [`RESTARTS`] times, its start's wait given up
    /// if `interrupt` is raised), or `None`: exec.
    pub(super) fn server(&self, interrupt: &Interrupt) -> Option<Arc<ForkServer>> {
        let mut st = self.lock();
        let current = st.server.clone()?;
        let Some(why) = current.ended() else { return Some(current) };
        st.server = None;
        let ended = self.end_of(&current, &why);
        if st.restarts >= RESTARTS {
            st.notes.push(format!("{ended}; it had been restarted once: every later operation was exec'd"));
            return None;
        }
        st.restarts += 1;
        let stderr = self.stderr.with_extension(format!("restart-{}.stderr", st.restarts));
        match ForkServer::start(&self.child, &stderr, self.deadline, interrupt) {
            Ok(server) => {
                st.notes.push(format!("{ended}; restarted as process {}", server.pid()));
                st.server = Some(server.clone());
                Some(server)
            }
            Err(e) => {
                st.notes.push(format!("{ended}; its restart failed ({e}): every later operation was exec'd"));
                None
            }
        }
    }

    /// Stops forking through `server`, which did not answer a request in
    /// time (`why`): the run execs from now on, and a note says so. Its
    /// forks in flight keep it until they end; then it is closed. A server
    /// already replaced is left as it is.
    pub(super) fn retire(&self, server: &Arc<ForkServer>, why: &ForkError) {
        let mut st = self.lock();
        if !st.server.as_ref().is_some_and(|s| Arc::ptr_eq(s, server)) {
            return;
        }
        st.server = None;
        let note = format!(
            "process {} did not answer in time (seen {:.1}s after the first server started): {why}; that \
             operation and every later one were exec'd",
            server.pid(),
            self.began.elapsed().as_secs_f64()
        );
        st.notes.push(note.clone());
        st.retired = Some(note);
    }

    /// Why the run's server was retired for not answering, if it was.
    pub(super) fn retired(&self) -> Option<String> {
        self.lock().retired.clone()
    }

    /// The running server's pid; `None` once the run execs.
    pub(super) fn pid(&self) -> Option<u32> {
        self.lock().server.as_ref().map(|s| s.pid())
    }

    /// How many of the run's servers have ended so far, the running one's
    /// end counted as soon as it is known (before any operation asks for
    /// the next server): what a result compares before and after its work
    /// to know whether work of its was in flight when a server died.
    pub(super) fn ends(&self) -> usize {
        let st = self.lock();
        // One note per server that ended (restarted, failed to restart, or the last).
        st.notes.len() + st.server.as_ref().map_or(0, |s| usize::from(s.ended().is_some()))
    }

    /// What the last server that ended said of its end: the running one's,
    /// once it ended, else the last note; `None` while none ended.
    pub(super) fn last_end(&self) -> Option<String> {
        let st = self.lock();
        let current = st.server.as_ref().and_then(|s| s.ended().map(|why| self.end_of(s, &why)));
        current.or_else(|| st.notes.last().cloned())
    }

    /// A server's end as a note says it: its pid, when it was seen (so that
    /// a reader can tell which results ran across it), why, its stderr.
    fn end_of(&self, server: &ForkServer, why: &str) -> String {
        let seen = format!(
            "process {} ended (seen {:.1}s after the first server started)",
            server.pid(),
            self.began.elapsed().as_secs_f64()
        );
        match server.stderr_tail() {
            tail if tail.trim().is_empty() => format!("{seen}: {why}"),
            tail => format!("{seen}: {why}: {tail}"),
        }
    }

    /// What happened to the run's servers, in order: nothing for a server
    /// that served the whole run.
    pub(super) fn notes(&self) -> Vec<String> {
        self.lock().notes.clone()
    }
}
