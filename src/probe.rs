//! The driver's side of the child protocol (docs/PROTOCOL.md): starting a
//! child for one short operation in a private folder, and the preflight that
//! `run` does before any cell, so that a child of another protocol version,
//! or one that writes anything but a `ready` record, stops the run with one
//! line at the top instead of an error in every result; and the launchers
//! that serve a child's operations faster (its fork server, its warm pool),
//! each started and checked by the same preflight before it is used.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crashcells_protocol::{Op, OpArgs, Ready};

use crate::harness::{Exit, Interrupt, Launch, Launcher, POLL, Running};
use crate::journal::{self, snippet};

/// A private folder for protocol probes: a store, an ack journal, a config
/// home, and the child's stdout and stderr.
pub struct Scratch {
    dir: tempfile::TempDir,
    pub home: PathBuf,
}

impl Scratch {
    /// Makes the folder inside `work`, with an empty config home (the
    /// resolver's default) unless `config` gives the text of config.toml.
    pub fn new(work: &Path, label: &str, config: Option<&str>) -> std::io::Result<Scratch> {
        let dir = tempfile::Builder::new().prefix(&format!("{label}-")).tempdir_in(work)?;
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home)?;
        if let Some(text) = config {
            std::fs::write(home.join("config.toml"), text)?;
        }
        Ok(Scratch { dir, home })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `op --db <folder>/store.db`, ready for more flags.
    pub fn op(&self, op: Op) -> OpArgs {
        OpArgs::new(op).db(&self.path("store.db"))
    }

    /// Starts the child for `args` (exec'd, or forked by its fork server)
    /// with stdout and stderr in files named after `label`; the start's
    /// waits give up at `deadline`, or once `interrupt` is raised.
    pub fn spawn(
        &self,
        child: &Launcher,
        args: &OpArgs,
        label: &str,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> std::io::Result<Running> {
        let args = args.to_args();
        let (stdout, stderr) = (self.path(&format!("{label}.stdout")), self.path(&format!("{label}.stderr")));
        let launch = Launch {
            args: &args,
            home: &self.home,
            trial: self.dir.path(),
            stdout: Some(&stdout),
            stderr: Some(&stderr),
        };
        Ok(child.spawn(&launch, deadline, interrupt)?)
    }
}

/// Waits until `acks` holds one complete line, the child ends, `deadline`
/// passes or `interrupt` is raised (its caller looks at the interrupt).
/// Returns how the child ended, if it did.
pub fn wait_first_line(child: &mut Running, acks: &Path, deadline: Duration, interrupt: &Interrupt) -> Option<Exit> {
    wait_first_line_unless(child, acks, (deadline, interrupt), &|| false)
}

/// [`wait_first_line`], that also stops as soon as `broken` says the child
/// showed it will write no ready record (the preflight's long wait must not
/// be spent on a child that printed binary).
fn wait_first_line_unless(
    child: &mut Running,
    acks: &Path,
    (deadline, interrupt): (Duration, &Interrupt),
    broken: &dyn Fn() -> bool,
) -> Option<Exit> {
    let end = Instant::now() + deadline;
    loop {
        if std::fs::read(acks).is_ok_and(|b| b.contains(&b'\n')) {
            return None;
        }
        if let Some(exit) = child.try_exit() {
            return Some(exit);
        }
        if Instant::now() >= end || interrupt.is_set() || broken() {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether what a child wrote so far shows that it does not speak the
/// protocol, whatever it does next: a journal whose first byte cannot begin
/// a ready record (JSON, `{`), or bytes that are not text on stdout or in
/// the journal (a binary printed by mistake). A slow child shows neither,
/// and keeps its whole wait.
pub fn not_protocol(acks: &[u8], stdout: &[u8]) -> bool {
    let binary = |b: &[u8]| {
        std::str::from_utf8(b).map_or(true, |t| t.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')))
    };
    let first = acks.iter().find(|b| !b.is_ascii_whitespace());
    first.is_some_and(|&b| b != b'{') || binary(acks) || binary(stdout)
}

/// Why the preflight found no child speaking the protocol.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error("preflight folder: {0}")]
    Folder(std::io::Error),
    #[error("could not start it: {0}")]
    Start(std::io::Error),
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    /// What the child did instead of writing a ready record ([`no_ready`]).
    #[error("{0}")]
    NoReady(String),
    /// It wrote none before the deadline and showed nothing else wrong: a
    /// slow start, or a hung one ([`no_ready`]).
    #[error("{0}")]
    Late(String),
}

impl PreflightError {
    /// Whether the wait only ran out of time: the child (or the fast path
    /// it went through) was slow to start, and showed nothing broken.
    pub fn timed_out(&self) -> bool {
        match self {
            PreflightError::Late(_) => true,
            PreflightError::Start(e) => start_timed_out(e),
            _ => false,
        }
    }
}

/// Whether a launch's error is a fast path's that ran out of time (the
/// launcher carries its errors as text in an `io::Error`).
fn start_timed_out(e: &std::io::Error) -> bool {
    let inner = e.get_ref();
    inner.and_then(|i| i.downcast_ref::<crate::harness::ForkError>()).is_some_and(|f| f.timed_out())
        || inner.and_then(|i| i.downcast_ref::<crate::harness::WarmError>()).is_some_and(|w| w.timed_out())
}

/// Runs `append --stop-after 1` once with the resolver's default config and
/// returns the child's `ready` record, or why there is none. Its waits give
/// up at `deadline`, or once `interrupt` (the run's) is raised.
pub fn preflight(
    child: &Launcher,
    work: &Path,
    deadline: Duration,
    interrupt: &Interrupt,
) -> Result<Ready, PreflightError> {
    preflight_with(child, work, deadline, interrupt, None)
}

/// The preflight with the run's `--mutant`, if any: a child that does not
/// implement the mutant refuses it here (docs/PROTOCOL.md), before any
/// cell runs, rather than in every result's trials.
pub fn preflight_with(
    child: &Launcher,
    work: &Path,
    deadline: Duration,
    interrupt: &Interrupt,
    mutant: Option<&str>,
) -> Result<Ready, PreflightError> {
    preflight_in(child, work, deadline, interrupt, mutant, None)
}

/// The preflight with `config` as the child's config.toml (a leg's
/// requested mode and level: what it applies for that leg,
/// [`crate::applied`]), the resolver's default without it.
pub fn preflight_in(
    child: &Launcher,
    work: &Path,
    deadline: Duration,
    interrupt: &Interrupt,
    mutant: Option<&str>,
    config: Option<&str>,
) -> Result<Ready, PreflightError> {
    let scratch = Scratch::new(work, "preflight", config).map_err(PreflightError::Folder)?;
    let acks = scratch.path("acks.ndjson");
    let args = scratch.op(Op::Append).acks(&acks).stop_after(1).mutant(mutant);
    let mut running = scratch.spawn(child, &args, "append", deadline, interrupt).map_err(PreflightError::Start)?;
    let stdout_path = scratch.path("append.stdout");
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    let broken = || not_protocol(&read(&acks), &read(&stdout_path));
    let exited = wait_first_line_unless(&mut running, &acks, (deadline, interrupt), &broken);
    let stopped_early = exited.is_none() && broken();
    let reaped = running.kill_and_reap();
    let bytes = read(&acks);
    // A journal that holds a line is the protocol's to judge, binary or not.
    let ready = journal::parse(&bytes)?.ready;
    ready.ok_or_else(|| {
        let stdout = read(&stdout_path);
        let exit = exited.map(|_| reaped.exit);
        let end = match exit {
            Some(e) => End::Exited(e),
            None if stopped_early => End::NotProtocol,
            None => End::Deadline(deadline),
        };
        let why = no_ready(&bytes, &stdout, end, &reaped.stderr_tail);
        match end {
            End::Deadline(_) if bytes.is_empty() => PreflightError::Late(why),
            _ => PreflightError::NoReady(why),
        }
    })
}

/// A fast path as the run starts it ([`fork_server`], [`warm_pool`]).
pub enum Fast {
    /// Ready: its launcher, and how long its first operation took to write
    /// its ready record.
    Ready(Launcher, Duration),
    /// Not ready within its deadline, and nothing else wrong with it: why,
    /// in one line. The run execs every operation instead and says so
    /// ([`Launcher::exec_late`]): load costs it speed, never a verdict.
    Late(String),
}

/// The launcher of a child that offers a fork server (docs/PROTOCOL.md §9):
/// the server started, and a first operation forked by it as the preflight
/// ran it exec'd, so that a server whose processes do not start fresh (a
/// descriptor of the trial's folder held open, say) stops the run here with
/// one line, before any cell. One that is only slow to start is
/// [`Fast::Late`]. `None` for a child without a server.
pub fn fork_server(
    child: &Launcher,
    ready: &Ready,
    work: &Path,
    deadline: Duration,
    interrupt: &Interrupt,
) -> crate::error::Result<Option<Fast>> {
    if !crate::harness::serves_forks(ready) || child.server_pid().is_some() {
        return Ok(None);
    }
    let refused = |message: String| crate::error::Error::Child { child: child.display(), message };
    let stderr = work.join("fork-server.stderr");
    let forks = match Launcher::with_fork_server((**child).clone(), &stderr, deadline, interrupt) {
        Ok(forks) => forks,
        Err(e) if e.timed_out() => return Ok(Some(Fast::Late(e.to_string()))),
        Err(e) => return Err(refused(e.to_string())),
    };
    let began = Instant::now();
    match preflight(&forks, work, deadline, interrupt) {
        // A server that did not answer its first request was retired, and
        // the preflight ran exec'd: a late server, not a measured start.
        Ok(_) if let Some(why) = forks.retired() => Ok(Some(Fast::Late(format!("its fork server: {why}")))),
        Ok(_) => Ok(Some(Fast::Ready(forks, began.elapsed()))),
        Err(e) if e.timed_out() => Ok(Some(Fast::Late(format!("its fork server: {e}")))),
        // The launcher's refusal already names the server and the descriptor.
        Err(PreflightError::Start(e)) => Err(refused(e.to_string())),
        Err(e) => Err(refused(format!("its fork server: {e}"))),
    }
}

/// The launcher of a child that offers a warm pool (docs/PROTOCOL.md §10)
/// and is not served by a fork server: the pool started with `size`
/// processes, and a first operation run in a warm process as the preflight
/// ran it exec'd, so that a child whose warm processes do not start fresh
/// stops the run here with one line, before any cell. One that is only
/// slow to get warm is [`Fast::Late`]. `None` for a child without one.
pub fn warm_pool(
    child: &Launcher,
    ready: &Ready,
    work: &Path,
    size: usize,
    deadline: Duration,
    interrupt: &Interrupt,
) -> crate::error::Result<Option<Fast>> {
    if !crate::harness::serves_warm(ready) || child.server_pid().is_some() || child.warm_pool().is_some() {
        return Ok(None);
    }
    let refused = |message: String| crate::error::Error::Child { child: child.display(), message };
    let stderr = work.join("warm-pool.stderr");
    let warm = match Launcher::with_warm_pool((**child).clone(), &stderr, size, deadline, interrupt) {
        Ok(warm) => warm,
        Err(e) if e.timed_out() => return Ok(Some(Fast::Late(e.to_string()))),
        Err(e) => return Err(refused(e.to_string())),
    };
    let began = Instant::now();
    match preflight(&warm, work, deadline, interrupt) {
        Ok(_) => Ok(Some(Fast::Ready(warm, began.elapsed()))),
        Err(e) if e.timed_out() => Ok(Some(Fast::Late(format!("its warm pool: {e}")))),
        // The launcher's refusal already names the pool and the descriptor.
        Err(PreflightError::Start(e)) => Err(refused(e.to_string())),
        Err(e) => Err(refused(format!("its warm pool: {e}"))),
    }
}

/// How the wait for a ready record ended, when there was none.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// The child ended by itself.
    Exited(Exit),
    /// The deadline passed.
    Deadline(Duration),
    /// What it wrote showed it does not speak the protocol ([`not_protocol`]).
    NotProtocol,
}

/// Says why there is no ready record, with what the child did instead.
pub fn no_ready(acks: &[u8], stdout: &[u8], end: End, stderr: &str) -> String {
    let mut why = String::from("wrote no ready record to its ack journal");
    if !acks.is_empty() {
        why.push_str(&format!(" (the journal holds {} without a newline)", snippet(acks)));
    } else if !stdout.is_empty() {
        why.push_str(&format!(
            " (it printed {} on stdout; the ready record belongs in the --acks file)",
            snippet(stdout)
        ));
    }
    match end {
        End::Exited(e) => why.push_str(&format!("; it ended with {e}")),
        End::Deadline(d) => why.push_str(&format!(" within {d:?}")),
        End::NotProtocol => why.push_str("; what it wrote is no protocol, so it was not waited for"),
    }
    if !stderr.is_empty() {
        why.push_str(&format!(": {stderr}"));
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_ready_says_what_came_instead() {
        let d = Duration::from_secs(1);
        let why = no_ready(b"", b"hello\n", End::Exited(Exit::Code(0)), "");
        assert_eq!(
            why,
            r#"wrote no ready record to its ack journal (it printed "hello" on stdout; the ready record belongs in the --acks file); it ended with exit code 0"#
        );
        let why = no_ready(b"{\"kind\"", b"", End::Deadline(d), "boom");
        assert!(why.contains("without a newline") && why.ends_with("within 1s: boom"), "{why}");
    }

    #[test]
    fn binary_output_or_a_journal_that_is_no_json_is_no_protocol_and_a_slow_start_is() {
        assert!(!not_protocol(b"", b""), "nothing yet: a slow start");
        assert!(!not_protocol(b"{\"kind\":\"rea", b"starting the store\n"), "text, and a record on its way");
        assert!(not_protocol(b"", b"\x7fELF\x02\x01\x01\x00"), "a binary on stdout");
        assert!(not_protocol(b"", &[0xff, 0xfe, 0x00]), "not even UTF-8");
        assert!(not_protocol(b"ready", b""), "a journal that is no JSON record");
    }
}
