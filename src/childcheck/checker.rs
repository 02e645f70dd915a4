//! The check's state and its plumbing: what it has found so far, the
//! stores operations left, scratch folders, and running one operation of
//! the child to its end. Each group of checks is an `impl Checker` in a file
//! of its own beside this one.

use std::path::Path;
use std::time::Duration;

use crashcells_protocol::{EXIT_UNSUPPORTED, Op, OpArgs, Ready};

use super::known;
use super::report::Finding;
use crate::harness::{Exit, Interrupt, Launcher, run_to_end};
use crate::probe::Scratch;

/// Appends and rotations of the plain runs.
pub(super) const APPENDS: u64 = 5;
pub(super) const ROTATIONS: u64 = 3;
/// Acks sampled for the ack-after-effect check, and the most samples that may
/// be inconclusive (a dump that could not read the paused store in time).
pub(super) const SAMPLES: u32 = 30;
pub(super) const MAX_INCONCLUSIVE: u32 = 3;
/// How long a dump of a paused store may take before the sample is
/// inconclusive. Generous: a Python adapter on a loaded machine takes
/// seconds to start, and a longer wait only keeps the child stopped longer.
pub(super) const SAMPLE_DUMP: Duration = Duration::from_secs(10);

/// Why a check did not pass: the adapter broke the protocol, or the store
/// did what a cell's clause forbids (the cell's own judge said so).
pub(super) enum Failed {
    Fault(String),
    /// The violations the cell's judge found.
    Finding(String),
}

impl From<String> for Failed {
    fn from(s: String) -> Failed {
        Failed::Fault(s)
    }
}

impl From<&str> for Failed {
    fn from(s: &str) -> Failed {
        Failed::Fault(s.to_string())
    }
}

/// A store an operation that succeeded left, and its first `dump` pass.
pub(super) struct State {
    /// The operation that left it.
    pub op: &'static str,
    pub scratch: Scratch,
    pub first: Result<String, String>,
}

pub(super) struct Checker<'a> {
    /// The child, every operation exec'd (its fork server is checked apart).
    pub(super) child: &'a Launcher,
    pub(super) work: &'a Path,
    pub(super) deadline: Duration,
    /// What every wait is given besides its deadline: a token of the
    /// check's own, never raised (`child-check` catches no signal: a
    /// Ctrl-C ends it at once, and its children die with it).
    pub(super) interrupt: Interrupt,
    pub(super) findings: Vec<Finding>,
    /// Checks not run for a reason of their own, with it.
    pub(super) skipped: Vec<(&'static str, String)>,
    /// Stores left by operations that succeeded, for the `dump` checks.
    pub(super) states: Vec<State>,
    /// Checks done of those known, on a terminal (hidden elsewhere).
    pub(super) bar: indicatif::ProgressBar,
}

/// The bar `child-check` shows on stderr while it runs: checks done of
/// those it knows, and the last one done. indicatif draws nothing when
/// stderr is not a terminal.
pub(super) fn progress_bar() -> indicatif::ProgressBar {
    let style = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} [{pos}/{len} checks] {msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(known::KNOWN.len() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    )
    .with_style(style);
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

impl Checker<'_> {
    /// Records a check's result; a check noted twice keeps its first
    /// failure.
    pub(super) fn note(&mut self, check: &'static str, result: Result<String, String>) -> bool {
        let finding = Finding::of(check, result);
        let ok = finding.ok;
        self.record(finding);
        ok
    }

    /// Keeps `finding`: a check's first, or a failure where the check had
    /// passed so far; an earlier failure stands.
    fn record(&mut self, finding: Finding) {
        match self.findings.iter_mut().find(|f| f.check == finding.check) {
            Some(earlier) if earlier.ok && !finding.ok => *earlier = finding,
            Some(_) => {}
            None => self.pushed(finding),
        }
    }

    /// A check's first finding, counted on the bar.
    fn pushed(&mut self, finding: Finding) {
        self.bar.set_message(format!("{} {}", finding.check, finding.status.label()));
        self.findings.push(finding);
        self.tick();
    }

    /// The bar at the checks done: those found and those not run for a
    /// reason of their own.
    fn tick(&self) {
        self.bar.set_position((self.findings.len() + self.skipped.len()) as u64);
    }

    /// Records a warning under `check`: the adapter conforms, a run pays.
    pub(super) fn warn(&mut self, check: &'static str, detail: String) {
        self.record(Finding::warning(check, detail));
    }

    /// Records the store's finding under `check` (`cell` fires on it); a
    /// protocol fault noted under the same check stands.
    pub(super) fn store_finding(&mut self, check: &'static str, cell: &'static str, detail: String) {
        self.record(Finding::store_finding(check, cell, detail));
    }

    /// Says of each of `checks` that it did not run, and why.
    pub(super) fn skip(&mut self, checks: &[&'static str], why: &str) {
        self.skipped.extend(checks.iter().map(|&c| (c, why.to_string())));
        self.tick();
    }

    /// Whether `exit` is the protocol's "unsupported operation" (exit 69,
    /// docs/PROTOCOL.md §2: how a version-1 child says it lacks `op`): then
    /// each of `checks` is not run, saying so, and no check fails for it.
    pub(super) fn unsupported(&mut self, op: Op, exit: Exit, checks: &[&'static str]) -> bool {
        if exit != Exit::Code(EXIT_UNSUPPORTED) {
            return false;
        }
        self.skip(
            checks,
            &format!("the child does not implement `{op}` (it exited {EXIT_UNSUPPORTED}: unsupported operation)"),
        );
        true
    }

    /// Runs `run` if the child implements every operation of `ops`; else
    /// says of each of `checks` that it did not run, and why.
    pub(super) fn when(&mut self, ready: &Ready, ops: &[Op], checks: &[&'static str], run: fn(&mut Self)) {
        match ops.iter().find(|&&op| !ready.implements(op)) {
            None => run(self),
            Some(op) => {
                self.skip(checks, &format!("the child does not implement `{op}` (its ready record does not list it)"))
            }
        }
    }

    /// Every known check, in order: its finding, or `not run` with why;
    /// then any finding of no known check (a folder that could not be made).
    pub(super) fn every_check(&self) -> Vec<Finding> {
        let mut out: Vec<Finding> = known::KNOWN
            .iter()
            .map(|k| match self.findings.iter().find(|f| f.check == k.name) {
                Some(f) => f.clone(),
                None => {
                    let why = self.skipped.iter().find(|(c, _)| *c == k.name).map(|(_, w)| w.clone());
                    Finding::not_run(k.name, why.unwrap_or_else(|| format!("needs {}", k.needs)))
                }
            })
            .collect();
        out.extend(self.findings.iter().filter(|f| known::find(f.check).is_none()).cloned());
        out
    }

    pub(super) fn scratch(&mut self, label: &str, config: Option<&str>) -> Option<Scratch> {
        match Scratch::new(self.work, label, config) {
            Ok(s) => Some(s),
            Err(e) => {
                self.note("scratch", Err(format!("could not make a folder in {}: {e}", self.work.display())));
                None
            }
        }
    }

    /// Runs a short operation to its end; `Err` if it could not start or overstayed.
    pub(super) fn run_op(&self, s: &Scratch, args: &OpArgs, label: &str) -> Result<(Exit, String), String> {
        let cmd = self.child.command(&args.to_args(), &s.home);
        let (stdout, stderr) = (s.path(&format!("{label}.stdout")), s.path(&format!("{label}.stderr")));
        let (exit, tail) = run_to_end(cmd, &stdout, &stderr, self.deadline, &self.interrupt)
            .map_err(|e| format!("`{label}` could not start: {e}"))?;
        let exit = exit.map_err(|_| format!("`{label}` did not end within {:?}", self.deadline))?;
        Ok((exit, tail))
    }

    /// One `dump` pass of the store in `s`: its stdout text.
    pub(super) fn dump(&self, s: &Scratch, label: &str) -> Result<String, String> {
        match self.run_op(s, &s.op(Op::Dump), label)? {
            (Exit::Code(0), _) => {
                std::fs::read_to_string(s.path(&format!("{label}.stdout"))).map_err(|e| e.to_string())
            }
            (exit, tail) => Err(format!("`dump` ended with {exit}: {tail}")),
        }
    }
}
