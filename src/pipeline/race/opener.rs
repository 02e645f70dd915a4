//! The `opener` schedule of cell 6 (issue 49, item 2): a fresh process
//! opens the store and dumps it beside a live writer held between two of
//! its transactions; the writer then goes on and acks.
//!
//! Crash model: nothing is killed. Stores repair on open: they sweep
//! orphans, finish or undo a half-done operation. A repair that takes a
//! live writer's committed but unfinished work for a crash's leftovers
//! (its messages before the session row it creates in a second
//! transaction) deletes what the writer then acks. Every other schedule
//! opens before its barrier, and recovery runs once the writer is dead, so
//! none could see it.
//!
//! r0 appends alone and is held just after its first commit past its
//! barrier, holding no lock a writer waits for (the between-transactions
//! hold, [`crate::pipeline::race::hold`]). r1, a fresh process, runs the
//! store's `open` (`co-append --stop-after 0`: open, make sure `main`
//! exists, no append) and then a `dump`, both to their end. r0 goes on to
//! its end.
//!
//! Clause: cell 6's, judged on the store r0 left (every acked append
//! survives once, in order); and the opener's own: what r1's dump showed
//! of r0's messages is a prefix of what r0 acked (an opener never sees a
//! message the writer did not go on to ack, nor misses one it acked
//! before).

use std::path::Path;
use std::sync::Mutex;

use crashcells_protocol::{APPEND_SESSION, Dump, Op, OpArgs};

use crate::cells::Violation;
use crate::harness::{Cut, Exit, Launch};
use crate::kill::TrialIndex;
use crate::pipeline::judge::census::Filter;
use crate::pipeline::judge::pending::Pending;
use crate::pipeline::judge::verdict::prepare;
use crate::pipeline::outcome::{Failure, Finding, Interruption, Outcome, Since};
use crate::pipeline::race::hold::{Hold, OPENER};
use crate::pipeline::race::job::{Order, R0, Race, Turn, acks_of};
use crate::pipeline::trial::Trial;
use crate::trialdir::TrialEnv;

/// The opener's run: r0's messages its dump showed, in its order.
type Opened = Result<Vec<String>, Outcome>;

impl Race<'_> {
    /// The opener schedule's trial: r0 held after its first commit, r1
    /// opening and dumping the store meanwhile.
    pub(super) fn opener(&self, filter: Filter, index: TrialIndex, said: &Mutex<Vec<String>>) -> Pending {
        let env = match self.env(OPENER) {
            Ok(env) => env,
            Err(f) => return Pending::ended(Trial::ended(index, Outcome::Error(f))),
        };
        let (hold, opened) = (Hold::after_commit(), Mutex::new(None::<Opened>));
        let turn = |_: Turn| {
            let run = self.open_and_dump(&env);
            *opened.lock().expect("no opener panics holding its result") = Some(run);
        };
        let mut trial = Trial::new(index);
        trial.schedule = Some(OPENER);
        let raced = self.run_turning(&env, 1, R0::Held(filter, &hold), Order::Opener, &turn);
        let opened = opened.into_inner().unwrap_or(None);
        let words = opener_said(hold.held_call().as_deref(), opened.as_ref());
        said.lock().expect("no schedule panics holding its words").push(words.clone());
        trial.details.push(words);
        let finished = match (raced, opened) {
            (Err(o), _) | (Ok(_), Some(Err(o))) => return Pending::ended(trial.conclude(o).with_env(env)),
            (Ok(f), Some(Ok(shown))) => match not_a_prefix(&shown, &acks_of(&env, 0)) {
                Some(v) => return Pending::ended(trial.conclude(fire(v)).with_env(env)),
                None => f,
            },
            (Ok(f), None) => f,
        };
        let prepared = prepare(&self.crash(&env, &finished, None), &mut trial);
        Pending::prepared(trial, env, prepared)
    }

    /// r1: the store's `open` (a `co-append` of no appends, on a barrier
    /// no one holds), then a `dump`; r0's messages the dump showed.
    fn open_and_dump(&self, env: &TrialEnv) -> Opened {
        let barrier = env.path("barrier-opener.lock");
        std::fs::write(&barrier, b"").map_err(|e| {
            Outcome::Error(Failure::Barrier { path: barrier.display().to_string(), why: e.to_string() })
        })?;
        let open = self.writer_args(env, 1, &barrier, Some(0));
        self.run_r1(env, &open, None, Op::CoAppend)?;
        let dump_out = env.path("opener-dump.stdout");
        let dump = OpArgs::new(Op::Dump).db(&env.db).to_args();
        self.run_r1(env, &dump, Some(&dump_out), Op::Dump)?;
        let text = std::fs::read_to_string(&dump_out).unwrap_or_default();
        let dump: Dump = serde_json::from_str(text.lines().next().unwrap_or_default()).map_err(|e| {
            Outcome::Error(Failure::RacerEnded { racer: 1, exit: Exit::Code(0), stderr: e.to_string() })
        })?;
        Ok(r0_messages(&dump))
    }

    /// Runs one of r1's operations to its end; a failure is the store's.
    fn run_r1(
        &self,
        env: &TrialEnv,
        args: &[std::ffi::OsString],
        stdout: Option<&Path>,
        op: Op,
    ) -> Result<(), Outcome> {
        let stderr = env.path("racer-r1.stderr");
        let launch = Launch { args, home: &env.home, trial: env.dir(), stdout, stderr: Some(&stderr) };
        let (exit, tail) = self
            .ctx
            .child
            .run_to_end(&launch, self.ctx.deadline, &self.ctx.interrupt)
            .map_err(|e| Outcome::Error(Failure::RacerStart { racer: 1, why: e.to_string() }))?;
        match exit {
            Ok(Exit::Code(0)) => Ok(()),
            Ok(exit) => Err(Outcome::store_failure(op, Failure::RacerEnded { racer: 1, exit, stderr: tail })),
            Err(Cut::Deadline) => Err(Outcome::Error(Failure::RacerDeadline {
                racer: 1,
                deadline: self.ctx.deadline,
                since: Since::Release,
            })),
            Err(Cut::Interrupted) => Err(Outcome::Interrupted(Interruption::Racer(1))),
        }
    }
}

/// r0's messages of `main` in a dump, in the dump's order.
fn r0_messages(dump: &Dump) -> Vec<String> {
    let of_r0 = |m: &&crashcells_protocol::DumpMessage| m.session_id == APPEND_SESSION && m.content.starts_with("r0-");
    dump.messages.iter().filter(|m| m.active).filter(of_r0).map(|m| m.content.clone()).collect()
}

/// The violation when `shown` (r0's messages the opener's dump showed) is
/// not a prefix of r0's acked appends (`r0-m0`, `r0-m1`, ... as its
/// journal at `acks` holds them once r0 ended).
fn not_a_prefix(shown: &[String], acks: &Path) -> Option<Violation> {
    let journal = crate::journal::parse(&std::fs::read(acks).unwrap_or_default()).unwrap_or_default();
    let acked: Vec<String> = (0..journal.acks.len()).map(|i| format!("r0-m{i}")).collect();
    let prefix = shown.len() <= acked.len() && acked[..shown.len()] == *shown;
    (!prefix).then(|| {
        Violation::new(
            "opener-not-a-prefix",
            format!(
                "the opener's dump beside the held writer showed r0's messages [{}], not a prefix of what r0 acked \
                 [{}]",
                shown.join(", "),
                acked.join(", ")
            ),
        )
    })
}

fn fire(v: Violation) -> Outcome {
    Outcome::Fire(Finding { violations: vec![v], power: None, fault: None })
}

/// What the schedule did, for the trial's details: where r0 was held and
/// what the opener's dump showed of it.
fn opener_said(held: Option<&str>, opened: Option<&Opened>) -> String {
    let Some(at) = held else {
        return format!(
            "schedule {OPENER}: r0's append let go of no write lock after its barrier (or kept a lock writers wait \
             for), so nothing was held and no process opened the store beside it"
        );
    };
    let dumped = match opened {
        Some(Ok(shown)) if shown.is_empty() => "and its dump showed none of r0's messages".to_string(),
        Some(Ok(shown)) => format!("and its dump showed {}", shown.join(", ")),
        Some(Err(_)) => "and failed (below)".to_string(),
        None => "(it never ran)".to_string(),
    };
    format!(
        "schedule {OPENER}: r0 held after its first commit past its barrier ({at}) while r1, a fresh process, \
         opened the store {dumped}, then let go"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(dir: &Path, acks: usize) -> std::path::PathBuf {
        let mut text = String::from(
            "{\"kind\":\"ready\",\"protocol\":2,\"pid\":7,\"op\":\"co-append\",\"sqlite_version\":\"3.54.1\",\"journal_mode\":\"wal\"}\n",
        );
        for i in 0..acks {
            text.push_str(&format!("{{\"kind\":\"ack\",\"op\":\"co-append\",\"i\":{i}}}\n"));
        }
        let path = dir.join("acks-r0.ndjson");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_openers_dump_must_be_a_prefix_of_what_r0_acked() {
        let dir = tempfile::tempdir().unwrap();
        let acks = journal(dir.path(), 2);
        let shown = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert!(not_a_prefix(&shown(&[]), &acks).is_none());
        assert!(not_a_prefix(&shown(&["r0-m0"]), &acks).is_none(), "committed before the hold, acked after");
        let v = not_a_prefix(&shown(&["r0-m1"]), &acks).expect("m0 missed");
        assert_eq!(v.kind, "opener-not-a-prefix");
        assert!(v.text.ends_with("showed r0's messages [r0-m1], not a prefix of what r0 acked [r0-m0, r0-m1]"));
        assert!(not_a_prefix(&shown(&["r0-m0", "r0-m1", "r0-m2"]), &acks).is_some(), "a message never acked");
    }

    #[test]
    fn the_detail_says_where_r0_was_held_and_what_the_opener_saw() {
        let at = Some("write acks length 38");
        let said = opener_said(at, Some(&Ok(vec!["r0-m0".into()])));
        assert_eq!(
            said,
            "schedule opener: r0 held after its first commit past its barrier (write acks length 38) while r1, a \
             fresh process, opened the store and its dump showed r0-m0, then let go"
        );
        assert!(opener_said(at, Some(&Ok(vec![]))).contains("its dump showed none of r0's messages"));
        assert!(opener_said(None, None).contains("nothing was held"));
    }
}
