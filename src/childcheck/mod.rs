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
//!
//! Every check of [`known::KNOWN`] is reported, as `ok`, `FAIL` or `not
//! run` with the reason (an earlier failure, or an operation the child does
//! not list in its ready record): a report never shrinks silently. The
//! checks are split by what they look at: [`clauses`] (exits, records, acks,
//! states, canonical bytes), [`states`] (`rotate`, and `dump` on every state
//! an operation that succeeded left), [`shapes`] (`rotate --shapes on`, for
//! a child that lists `rotate-shapes`), [`claim`] (the barrier and the race),
//! [`config`] (the config home), [`policy`] (a journal policy the store
//! copied rather than chose), [`sampling`] (acks against a stopped
//! child's store), [`determinism`] (one operation recorded twice, its
//! system calls compared), [`forkserver`] (a fork server's forks against exec) and
//! [`warmpool`] (a warm pool's processes against exec, each used once) and
//! [`contained`] (no process left its group).

mod append;
mod batch;
mod checker;
mod claim;
mod clauses;
mod config;
mod contained;
mod determinism;
mod effects;
mod forkserver;
pub mod known;
mod policy;
mod report;
mod sampling;
mod shapes;
mod states;
mod warmpool;
mod writers;

use std::path::Path;
use std::time::{Duration, Instant};

use crashcells_protocol::Op;

use crate::harness::{ChildCommand, Interrupt, Launcher};
use crate::pipeline::scale_deadline;
use checker::Checker;
pub use report::{CheckReport, Finding, SCHEMA, Status};

/// The name of a check's work folder in `--workdir`, after
/// [`crate::scratch::PREFIX`]: with the driver's pid, as a run id has it,
/// so that checks at once are told apart and a folder left by a killed
/// check names the process that made it (its owner file says it too).
pub fn work_prefix() -> String {
    format!("child-check-{}-", std::process::id())
}

/// The most children the check has started at once: a claimant held at
/// the barrier and a `dump` of its store.
const AT_ONCE: u32 = 2;

/// Which checks to run: every one, or (`--only`) those named, each with
/// the step that reports it (and `append`, which every step needs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Only(Option<Vec<String>>);

impl Only {
    /// `--only`'s names, each a known check, or the one line that says
    /// which is not.
    pub fn new(names: Vec<String>) -> Result<Only, String> {
        if let Some(bad) = names.iter().find(|n| known::find(n).is_none()) {
            let all: Vec<&str> = known::KNOWN.iter().map(|k| k.name).collect();
            return Err(format!("--only: no check `{bad}` (the checks: {})", all.join(", ")));
        }
        Ok(Only((!names.is_empty()).then_some(names)))
    }

    fn asks(&self, checks: &[&str]) -> bool {
        self.0.as_ref().is_none_or(|names| checks.iter().any(|c| names.iter().any(|n| n == c)))
    }
}

/// The checks `append`'s step reports: it always runs (the test that the
/// steps cover every known check reads it).
#[cfg(test)]
const APPEND: &[&str] = &["ready", "protocol-version", "ready-fields", "stop-after", "acks", "append-state"];

/// A step after `append`: the checks it reports, and how it runs.
type Step = (&'static [&'static str], fn(&mut Checker, &crashcells_protocol::Ready));

/// The steps after `append`, in the order they run: a store an earlier
/// step left is one the `dump` checks read.
fn steps() -> [Step; 15] {
    const CLAIMS: &[&str] = &["park", "claim-barrier", "claim-exit-codes", "claim-state"];
    const ROTATES: &[&str] = &["rotate", "rotate-state"];
    [
        (&["ack-after-effect"], |c, _| c.ack_after_effect()),
        (ROTATES, |c, r| c.when(r, &[Op::Rotate], ROTATES, Checker::rotate)),
        (&["rotate-shapes"], |c, r| c.rotate_shapes(r)),
        (CLAIMS, |c, r| c.when(r, &[Op::Park, Op::Claim], CLAIMS, Checker::claim)),
        (&["dump-canonical", "dump-deterministic"], |c, _| c.dumps()),
        (&["config-home", "config-errors"], |c, r| c.config_home(r)),
        (&[policy::JOURNAL_POLICY], |c, _| c.journal_policy()),
        (&["dump-batch"], |c, r| c.dump_batch(r)),
        (effects::CHECKS, |c, r| effects::check(c, r)),
        (writers::CHECKS, |c, r| writers::check(c, r)),
        (&["syscall-determinism"], |c, _| c.syscall_determinism()),
        (&["fork-server"], |c, r| c.fork_server(r)),
        (&["warm-pool"], |c, r| c.warm_pool(r)),
        // Last: it names what every earlier step's operations left behind.
        (&[contained::OWN_GROUP], |c, _| c.own_group()),
        (&[contained::OWN_FOLDER], |c, r| c.own_folder(r)),
    ]
}

/// Runs the check of `child` (every check, or those `only` names), with
/// trials in `work`, each wait bound by `asked` (`--deadline`) scaled as
/// `run` scales it ([`scaled`]).
pub fn check(child: &ChildCommand, work: &Path, asked: Duration, only: &Only) -> CheckReport {
    let (launcher, interrupt) = (Launcher::exec(child.clone()), Interrupt::new());
    let deadline = scaled(&launcher, work, asked, &interrupt);
    let bar = checker::progress_bar();
    let mut c = Checker {
        child: &launcher,
        work,
        deadline,
        interrupt,
        findings: Vec::new(),
        skipped: Vec::new(),
        states: Vec::new(),
        bar,
    };
    let ready = c.append();
    if let Some(ready) = &ready {
        for (checks, step) in steps() {
            match only.asks(checks) {
                true => step(&mut c, ready),
                false => c.skip(checks, "not asked for (--only)"),
            }
        }
    }
    c.bar.finish_and_clear();
    let checks = c.every_check();
    // A store's finding is the cell's to judge: the adapter still conforms.
    let conforming = ready.is_some() && checks.iter().all(|f| f.status != Status::Fail);
    CheckReport {
        schema: SCHEMA,
        child: child.display(),
        protocol: ready.as_ref().map(|r| r.protocol),
        sqlite_version: ready.as_ref().map(|r| r.sqlite_version.clone()),
        journal_mode: ready.as_ref().map(|r| r.journal_mode.clone()),
        conforming,
        checks,
    }
}

/// `asked` scaled by the one rule `run` follows ([`scale_deadline`]): by
/// how long the child takes to write its ready record alone, measured by a
/// preflight as `run`'s is (which waits as long as `asked` scaled for a
/// start that takes all of it). A child that writes none leaves `asked`:
/// the `ready` check says why. So the verdict does not change with the
/// machine's load, only the time it takes.
fn scaled(child: &Launcher, work: &Path, asked: Duration, interrupt: &Interrupt) -> Duration {
    let began = Instant::now();
    match crate::probe::preflight(child, work, scale_deadline(asked, asked, 1), interrupt) {
        Ok(_) => scale_deadline(asked, began.elapsed(), AT_ONCE),
        Err(_) => asked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--only` finds every known check's step: the steps and `append`
    /// report each known check once, so a new check cannot be left out of
    /// the table (it would never run under `--only`).
    #[test]
    fn the_steps_report_every_known_check_once() {
        let mut stepped: Vec<&str> =
            APPEND.iter().copied().chain(steps().iter().flat_map(|(c, _)| c.iter().copied())).collect();
        let mut known: Vec<&str> = known::KNOWN.iter().map(|k| k.name).collect();
        stepped.sort_unstable();
        known.sort_unstable();
        assert_eq!(stepped, known);
    }

    #[test]
    fn only_names_known_checks_and_asks_their_steps() {
        let err = Only::new(vec!["fork-server".into(), "forkserver".into()]).unwrap_err();
        assert!(err.starts_with("--only: no check `forkserver` (the checks: ready, "), "{err}");
        let only = Only::new(vec!["rotate-state".into()]).unwrap();
        assert!(only.asks(&["rotate", "rotate-state"]) && !only.asks(&["fork-server"]));
        assert!(Only::new(vec![]).unwrap().asks(&["fork-server"]), "no --only asks every check");
    }

    fn sample_report() -> CheckReport {
        let finding = |check, result| Finding::of(check, result);
        CheckReport {
            schema: SCHEMA,
            child: "python3 adapter.py".into(),
            protocol: Some(1),
            sqlite_version: Some("3.40.1".into()),
            journal_mode: Some("delete".into()),
            conforming: false,
            checks: vec![
                finding("ready", Ok("first line is a ready record for `append`".into())),
                finding("rotate", Err("rotate --stop-after 3 ended with exit code 1, expected exit code 0".into())),
                Finding::not_run("rotate-state", "needs a successful `rotate`".into()),
                finding("dump-canonical", Err("append state: sessions are not sorted by id".into())),
                Finding::store_finding(
                    "catch-up-arrived",
                    "outbox-exactly-once",
                    "obligation o0 was delivered 2 times (a double delivery)".into(),
                ),
            ],
        }
    }

    #[test]
    fn report_formats() {
        crate::snapshots().bind(|| {
            insta::assert_snapshot!("child_check.human", sample_report().to_human());
            insta::assert_json_snapshot!("child_check.json", sample_report());
        });
        assert_eq!(sample_report().exit_code(), crate::model::ExitCode::Fire);
    }

    /// The store's finding is reported as one and leaves the adapter
    /// conforming; a protocol fault noted under the same check stands.
    #[test]
    fn a_stores_finding_is_no_fault_of_the_adapter() {
        let child =
            Launcher::exec(ChildCommand { program: "child".into(), prefix: vec![], cwd: None, env: Vec::new() });
        let mut c = checker(&child, Path::new("."));
        c.note("catch-up-arrived", Ok("ran".into()));
        c.store_finding("catch-up-arrived", "outbox-exactly-once", "o0 delivered 2 times".into());
        c.note("catch-up-missing", Err("catch-up ended with exit code 3".into()));
        c.store_finding("catch-up-missing", "outbox-exactly-once", "ignored: the fault stands".into());
        let all = c.every_check();
        let of = |name: &str| all.iter().find(|f| f.check == name).unwrap();
        assert_eq!(
            (of("catch-up-arrived").status, of("catch-up-arrived").cell),
            (Status::Finding, Some("outbox-exactly-once"))
        );
        assert_eq!(of("catch-up-missing").status, Status::Fail);
        let mut r = sample_report();
        r.checks.retain(|f| f.status != Status::Fail);
        r.conforming = r.checks.iter().all(|f| f.status != Status::Fail);
        assert!(r.conforming);
        let human = r.to_human();
        assert!(human.contains("finding catch-up-arrived     obligation o0 was delivered 2 times (a double delivery) (the store's finding: cell `outbox-exactly-once` fires on it)"), "{human}");
        assert!(
            human.ends_with(
                "conforming: 1 of 3 checks pass, 0 fail, 1 finding of the store (not the adapter's fault), 1 not run\n"
            ),
            "{human}"
        );
    }

    fn checker<'a>(child: &'a Launcher, work: &'a Path) -> Checker<'a> {
        let bar = indicatif::ProgressBar::hidden();
        Checker {
            child,
            work,
            deadline: Duration::from_secs(1),
            interrupt: Interrupt::new(),
            findings: vec![],
            skipped: vec![],
            states: vec![],
            bar,
        }
    }

    #[test]
    fn every_known_check_is_listed_and_those_that_did_not_run_say_why() {
        let child =
            Launcher::exec(ChildCommand { program: "child".into(), prefix: vec![], cwd: None, env: Vec::new() });
        let mut c = checker(&child, Path::new("."));
        c.note("ready", Ok("yes".into()));
        c.note("rotate", Ok("ran".into()));
        c.note("rotate", Err("but its journal is torn".into()));
        c.note("rotate", Ok("ignored: a failure stands".into()));
        c.skipped.push(("park", "the child does not implement `park`".into()));
        // The bar counts each check once, however often it is noted.
        assert_eq!(c.bar.position(), 2, "ready and rotate, each once");
        let all = c.every_check();
        let names: Vec<&str> = all.iter().map(|f| f.check).collect();
        assert_eq!(names, known::KNOWN.iter().map(|k| k.name).collect::<Vec<_>>());
        let of = |name: &str| all.iter().find(|f| f.check == name).unwrap();
        assert_eq!((of("rotate").status, of("rotate").detail.as_str()), (Status::Fail, "but its journal is torn"));
        assert_eq!(of("rotate-state").status, Status::NotRun);
        assert_eq!(of("rotate-state").detail, "needs a successful `rotate`");
        assert_eq!(of("park").detail, "the child does not implement `park`");
    }
}
