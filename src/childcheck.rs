//! `crashcells child-check`: the conformance check of an adapter itself. It
//! runs each operation of the child protocol once, without a kill (`append`
//! and `rotate` end by `--stop-after`), and reports which parts of
//! docs/PROTOCOL.md the child gets wrong, so that an adapter's author hears
//! "no ready record" or "dump not canonical" rather than a cell's error.
//!
//! Crash model: none; nothing here is killed. The one clause that needs a
//! moment in time, "an ack is written only after its operation's effect is
//! visible", is sampled: each time a new ack appears the child's group is
//! stopped (`SIGSTOP`), a fresh `dump` reads the store, and the group resumes.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use crashcells_protocol::Dump;
use crashcells_protocol::JournalMode;
use crashcells_protocol::{Ack, PROTOCOL, Ready};
use crashcells_protocol::{EXIT_LOST, EXIT_WON};
use serde::Serialize;

use crate::cells::consume::{HANDOFF, race_violations};
use crate::cells::{prefix, rotation};
use crate::harness::{ChildCommand, Exit, POLL, Running, run_to_end};
use crate::journal::{self, Journal, JournalError, Tail};
use crate::probe::{Scratch, no_ready, wait_first_line};
use crate::recovery::where_differ;

pub const SCHEMA: &str = "crashcells.child-check.v1";
/// Appends and rotations of the plain runs.
const APPENDS: u64 = 5;
const ROTATIONS: u64 = 3;
/// Acks sampled for the ack-after-effect check, and the most samples that may
/// be inconclusive (a dump that could not read the paused store in time).
const SAMPLES: u32 = 30;
const MAX_INCONCLUSIVE: u32 = 3;
/// How long a dump of a paused store may take before the sample is inconclusive.
const SAMPLE_DUMP: Duration = Duration::from_secs(2);

/// One clause of the protocol and whether the child keeps it.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub ok: bool,
    pub detail: String,
}

/// What `child-check` found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub schema: &'static str,
    pub child: String,
    pub protocol: u32,
    pub sqlite_version: Option<String>,
    pub journal_mode: Option<String>,
    pub conforming: bool,
    pub checks: Vec<Finding>,
}

impl CheckReport {
    /// `0` conforming, `1` not.
    pub fn exit_code(&self) -> i32 {
        if self.conforming { 0 } else { 1 }
    }

    pub fn to_human(&self) -> String {
        let mut out = format!(
            "child-check: {} (protocol {}, SQLite {}, journal_mode {})\n",
            self.child,
            self.protocol,
            self.sqlite_version.as_deref().unwrap_or("?"),
            self.journal_mode.as_deref().unwrap_or("?")
        );
        for f in &self.checks {
            out.push_str(&format!("{:<5} {:<20} {}\n", if f.ok { "ok" } else { "FAIL" }, f.check, f.detail));
        }
        let passed = self.checks.iter().filter(|f| f.ok).count();
        let verdict = if self.conforming { "conforming" } else { "NOT conforming" };
        out.push_str(&format!("{verdict}: {passed} of {} checks pass\n", self.checks.len()));
        out
    }
}

/// Runs the whole check of `child`, with trials in `work`.
pub fn check(child: &ChildCommand, work: &Path, deadline: Duration) -> CheckReport {
    let mut c = Checker { child, work, deadline, findings: Vec::new() };
    let ready = c.append();
    if let Some(ready) = &ready {
        c.ack_after_effect();
        c.rotate();
        c.claim();
        c.config_home(ready);
    }
    let conforming = ready.is_some() && c.findings.iter().all(|f| f.ok);
    CheckReport {
        schema: SCHEMA,
        child: child.display(),
        protocol: PROTOCOL,
        sqlite_version: ready.as_ref().map(|r| r.sqlite_version.clone()),
        journal_mode: ready.as_ref().map(|r| r.journal_mode.clone()),
        conforming,
        checks: c.findings,
    }
}

struct Checker<'a> {
    child: &'a ChildCommand,
    work: &'a Path,
    deadline: Duration,
    findings: Vec<Finding>,
}

impl Checker<'_> {
    fn note(&mut self, check: &'static str, result: Result<String, String>) -> bool {
        let ok = result.is_ok();
        self.findings.push(Finding { check, ok, detail: result.unwrap_or_else(|e| e) });
        ok
    }

    fn scratch(&mut self, label: &str, config: Option<&str>) -> Option<Scratch> {
        match Scratch::new(self.work, label, config) {
            Ok(s) => Some(s),
            Err(e) => {
                self.note("scratch", Err(format!("could not make a folder in {}: {e}", self.work.display())));
                None
            }
        }
    }

    /// Runs a short operation to its end; `Err` if it could not start or overstayed.
    fn run_op(&self, s: &Scratch, args: &[OsString], label: &str) -> Result<(Exit, String), String> {
        let cmd = self.child.command(args, &s.home);
        let (stdout, stderr) = (s.path(&format!("{label}.stdout")), s.path(&format!("{label}.stderr")));
        let (exit, tail) =
            run_to_end(cmd, &stdout, &stderr, self.deadline).map_err(|e| format!("`{label}` could not start: {e}"))?;
        let exit = exit.ok_or_else(|| format!("`{label}` did not end within {:?}", self.deadline))?;
        Ok((exit, tail))
    }

    /// One `dump` pass of `db` in `s`: its stdout text.
    fn dump(&self, s: &Scratch, db: &str, label: &str) -> Result<String, String> {
        match self.run_op(s, &s.args("dump", db, &[]), label)? {
            (Exit::Code(0), _) => {
                std::fs::read_to_string(s.path(&format!("{label}.stdout"))).map_err(|e| e.to_string())
            }
            (exit, tail) => Err(format!("`dump` ended with {exit}: {tail}")),
        }
    }

    /// `append --stop-after 5`: the ready record, the acks, the state.
    fn append(&mut self) -> Option<Ready> {
        let s = self.scratch("append", None)?;
        let acks = s.path("acks.ndjson");
        let n = APPENDS.to_string();
        let args = s.args("append", "store.db", &["--acks", &acks.to_string_lossy(), "--stop-after", &n]);
        let ran = self.run_op(&s, &args, "append");
        let bytes = std::fs::read(&acks).unwrap_or_default();
        let journal = match journal::parse(&bytes) {
            Ok(j) => j,
            Err(e) => {
                self.journal_error(e);
                return None;
            }
        };
        let Some(ready) = journal.ready.clone() else {
            let stdout = std::fs::read(s.path("append.stdout")).unwrap_or_default();
            let (exit, tail) = ran.clone().map_or((None, String::new()), |(e, t)| (Some(e), t));
            self.note("ready", Err(no_ready(&bytes, &stdout, exit, &tail, self.deadline)));
            return None;
        };
        self.note("ready", Ok(format!("first line is a ready record for `{}`", ready.op)));
        self.note("protocol-version", Ok(format!("protocol {}", ready.protocol)));
        self.note("ready-fields", ready_fields(&ready, "append"));
        self.note("stop-after", ran.and_then(|(exit, tail)| expect_exit(exit, 0, &tail, "append --stop-after 5")));
        self.note("acks", ack_sequence(&journal, "append", APPENDS));
        let state = self.dump(&s, "store.db", "append-dump").and_then(|t| append_state(&t, &journal.acks));
        self.note("append-state", state);
        Some(ready)
    }

    fn journal_error(&mut self, e: JournalError) {
        let check = match e {
            JournalError::WrongProtocol { .. } => "protocol-version",
            JournalError::NotReady { .. } => "ready",
            JournalError::BadReady { .. } => "ready-fields",
            _ => "acks",
        };
        self.note(check, Err(e.to_string()));
    }

    /// `rotate --stop-after 3`, then two dumps: canonical and deterministic.
    fn rotate(&mut self) {
        let Some(s) = self.scratch("rotate", None) else { return };
        let acks = s.path("acks.ndjson");
        let n = ROTATIONS.to_string();
        let args = s.args("rotate", "store.db", &["--acks", &acks.to_string_lossy(), "--stop-after", &n]);
        let ran = self.run_op(&s, &args, "rotate").and_then(|(e, t)| expect_exit(e, 0, &t, "rotate --stop-after 3"));
        if !self.note("rotate", ran) {
            return;
        }
        let journal = match journal::parse(&std::fs::read(&acks).unwrap_or_default()) {
            Ok(j) => j,
            Err(e) => {
                self.note("rotate", Err(e.to_string()));
                return;
            }
        };
        let first = self.dump(&s, "store.db", "dump-1");
        let second = self.dump(&s, "store.db", "dump-2");
        let (first, second) = match (first, second) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                self.note("dump-canonical", Err(e));
                return;
            }
        };
        self.note(
            "rotate-state",
            ack_sequence(&journal, "rotate", ROTATIONS).and_then(|_| rotate_state(&first, &journal)),
        );
        self.note("dump-canonical", canonical(&first));
        let same = if first == second {
            Ok("two passes print the same bytes".into())
        } else {
            Err(format!("the two passes differ {}", where_differ(&first, &second)))
        };
        self.note("dump-deterministic", same);
    }

    /// `park`, one claimant held at the barrier then released (WON), one
    /// more (LOST), and the store shows one claim.
    fn claim(&mut self) {
        let Some(s) = self.scratch("claim", None) else { return };
        let parked = self.run_op(&s, &s.args("park", "store.db", &["--session", HANDOFF]), "park");
        if !self.note("park", parked.and_then(|(e, t)| expect_exit(e, 0, &t, "park"))) {
            return;
        }
        let barrier = s.path("barrier.lock");
        let held = match File::create(&barrier).and_then(|f| f.lock().map(|()| f)) {
            Ok(f) => f,
            Err(e) => {
                self.note("claim-barrier", Err(format!("barrier {}: {e}", barrier.display())));
                return;
            }
        };
        let first = self.first_claim(&s, held);
        let second = first.and_then(|()| self.claimant(&s, "r1", None));
        let second = second.and_then(|(e, t)| expect_exit(e, EXIT_LOST, &t, "a second claimant (LOST)"));
        if !self.note("claim-exit-codes", second.map(|_| "WON exits 0, LOST exits 10".into())) {
            return;
        }
        let state = self.dump(&s, "store.db", "claim-dump").and_then(|t| parse_dump(&t)).and_then(|d| {
            let v = race_violations(&d, 1, 2);
            if v.found.is_empty() { Ok(v.details.join("; ")) } else { Err(v.found.join("; ")) }
        });
        self.note("claim-state", state);
    }

    /// The first claimant waits at the held barrier (the handoff stays
    /// pending while it waits), then wins once released.
    fn first_claim(&mut self, s: &Scratch, held: File) -> Result<(), String> {
        let (exit, tail) = self.claimant(s, "r0", Some(held))?;
        expect_exit(exit, EXIT_WON, &tail, "the first claimant (WON)").map(drop)
    }

    /// Runs claimant `name`; with `held`, checks it waits at the barrier
    /// before dropping the lock.
    fn claimant(&mut self, s: &Scratch, name: &str, held: Option<File>) -> Result<(Exit, String), String> {
        let acks = s.path(&format!("acks-{name}.ndjson"));
        let (a, b) = (acks.to_string_lossy().to_string(), s.path("barrier.lock").to_string_lossy().to_string());
        let rest = ["--acks", &a, "--session", HANDOFF, "--barrier", &b, "--claimant", name];
        let mut running =
            s.spawn(self.child, &s.args("claim", "store.db", &rest), name).map_err(|e| format!("claim: {e}"))?;
        if let Some(lock) = held {
            let waited = self.waits_at_barrier(s, &mut running, &acks);
            self.note("claim-barrier", waited);
            drop(lock);
        }
        let exit = running.wait_until(Instant::now() + self.deadline);
        let tail = running.stderr_tail();
        exit.map(|e| (e, tail)).ok_or_else(|| format!("claimant {name} did not end within {:?}", self.deadline))
    }

    fn waits_at_barrier(&self, s: &Scratch, running: &mut Running, acks: &Path) -> Result<String, String> {
        if let Some(exit) = wait_first_line(running, acks, self.deadline) {
            return Err(format!("the claimant ended ({exit}) before it wrote its ready record"));
        }
        // The driver releases the barrier only once every racer is ready: a
        // claimant that writes its ready record after taking the lock never
        // gets to race in cell 2.
        if !std::fs::read(acks).is_ok_and(|b| b.contains(&b'\n')) {
            return Err(format!(
                "no ready record within {:?} while the barrier was held: write it before waiting at the barrier",
                self.deadline
            ));
        }
        let dump = self.dump(s, "store.db", "barrier-dump").and_then(|t| parse_dump(&t))?;
        let state = dump.sessions.iter().find(|x| x.id == HANDOFF).and_then(|x| x.handoff_state.clone());
        if let Some(exit) = running.try_exit() {
            return Err(format!("the claimant ended ({exit}) while the driver still held the barrier"));
        }
        match state.as_deref() {
            Some("pending") => Ok("the claimant waited at the barrier; the handoff stayed pending".into()),
            other => Err(format!("the handoff is {other:?} while the barrier is still held (expected \"pending\")")),
        }
    }

    /// Samples acks of a long `append` run while the group is stopped.
    fn ack_after_effect(&mut self) {
        let Some(s) = self.scratch("sampling", None) else { return };
        let acks = s.path("acks.ndjson");
        let args = s.args("append", "store.db", &["--acks", &acks.to_string_lossy(), "--stop-after", "100000"]);
        let result = match s.spawn(self.child, &args, "append") {
            Ok(mut running) => self.sample(&s, &mut running, &acks),
            Err(e) => Err(format!("could not start append: {e}")),
        };
        self.note("ack-after-effect", result);
    }

    fn sample(&self, s: &Scratch, running: &mut Running, acks: &Path) -> Result<String, String> {
        let (mut tail, mut seen, mut conclusive, mut inconclusive) = (Tail::default(), 0, 0, 0);
        let end = Instant::now() + self.deadline;
        while conclusive < SAMPLES && inconclusive < MAX_INCONCLUSIVE && Instant::now() < end {
            let lines = tail.poll(acks).map_err(|e| format!("ack journal: {e}"))?;
            if lines.saturating_sub(1) <= seen {
                if let Some(exit) = running.try_exit() {
                    return Err(format!("append ended ({exit}) after {seen} acks: {}", running.stderr_tail()));
                }
                std::thread::sleep(POLL);
                continue;
            }
            running.pause_group(true);
            if mid_commit(&s.path("store.db")) {
                // Stopped inside a rollback-mode commit, where no reader can
                // get in: let it finish and stop it at the next ack instead.
                running.pause_group(false);
                std::thread::sleep(POLL);
                continue;
            }
            let probe = self.probe(s, acks, conclusive + inconclusive);
            running.pause_group(false);
            match probe? {
                Some(acked) => (seen, conclusive) = (acked, conclusive + 1),
                None => (seen, inconclusive) = (lines.saturating_sub(1), inconclusive + 1),
            }
        }
        if conclusive == 0 {
            return Err(format!("no sample could read the paused store ({inconclusive} inconclusive)"));
        }
        Ok(format!(
            "{conclusive} acks sampled with the child stopped, each effect visible ({inconclusive} inconclusive)"
        ))
    }

    /// With the group stopped: the acks on disk against a fresh dump. `None`
    /// when the dump could not read the paused store in time.
    fn probe(&self, s: &Scratch, acks: &Path, n: u32) -> Result<Option<u64>, String> {
        let bytes = std::fs::read(acks).unwrap_or_default();
        let journal = journal::parse(&bytes).map_err(|e| e.to_string())?;
        let acked = journal.acks.len() as u64;
        let cmd = self.child.command(&s.args("dump", "store.db", &[]), &s.home);
        let (stdout, stderr) = (s.path(&format!("sample-{n}.json")), s.path(&format!("sample-{n}.stderr")));
        let Ok((Some(Exit::Code(0)), _)) = run_to_end(cmd, &stdout, &stderr, SAMPLE_DUMP) else { return Ok(None) };
        let dump = parse_dump(&std::fs::read_to_string(&stdout).unwrap_or_default())?;
        let visible = dump.messages.iter().filter(|m| m.session_id == crashcells_protocol::APPEND_SESSION).count();
        if (visible as u64) < acked {
            return Err(format!(
                "ack of m{} was in the journal while a fresh dump saw only {visible} appends: an ack was written before its operation's effect",
                acked - 1
            ));
        }
        Ok(Some(acked))
    }

    /// The config home: a leg asking for DELETE is honoured; an unknown value
    /// is an error, never a fallback.
    fn config_home(&mut self, default: &Ready) {
        let asked = self.ready_with("[database]\njournal_mode = \"delete\"\n", "config-delete").and_then(|(r, _)| {
            match r.map(|r| r.journal_mode) {
                Some(m) if m == JournalMode::Delete.as_str() => {
                    Ok(format!("journal_mode = \"delete\" ran delete (default ran {})", default.journal_mode))
                }
                Some(m) => Err(format!("journal_mode = \"delete\" was asked but the child reported {m}")),
                None => Err("with journal_mode = \"delete\" the child wrote no ready record".into()),
            }
        });
        self.note("config-home", asked);
        let bad = self.ready_with("[database]\njournal_mode = \"wall\"\n", "config-bad").and_then(|(r, exit)| {
            match (exit, r) {
                (Exit::Code(c), None) if c != 0 => Ok(format!("journal_mode = \"wall\" is refused (exit code {c})")),
                (exit, ready) => Err(format!(
                    "journal_mode = \"wall\" must be an error before any ready record, but the child ended with {exit}{}",
                    if ready.is_some() { " after writing a ready record" } else { "" }
                )),
            }
        });
        self.note("config-errors", bad);
    }

    /// Runs `append --stop-after 1` with `config` as config.toml.
    fn ready_with(&mut self, config: &str, label: &str) -> Result<(Option<Ready>, Exit), String> {
        let s = self.scratch(label, Some(config)).ok_or_else(|| "no scratch folder".to_string())?;
        let acks = s.path("acks.ndjson");
        let args = s.args("append", "store.db", &["--acks", &acks.to_string_lossy(), "--stop-after", "1"]);
        let (exit, _) = self.run_op(&s, &args, label)?;
        let journal = journal::parse(&std::fs::read(&acks).unwrap_or_default()).map_err(|e| e.to_string())?;
        Ok((journal.ready, exit))
    }
}

/// SQLite's lock bytes in a database file (os_unix.c): PENDING at 1 GiB,
/// RESERVED after it, then the 510 bytes of the SHARED range. A writer in a
/// rollback journal mode holds a write lock on PENDING or on the SHARED range
/// only while it commits, and a reader cannot get in until it is done.
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

/// Whether some process holds SQLite's PENDING or EXCLUSIVE lock on `db`.
fn mid_commit(db: &Path) -> bool {
    let Ok(file) = File::open(db) else { return false };
    write_locked(&file, PENDING_BYTE, 1) || write_locked(&file, SHARED_FIRST, SHARED_SIZE)
}

/// Whether a POSIX record lock of another process would block a read lock
/// on `len` bytes at `start` (`F_GETLK` only asks; it takes nothing).
fn write_locked(file: &File, start: i64, len: i64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is plain old data; F_GETLK only fills it in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_RDLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    // SAFETY: a valid descriptor and a valid flock for the call's duration.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut fl) };
    r == 0 && fl.l_type != libc::F_UNLCK as libc::c_short
}

fn expect_exit(exit: Exit, want: i32, tail: &str, what: &str) -> Result<String, String> {
    if exit == Exit::Code(want) {
        Ok(format!("{what} ended with exit code {want}"))
    } else {
        Err(format!("{what} ended with {exit}, expected exit code {want}: {tail}"))
    }
}

fn ready_fields(r: &Ready, op: &str) -> Result<String, String> {
    if r.op != op {
        return Err(format!("ready record says op `{}` for `{op}`", r.op));
    }
    if r.sqlite_version.trim().is_empty() {
        return Err("ready record has an empty sqlite_version".into());
    }
    if r.journal_mode.parse::<JournalMode>().is_err() {
        return Err(format!("ready record's journal_mode `{}` is not a journal mode", r.journal_mode));
    }
    Ok(format!("SQLite {}, journal_mode {}", r.sqlite_version, r.journal_mode))
}

/// Exactly `n` acks of `op`, numbered 0..n, all lines whole.
fn ack_sequence(j: &Journal, op: &str, n: u64) -> Result<String, String> {
    if j.torn_tail {
        return Err("the ack journal ends in a line without a newline (nothing was killed)".into());
    }
    let got: Vec<u64> = j.acks.iter().map(|a| a.i).collect();
    if got != (0..n).collect::<Vec<_>>() {
        return Err(format!("expected {n} acks numbered 0..{n}, found {got:?}"));
    }
    if let Some(a) = j.acks.iter().find(|a| a.op != op) {
        return Err(format!("ack {} says op `{}` for `{op}`", a.i, a.op));
    }
    if op == "rotate" && j.acks.iter().any(|a| a.parent.is_none() || a.child.is_none()) {
        return Err("a rotate ack lacks its parent or child".into());
    }
    Ok(format!("{n} acks of `{op}`, numbered 0..{n}"))
}

fn append_state(text: &str, acks: &[Ack]) -> Result<String, String> {
    let dump = parse_dump(text)?;
    let v = prefix::check(&dump, acks);
    if !v.found.is_empty() {
        return Err(v.found.join("; "));
    }
    let n = dump.messages.len() as u64;
    if n != APPENDS {
        return Err(format!("append --stop-after {APPENDS} left {n} messages"));
    }
    Ok(v.details.join("; "))
}

fn rotate_state(text: &str, j: &Journal) -> Result<String, String> {
    let v = rotation::check(&parse_dump(text)?, &j.acks);
    if v.found.is_empty() { Ok(v.details.join("; ")) } else { Err(v.found.join("; ")) }
}

fn parse_dump(text: &str) -> Result<Dump, String> {
    serde_json::from_str(text.trim_end()).map_err(|e| format!("dump printed no dump: {e}"))
}

/// One line, exactly our serialization (field order, no spaces), sessions
/// sorted by id.
fn canonical(text: &str) -> Result<String, String> {
    let dump = parse_dump(text)?;
    if dump.protocol != PROTOCOL {
        return Err(format!("dump says protocol {} but this driver speaks {PROTOCOL}", dump.protocol));
    }
    let want = serde_json::to_string(&dump).map_err(|e| e.to_string())? + "\n";
    if text != want {
        return Err(format!("not canonical: printed and canonical differ {}", where_differ(text, &want)));
    }
    if !dump.sessions.is_sorted_by(|a, b| a.id <= b.id) {
        return Err("sessions are not sorted by id".into());
    }
    Ok("one line, canonical field order, sessions sorted by id".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = r#"{"protocol":1,"integrity":"ok","sessions":[{"id":"a","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],"messages":[]}"#;

    #[test]
    fn canonical_accepts_our_bytes_and_names_the_first_difference() {
        assert!(canonical(&format!("{DUMP}\n")).is_ok());
        let spaced = DUMP.replace(r#""integrity":"ok""#, r#""integrity": "ok""#);
        let e = canonical(&format!("{spaced}\n")).unwrap_err();
        assert!(e.starts_with("not canonical: printed and canonical differ at byte 26"), "{e}");
        assert!(canonical(DUMP).is_err(), "the line must end with a newline");
    }

    fn sample_report() -> CheckReport {
        let finding = |check, ok, detail: &str| Finding { check, ok, detail: detail.into() };
        CheckReport {
            schema: SCHEMA,
            child: "python3 adapter.py".into(),
            protocol: PROTOCOL,
            sqlite_version: Some("3.40.1".into()),
            journal_mode: Some("delete".into()),
            conforming: false,
            checks: vec![
                finding("ready", true, "first line is a ready record for `append`"),
                finding("dump-canonical", false, "sessions are not sorted by id"),
            ],
        }
    }

    #[test]
    fn report_formats() {
        insta::assert_snapshot!("child_check_human", sample_report().to_human());
        insta::assert_json_snapshot!("child_check_json", sample_report());
        assert_eq!(sample_report().exit_code(), 1);
    }

    #[test]
    fn unsorted_sessions_are_not_canonical() {
        let two = DUMP.replace("}],", r#"},{"id":"0","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],"#);
        assert_eq!(canonical(&format!("{two}\n")).unwrap_err(), "sessions are not sorted by id");
    }
}
