//! What a trial concluded, as data: a pass, a fire with the violations that
//! made it (and, for a power-loss state, the rule that made the state; for
//! fault injection, the call that was made to fail), a skip with its
//! reason, the harness's error with its cause, or an interruption with the
//! step it cut short.
//!
//! Every reason is a variant, carried typed from where it arose to the
//! result; the report is where it becomes a sentence ([`std::fmt::Display`],
//! called once, when a result is folded). Nothing in the pipeline reads a
//! reason back from its text: a census failure is wrapped once by
//! [`Failure::census`], a confirmation compares findings as values.

use std::time::Duration;

use crashcells_protocol::{EXIT_UNSUPPORTED, Op, spoken};

use crate::cells::{End, MissingParam, Unsupported, Violation};
use crate::harness::{Exit, ReapError};
use crate::journal::JournalError;
use crate::recovery::RecoveryError;

/// What a trial concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The clause was violated.
    Fire(Finding),
    /// The leg could not be probed here.
    Skip(Skip),
    /// The harness could not reach a verdict.
    Error(Failure),
    /// The run was interrupted (`SIGINT`/`SIGTERM`) before a verdict.
    Interrupted(Interruption),
}

impl Outcome {
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass)
    }

    /// The outcome of a census, a whole-sweep step that stands for every
    /// point: its failure says so (once, however deep it is wrapped).
    pub fn of_census(self) -> Outcome {
        match self {
            Outcome::Error(f) => Outcome::Error(Failure::census(f)),
            other => other,
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Pass => f.write_str("a pass"),
            Outcome::Fire(x) => x.fmt(f),
            Outcome::Skip(x) => x.fmt(f),
            Outcome::Error(x) => x.fmt(f),
            Outcome::Interrupted(x) => x.fmt(f),
        }
    }
}

/// A violated clause: every violation found (the first is the reason, the
/// others are listed in the details), how a modelled crash state came
/// about, when a model made it, and the call fault injection made fail,
/// when one did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub violations: Vec<Violation>,
    pub power: Option<PowerLoss>,
    /// Boxed: most findings have none, and an outcome stays small.
    pub fault: Option<Box<Fault>>,
}

impl Finding {
    /// The violation a result reports.
    pub fn first(&self) -> Option<&Violation> {
        self.violations.first()
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(x) = &self.fault {
            write!(f, "{x}; ")?;
        }
        if let Some(p) = &self.power {
            write!(f, "{p}: ")?;
        }
        match self.violations.as_slice() {
            [] => f.write_str("the clause was violated"),
            [one] => one.fmt(f),
            [first, rest @ ..] => write!(f, "{first} (and {} more, in the details)", rest.len()),
        }
    }
}

/// The power loss that left a state: the kill point it struck at, the rule
/// that dropped the data (the model's sentence), and how many later
/// operations the state also lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerLoss {
    pub point: u64,
    pub rule: String,
    pub later: usize,
}

impl std::fmt::Display for PowerLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "power loss at #{}: {}", self.point, self.rule)?;
        if self.later > 0 {
            write!(f, " (and {} later operations were lost)", self.later)?;
        }
        Ok(())
    }
}

/// The call an injection changed (made to fail): its kill point, what it
/// was about to do, what the injection made of it, and how the child ended
/// after it (its own end: an exit with the store's error is its legitimate
/// reaction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub point: u64,
    /// `fsync of the wal`, `write of 4096 bytes to the database at offset 0`.
    pub call: String,
    /// What the tracer did to it: `Failed(EIO)`, `Failed(ENOSPC)`.
    pub injected: crate::kill::inject::Injected,
    pub exit: Exit,
    /// What the store did differently after it, when the leg audit of its
    /// own files shows it (it went on in another journal mode).
    pub then: Option<String>,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fault at #{}: the {} {} (the child then ended: {})",
            self.point,
            self.call,
            self.injected.returned(),
            self.exit
        )?;
        match &self.then {
            Some(then) => write!(f, "; {then}"),
            None => Ok(()),
        }
    }
}

/// Why a leg or a result could not be probed here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    /// The leg audit's reason: the child ran another mode or level.
    #[error("{0}")]
    NotHonored(String),
    #[error("syscall kill points unavailable: {0}")]
    NoTracing(String),
    /// This architecture has no syscall table of ours.
    #[error("{0}")]
    Architecture(String),
    #[error("the child does not implement `{0}`")]
    MissingOperation(Op),
    /// The kill mode is not run on races, for the table's reason.
    #[error("{0}")]
    Race(&'static str),
    /// A `--point` whose call the mode's injection does not change.
    #[error("kill point {point} is the {call}: {mode} {changes}")]
    NothingToInject { point: u64, call: String, mode: &'static str, changes: &'static str },
}

/// Why the harness could not reach a verdict. The operating system's and
/// the child's own words (an errno's text, a stderr tail) travel as text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("census: {0}")]
    Census(Box<Failure>),
    #[error("trial folder: {0}")]
    TrialFolder(String),
    #[error("could not start the child `{child}`: {why}")]
    ChildStart { child: String, why: String },
    #[error("{0}")]
    Reap(ReapError),
    /// A timed trial's wait for its kill's target of acks ran out: the
    /// deadline counts from the child's spawn.
    #[error(
        "child stalled: waited for {target} acks from its spawn and saw {acks} within the {deadline:?} deadline; \
         child killed; stderr: {stderr}"
    )]
    Stalled { acks: u64, target: u64, deadline: Duration, stderr: String },
    #[error("child ended early ({exit}) after {acks} acks; stderr: {stderr}")]
    EndedEarly { exit: Exit, acks: u64, stderr: String },
    #[error("ack journal: {0}")]
    AckJournal(String),
    #[error("child was not alive at the kill ({0})")]
    DeadAtKill(String),
    #[error("the child wrote no ready record")]
    NoReady,
    #[error("{}{error}", process.as_ref().map(|p| format!("{p}: ")).unwrap_or_default())]
    Journal { process: Option<String>, error: JournalError },
    #[error("the child speaks protocol {version} but this driver speaks {}", spoken())]
    Protocol { version: u32 },
    #[error("{0}")]
    Recovery(RecoveryError),
    #[error("batch folder: {0}")]
    BatchFolder(String),
    #[error("writing a crash state: {0}")]
    WritingState(String),
    #[error("the census stopped at point {0}")]
    CensusStopped(u64),
    /// `--point N` beyond the points the census counted: a sweep that
    /// visited nothing must not pass.
    #[error("--point {point} is outside the plan: this sweep has kill points 1 to {points}")]
    PointOutside { point: u64, points: u64 },
    #[error("the recording stopped at point {0}")]
    RecordingStopped(u64),
    #[error("the child ended ({exit}) after {counted} kill points{}: {}", before.map(|n| format!(", before point {n}")).unwrap_or_default(), or_empty(stderr))]
    ChildEnded { exit: Exit, counted: u64, before: Option<u64>, stderr: String },
    /// A traced child's wait ran out; the start it was scaled from, and
    /// the path that start was measured on, say whether it was a fast
    /// path's deadline that an exec'd child could not meet.
    #[error(
        "the traced child overstayed the {deadline:?} deadline (scaled from the child's {path} start of {start:?})"
    )]
    TraceDeadline { deadline: Duration, start: Duration, path: &'static str },
    #[error("tracing the child: {0}")]
    Tracing(String),
    /// The seccomp filter could not be compiled.
    #[error("{0}")]
    Filter(String),
    #[error("park failed ({exit}): {stderr}")]
    Park { exit: Exit, stderr: String },
    #[error("park did not finish within the deadline")]
    ParkDeadline,
    #[error("copying the parked store into the race's folder: {0}")]
    ParkCopy(String),
    #[error("barrier {path}: {why}")]
    Barrier { path: String, why: String },
    #[error("could not start racer r{racer}: {why}")]
    RacerStart { racer: u32, why: String },
    #[error("racer r{racer} ended before the barrier ({exit}): {stderr}")]
    RacerBeforeBarrier { racer: u32, exit: Exit, stderr: String },
    #[error(
        "racers {pending:?} were not ready within {deadline:?} (up to {at_once} claimants start at once; the \
         child's {path} start took {start:?} in the preflight)"
    )]
    RacersNotReady { pending: Vec<u32>, deadline: Duration, at_once: u32, start: Duration, path: &'static str },
    #[error("racer r{racer} did not end within {deadline:?} of {since}")]
    RacerDeadline { racer: u32, deadline: Duration, since: Since },
    #[error("racer r0 {waited} within {deadline:?} of its release alone, the others held at their barrier")]
    R0Deadline { deadline: Duration, waited: R0Wait },
    #[error("racer r{racer} ended with {exit}, neither WON (0) nor LOST (10): {stderr}")]
    RacerEnded { racer: u32, exit: Exit, stderr: String },
    #[error("r{racer}: {error}")]
    RacerReap { racer: u32, error: ReapError },
    #[error("racer r{0} wrote no ready record")]
    RacerNoReady(u32),
    #[error("the tracer panicked")]
    TracerPanicked,
    #[error("a held schedule ran without its hold")]
    NoHold,
    #[error("the race's census did not split r0's paths")]
    NoSplit,
    #[error("r0 did not end its {path} as it must ({})", ends_of(ends))]
    R0OffPath { path: &'static str, ends: Vec<End> },
    #[error(
        "r0 finished its winning claim after {points} points, before its kill point {at}: the winning path was \
         not the census's, so it was not covered"
    )]
    WinningPointUnreached { points: u64, at: u64 },
    #[error(
        "point {point} fails only when recorded: the recorded state found {found}, but a real kill at point \
         {point} does not repeat it, nor did {tries} runs killed where their files first held that state again or \
         at its call once their ack journal held what it held there (none that reached it fired); the child does not \
         write the same bytes on every run (a clock, a random salt, a thread pool's scheduling), so its recorded \
         states do not stand for it: make its writes synchronous, or run with --replay off"
    )]
    OnlyRecorded { point: u32, found: Box<Outcome>, tries: u32 },
    #[error(
        "point {point} fails only when recorded: a race over the state r0's recorded claim left there found \
         {found}, but {races} races with r0 really killed at point {point} all passed; the child does not write \
         the same bytes on every run (a clock, a random salt, a thread pool's scheduling), so its recorded states \
         do not stand for it: make its writes synchronous, or run with --replay off"
    )]
    OnlyRecordedRace { point: u32, found: Box<Outcome>, races: u32 },
    #[error(
        "fires only through the {launcher}: there it found {found}, but with every operation exec'd, {}; \
         look for state the {launcher}'s processes made before their operation (a module-level cache a warm-up \
         fills; a random.Random() instance made at import, which a fork does not reseed: docs/PROTOCOL.md §9){}",
        plain_said(*at, plain, *runs),
        if *runs > 1 { ", or a fire too rare for a kill the scheduler places to repeat" } else { "" }
    )]
    OnlyForked { at: Site, launcher: String, found: Box<Outcome>, plain: Box<Outcome>, runs: u32 },
    #[error(
        "recovered in a batch the state found: {found}; recovered alone it passes: its recovery depends on the \
         states recovered beside it"
    )]
    BatchOnly { found: Box<Outcome> },
    #[error("cell `{0}` has no probe in this driver")]
    NoProbe(String),
    #[error("{0}")]
    Shape(MissingParam),
    #[error("a workload cell has no run without a kill (--kill none selects races)")]
    NoKill,
    #[error(
        "power-loss states need a log of every write, but after the recorded run {0} (the child writes in a way \
         the tracer does not see, e.g. through mmap)"
    )]
    UnloggedWrites(String),
    /// The harness's error while judging a power-loss state.
    #[error("{power}: {error}")]
    PowerLoss { power: PowerLoss, error: Box<Failure> },
    #[error(
        "after the run with a call made to fail, {0} (the child writes in a way the tracer does not see, e.g. \
         through mmap, so its log cannot stand for its files)"
    )]
    FaultUnlogged(String),
    /// The harness's error while judging what followed a failed call.
    #[error("{fault}: {error}")]
    Fault { fault: Fault, error: Box<Failure> },
}

impl Failure {
    /// The quote of the child's stderr this failure carries, if it carries
    /// one ([`crate::harness::quote`]).
    fn stderr(&self) -> Option<&str> {
        match self {
            Failure::EndedEarly { stderr, .. }
            | Failure::ChildEnded { stderr, .. }
            | Failure::Stalled { stderr, .. }
            | Failure::Park { stderr, .. }
            | Failure::RacerBeforeBarrier { stderr, .. }
            | Failure::RacerEnded { stderr, .. } => Some(stderr),
            Failure::Recovery(
                RecoveryError::Failed { stderr_tail, .. } | RecoveryError::StepFailed { stderr_tail, .. },
            ) => Some(stderr_tail),
            _ => None,
        }
    }

    /// A census's failure, said once: a failure already of a census is
    /// not wrapped again.
    pub fn census(f: Failure) -> Failure {
        match f {
            Failure::Census(_) => f,
            other => Failure::Census(Box::new(other)),
        }
    }

    /// Whether a deadline ended the wait (a stalled child, a recovery pass
    /// or a racer that overstayed): such an error's words add the flag
    /// that raises it and the start it was scaled from
    /// ([`crate::pipeline::result::fold`]).
    pub fn by_deadline(&self) -> bool {
        match self {
            Failure::Census(f) => f.by_deadline(),
            Failure::Recovery(e) => e.by_deadline(),
            Failure::Stalled { .. }
            | Failure::TraceDeadline { .. }
            | Failure::ParkDeadline
            | Failure::RacersNotReady { .. }
            | Failure::RacerDeadline { .. }
            | Failure::R0Deadline { .. } => true,
            _ => false,
        }
    }

    /// Whether a process of the trial ended saying it does not implement
    /// its operation (exit [`EXIT_UNSUPPORTED`], docs/PROTOCOL.md §2), and
    /// whether that process was `park` (else the workload's or a racer's).
    pub fn unsupported(&self) -> Option<Unsupported> {
        let said = |exit: &Exit| *exit == Exit::Code(EXIT_UNSUPPORTED);
        match self {
            Failure::Census(f) => f.unsupported(),
            Failure::Park { exit, .. } if said(exit) => Some(Unsupported::Park),
            Failure::EndedEarly { exit, .. } | Failure::ChildEnded { exit, .. } if said(exit) => {
                Some(Unsupported::Workload)
            }
            Failure::RacerBeforeBarrier { exit, .. } | Failure::RacerEnded { exit, .. } if said(exit) => {
                Some(Unsupported::Claim)
            }
            _ => None,
        }
    }
}

/// When a wait for the free racers' ends began: its deadline counts from there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// The release of the barrier they waited on.
    Release,
    /// The go of the held r0 (reads-first), after they were released and
    /// each waited for the write lock or ended.
    HeldGo,
}

impl std::fmt::Display for Since {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Since::Release => "the release of its barrier",
            Since::HeldGo => "the held r0's go (reads-first: after the others' release and their wait for the lock)",
        })
    }
}

/// What a wait for r0, released alone, waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum R0Wait {
    /// Its end (its winning claim, or its kill).
    End,
    /// Its hold at its claim's first write, or its end (reads-first).
    Held,
}

impl std::fmt::Display for R0Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            R0Wait::End => "did not end",
            R0Wait::Held => "neither reached its claim's first write (where reads-first holds it) nor ended",
        })
    }
}

/// Where a trial stands in its result, as a repro names it: a timed
/// trial or a race (`--trial N`), a sweep's kill point (`--point N`), or a
/// sweep's census, which stands for the whole sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Trial(u32),
    Point(u32),
    Sweep,
}

impl Site {
    /// The site `k` runs after this one: the next trials of a result (a
    /// new seeded instant each); a point or a sweep is the same each time.
    pub fn after(self, k: u32) -> Site {
        match self {
            Site::Trial(n) => Site::Trial(n.saturating_add(k)),
            other => other,
        }
    }
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Site::Trial(n) => write!(f, "trial {n}"),
            Site::Point(n) => write!(f, "point {n}"),
            Site::Sweep => f.write_str("the sweep"),
        }
    }
}

/// What the plain path's runs of a confirmation from `at` came to, for a
/// reason: `trial 1 passes`, `trials 1 to 8 pass`.
fn plain_said(at: Site, plain: &Outcome, runs: u32) -> String {
    let (what, verb) = match (at, runs) {
        (Site::Trial(n), 2..) => (format!("trials {n} to {}", n.saturating_add(runs - 1)), "pass"),
        _ => (at.to_string(), "passes"),
    };
    match plain {
        Outcome::Pass => format!("{what} {verb}"),
        other => format!("{what} did not fire (the last: {other})"),
    }
}

/// A stderr tail for a reason line; an empty one says so.
pub fn or_empty(tail: &str) -> &str {
    if tail.is_empty() { "(empty)" } else { tail }
}

/// How a race's processes ended, for a reader: `r0 killed, r1 exit 0`.
fn ends_of(ends: &[End]) -> String {
    let one = |(r, e): (usize, &End)| match e {
        End::Killed => format!("r{r} killed"),
        End::Exited(c) => format!("r{r} exit {c}"),
    };
    if ends.is_empty() {
        "no racer ended".into()
    } else {
        ends.iter().enumerate().map(one).collect::<Vec<_>>().join(", ")
    }
}

/// The step a run's interruption cut short.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Interruption {
    #[error("waiting for acks")]
    WaitingForAcks,
    #[error("between batches of crash states")]
    BetweenBatches,
    #[error("before the trial began")]
    BeforeTrial,
    #[error("the traced child was killed by the interrupt")]
    TracedChild,
    #[error("waiting for racer r{0} to finish")]
    Racer(u32),
    #[error("waiting for the racers at the barrier")]
    AtBarrier,
    #[error("waiting for racer r0 to end")]
    WaitingForR0,
    #[error("park was cut short")]
    Park,
    #[error("recovering power-loss states")]
    PowerStates,
    #[error("recovery pass {0} was cut short by the interrupt")]
    Recovery(u32),
    /// A step that failed in the moment the run was interrupted.
    #[error("then: {0}")]
    Then(Box<Failure>),
}

impl From<RecoveryError> for Outcome {
    /// A failed recovery is the harness's error, or the interrupt's; but a
    /// `dump` or a recovery step that ran and failed on a crash state is
    /// the store's own failure: the protocol promises both an answer for
    /// every crash state (a store that cannot restart from it is broken).
    fn from(e: RecoveryError) -> Outcome {
        match e {
            RecoveryError::Interrupted { pass } => Outcome::Interrupted(Interruption::Recovery(pass)),
            RecoveryError::Failed { .. } => Outcome::store_failure(Op::Dump, Failure::Recovery(e)),
            RecoveryError::StepFailed { op, .. } => Outcome::store_failure(op, Failure::Recovery(e)),
            e => Outcome::Error(Failure::Recovery(e)),
        }
    }
}

pub use crate::cells::store_failed;

impl Outcome {
    /// The store's own failure in `op`, after its ready record, where the
    /// protocol promises an answer (docs/DESIGN.md, "A store's own
    /// failure"): a fire, with the store's words, not the harness's error.
    /// An operation that says it is not implemented stays what it is (a
    /// skip, decided where results are folded).
    pub fn store_failure(op: Op, failure: Failure) -> Outcome {
        if failure.unsupported().is_some() {
            return Outcome::Error(failure);
        }
        let said = failure.to_string();
        // The store's own error first: the harness's words (how the child
        // ended, after how many acks) follow it, the line not said twice.
        let text = match failure.stderr().and_then(crate::harness::quote::leading_error) {
            Some(line) => {
                let rest = match said.replacen(&format!("{line} | "), "", 1) {
                    same if same == said => said.replacen(line, "that line", 1),
                    rest => rest,
                };
                format!("the store failed its `{op}`: {line} ({rest})")
            }
            None => format!("the store failed its `{op}`: {said}"),
        };
        Outcome::Fire(Finding { violations: vec![Violation::new(store_failed(op), text)], power: None, fault: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::inject::Injected;

    /// A store failure's reason starts with the store's own last error
    /// line (#53), not behind the harness's words and an ORM's traceback;
    /// the line is not said twice, and a stderr without one is quoted as it
    /// was.
    #[test]
    fn a_store_failure_leads_with_the_stores_own_error_line() {
        let orm = "Traceback (most recent call last):\n  File \"store.py\", line 9, in append\n\
            sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed: messages.id\n\
            [SQL: INSERT INTO messages VALUES (?, ?)]\n(Background on this error at: https://sqlalche.me/e/20/gkpj)\n";
        let ended = |stderr: &str| Failure::EndedEarly {
            exit: Exit::Code(1),
            acks: 3,
            stderr: crate::harness::quote::quote(stderr),
        };
        let text = Outcome::store_failure(Op::Append, ended(orm)).to_string();
        let line = "sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed: messages.id";
        assert!(text.starts_with(&format!("the store failed its `append`: {line} (child ended early")), "{text}");
        assert_eq!(text.matches("UNIQUE constraint failed").count(), 1, "{text}");
        assert!(text.ends_with("(Background on this error at: https://sqlalche.me/e/20/gkpj))"), "{text}");
        let alone = Outcome::store_failure(Op::Append, ended("ValueError: bad row\n")).to_string();
        assert_eq!(
            alone,
            "the store failed its `append`: ValueError: bad row (child ended early (exit code 1) after 3 acks; \
             stderr: that line)"
        );
        let plain = Outcome::store_failure(Op::Append, ended("exiting\n")).to_string();
        assert_eq!(
            plain,
            "the store failed its `append`: child ended early (exit code 1) after 3 acks; stderr: exiting"
        );
    }

    #[test]
    fn a_census_failure_is_said_once_however_often_it_is_wrapped() {
        let f = Failure::census(Failure::census(Failure::NoReady));
        assert_eq!(f.to_string(), "census: the child wrote no ready record");
        assert_eq!(Outcome::Error(f).of_census().to_string(), "census: the child wrote no ready record");
        assert_eq!(Outcome::Skip(Skip::Race("power")).of_census(), Outcome::Skip(Skip::Race("power")));
    }

    #[test]
    fn a_finding_reads_as_its_first_violation_and_counts_the_others() {
        let v = |k, t: &str| Violation::new(k, t);
        let one = Finding { violations: vec![v("lost-ack", "acked append m1 was lost")], power: None, fault: None };
        assert_eq!(one.to_string(), "acked append m1 was lost");
        let power =
            PowerLoss { point: 94, rule: "unlink of the journal at #92 was never made durable".into(), later: 2 };
        let two =
            Finding { violations: vec![v("lost-ack", "a"), v("count-mismatch", "b")], power: Some(power), fault: None };
        assert_eq!(
            two.to_string(),
            "power loss at #94: unlink of the journal at #92 was never made durable (and 2 later operations were \
             lost): a (and 1 more, in the details)"
        );
    }

    #[test]
    fn an_unsupported_exit_is_found_however_deep_and_says_which_process() {
        let code = Exit::Code(EXIT_UNSUPPORTED);
        let ended = Failure::ChildEnded { exit: code, counted: 0, before: None, stderr: String::new() };
        assert_eq!(Failure::census(ended).unsupported(), Some(Unsupported::Workload));
        assert_eq!(Failure::Park { exit: code, stderr: String::new() }.unsupported(), Some(Unsupported::Park));
        let racer = Failure::RacerEnded { racer: 1, exit: code, stderr: String::new() };
        assert_eq!(racer.unsupported(), Some(Unsupported::Claim));
        let other = Failure::EndedEarly { exit: Exit::Code(3), acks: 0, stderr: String::new() };
        assert_eq!(other.unsupported(), None, "any other exit is an error");
    }

    #[test]
    fn a_fault_finding_names_the_failed_call_before_the_power_loss_and_the_violation() {
        let fault = Fault {
            point: 57,
            call: "fsync of the wal".into(),
            injected: Injected::Failed(nix::errno::Errno::EIO),
            exit: Exit::Code(3),
            then: None,
        };
        let power = PowerLoss { point: 60, rule: "write of 1 byte to the wal at #55 was lost".into(), later: 0 };
        let v = vec![Violation::new("lost-ack", "acked append m3 was lost")];
        let f = Finding { violations: v, power: Some(power), fault: Some(Box::new(fault)) };
        assert_eq!(
            f.to_string(),
            "fault at #57: the fsync of the wal failed with EIO (the child then ended: exit code 3); power loss at \
             #60: write of 1 byte to the wal at #55 was lost: acked append m3 was lost"
        );
    }

    #[test]
    fn a_child_that_ended_early_says_where_and_an_empty_stderr_says_so() {
        let f = Failure::ChildEnded { exit: Exit::Code(3), counted: 7, before: Some(9), stderr: String::new() };
        assert_eq!(f.to_string(), "the child ended (exit code 3) after 7 kill points, before point 9: (empty)");
        let r = Failure::R0OffPath { path: "winning claim", ends: vec![End::Killed, End::Exited(10)] };
        assert_eq!(r.to_string(), "r0 did not end its winning claim as it must (r0 killed, r1 exit 10)");
    }

    /// A deadline names what it waited for, and from when its count ran.
    #[test]
    fn a_deadline_says_what_it_waited_for_from_when() {
        let d = Duration::from_secs(30);
        let stalled = Failure::Stalled { acks: 3, target: 40, deadline: d, stderr: "(empty)".into() };
        assert!(stalled.to_string().starts_with("child stalled: waited for 40 acks from its spawn and saw 3 within"));
        let racer = Failure::RacerDeadline { racer: 3, deadline: d, since: Since::Release };
        assert_eq!(racer.to_string(), "racer r3 did not end within 30s of the release of its barrier");
        let held = Failure::RacerDeadline { racer: 2, deadline: d, since: Since::HeldGo };
        assert!(held.to_string().contains("within 30s of the held r0's go (reads-first"), "{held}");
        let r0 = Failure::R0Deadline { deadline: d, waited: R0Wait::Held };
        assert_eq!(
            r0.to_string(),
            "racer r0 neither reached its claim's first write (where reads-first holds it) nor ended within 30s of \
             its release alone, the others held at their barrier"
        );
        let end = Failure::R0Deadline { deadline: d, waited: R0Wait::End };
        assert!(end.to_string().starts_with("racer r0 did not end within 30s of its release alone"));
    }
}
