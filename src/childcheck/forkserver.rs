//! `child-check`'s clause on the fork server (docs/PROTOCOL.md, "Fork
//! server"), for a child that lists `fork-server`: the server starts, writes
//! its line and runs one thread then; every operation the child lists runs
//! exec'd once and forked in two rounds through the one server (so that
//! state the server keeps between requests shows in the second, and state
//! it made before the first fork in both), and each forked run must end as
//! the exec'd one ends, write the same acks (their ready records naming the
//! forked process), leave the same transport and the same store; `dump`
//! through the server must print what an exec'd `dump` prints. Every forked
//! process starts as fresh as an exec'd one (a server that leaks a
//! descriptor fails with the one line naming it).
//!
//! A descriptor check cannot see memory: a cache a warm-up fills, or a
//! `random.Random()` instance made at import (every fork draws the same
//! numbers), shows only as a forked run that differs from an exec'd one.
//! This check names the first thing that differs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crashcells_protocol::HANDOFF_SESSION as HANDOFF;
use crashcells_protocol::{Op, OpArgs, Ready};

use super::checker::Checker;
use crate::harness::Exit;
use crate::harness::{Launch, Launcher, serves_forks};
use crate::probe::Scratch;

/// Appends of the forked and the exec'd run.
pub(super) const APPENDS: u64 = 3;
/// Rounds of forked runs through one server: the second meets a server
/// that has served every operation once.
const ROUNDS: usize = 2;

/// One step of a scenario: its label and its arguments in a folder.
type Step = (&'static str, fn(&Path) -> OpArgs);

/// A run of one or more operations that leaves a store to compare.
struct Scenario {
    name: &'static str,
    steps: Vec<Step>,
}

/// What a scenario left, as far as exec'd and forked runs must agree.
struct Left {
    dir: PathBuf,
    /// Each step's label and exit.
    exits: Vec<(&'static str, Exit)>,
    /// Each step's acks, the ready record's pid masked; and whether the
    /// ready record named the process that ran the step.
    acks: Vec<(&'static str, Option<String>)>,
    own_pid: Vec<(&'static str, u32, Option<u32>)>,
    transport: Option<String>,
}

fn acks_of(dir: &Path, label: &str) -> PathBuf {
    dir.join(format!("acks-{label}.ndjson"))
}

fn db(dir: &Path) -> PathBuf {
    dir.join("store.db")
}

/// The scenarios of the operations `ready` lists: each operation the
/// protocol has, `dump` apart (it runs on every store they leave).
fn scenarios(ready: &Ready) -> Vec<Scenario> {
    let mut out = vec![Scenario {
        name: "append",
        steps: vec![("append", |d| OpArgs::new(Op::Append).db(&db(d)).acks(&acks_of(d, "append")).stop_after(APPENDS))],
    }];
    if ready.implements(Op::Rotate) {
        let rotate: Step = ("rotate", |d| OpArgs::new(Op::Rotate).db(&db(d)).acks(&acks_of(d, "rotate")).stop_after(3));
        out.push(Scenario { name: "rotate", steps: vec![rotate] });
    }
    // `rotate-shapes` qualifies `rotate`: a child that lists it without
    // `rotate` (a store that dropped rotation, its word left behind) has no
    // rotation to run forked, and its exec'd run would leave no store.
    if ready.implements(Op::Rotate) && ready.rotates_in_shapes() {
        let shapes: Step =
            ("shapes", |d| OpArgs::new(Op::Rotate).db(&db(d)).acks(&acks_of(d, "shapes")).shapes().stop_after(4));
        out.push(Scenario { name: "rotate --shapes on", steps: vec![shapes] });
    }
    if ready.implements(Op::Park) && ready.implements(Op::Claim) {
        let park: Step = ("park", |d| OpArgs::new(Op::Park).db(&db(d)).session(HANDOFF));
        let r0: Step = ("r0", |d| claim(d, "r0"));
        let r1: Step = ("r1", |d| claim(d, "r1"));
        out.push(Scenario { name: "park, then two claims", steps: vec![park, r0, r1] });
    }
    if ready.implements(Op::Fork) {
        let fork: Step =
            ("fork", |d| OpArgs::new(Op::Fork).db(&db(d)).acks(&acks_of(d, "fork")).seed(10).stop_after(9));
        out.push(Scenario { name: "fork", steps: vec![fork] });
    }
    if ready.implements(Op::Deliver) {
        let deliver: Step = ("deliver", |d| {
            OpArgs::new(Op::Deliver).db(&db(d)).acks(&acks_of(d, "deliver")).transport(&d.join("wire")).stop_after(3)
        });
        out.push(Scenario { name: "deliver", steps: vec![deliver] });
    }
    if ready.implements(Op::Deliver) && ready.implements(Op::CatchUp) {
        // A folder is a transport no send can write: o0 is left attempting.
        let failed: Step = ("failed-send", |d| {
            OpArgs::new(Op::Deliver)
                .db(&db(d))
                .acks(&acks_of(d, "failed-send"))
                .transport(&d.join("unwritable"))
                .stop_after(1)
        });
        let catch_up: Step = ("catch-up", |d| OpArgs::new(Op::CatchUp).db(&db(d)).transport(&d.join("wire")));
        out.push(Scenario { name: "a failed send, then catch-up", steps: vec![failed, catch_up] });
    }
    out
}

fn claim(d: &Path, name: &str) -> OpArgs {
    OpArgs::new(Op::Claim)
        .db(&db(d))
        .acks(&acks_of(d, name))
        .session(HANDOFF)
        .barrier(&d.join("barrier.lock"))
        .claimant(name)
}

impl Checker<'_> {
    /// Checks the fork server, if `ready` lists one.
    pub(super) fn fork_server(&mut self, ready: &Ready) {
        if !serves_forks(ready) {
            let why = "the child does not list `fork-server`: every operation is exec'd";
            self.skipped.push(("fork-server", why.into()));
            return;
        }
        let found = self.served_like_exec(ready);
        self.note("fork-server", found);
    }

    fn served_like_exec(&mut self, ready: &Ready) -> Result<String, String> {
        let s = self.scratch("fork-server", None).ok_or_else(|| "no scratch folder".to_string())?;
        let forks = Launcher::with_fork_server(
            (**self.child).clone(),
            &s.path("server.stderr"),
            self.deadline,
            &self.interrupt,
        )
        .map_err(|e| e.to_string())?;
        let found = self.rounds(&forks, &s, ready);
        // A server that ended or stopped answering during the rounds had
        // its later operations exec'd: what they did proves nothing of it,
        // and what failed after it is its doing.
        match forks.last_fall() {
            Some(fall) => Err(format!("the fork server fell over during the check: {fall}")),
            None => found,
        }
    }

    /// Every scenario exec'd once, then forked through `forks` in
    /// [`ROUNDS`] rounds, each compared with the exec'd one.
    fn rounds(&self, forks: &Launcher, s: &Scratch, ready: &Ready) -> Result<String, String> {
        let exec = self.child.clone();
        let all = scenarios(ready);
        let mut requests = 0;
        let execd: Vec<Left> = all
            .iter()
            .map(|sc| self.left_by(&exec, s, sc, &format!("exec-{}", sc.steps[0].0)))
            .collect::<Result<_, _>>()?;
        // Each exec'd store's dump, made once its first forked twin gets that
        // far: every round compares with the same store.
        let mut dumps: Vec<Option<String>> = vec![None; all.len()];
        for round in 1..=ROUNDS {
            for ((sc, want), dump) in all.iter().zip(&execd).zip(&mut dumps) {
                let got = self.left_by(forks, s, sc, &format!("forked{round}-{}", sc.steps[0].0))?;
                requests += sc.steps.len();
                let at =
                    format!("the forked `{}` (round {round} of {ROUNDS}, request {requests} of the server)", sc.name);
                self.same_as_exec(forks, s, &got, (want, dump)).map_err(|what| format!("{at}: {what}{HINT}"))?;
                requests += 1;
            }
        }
        let names: Vec<&str> = all.iter().map(|sc| sc.name).collect();
        Ok(format!(
            "started with one thread; {} forked in {ROUNDS} rounds ({requests} requests to one server) did what \
             exec'd ones do, each process fresh",
            names.join(", ")
        ))
    }

    /// Runs the steps of `sc` in a folder `name` of `s`, each started by `l`
    /// and run to its end.
    fn left_by(&self, l: &Launcher, s: &Scratch, sc: &Scenario, name: &str) -> Result<Left, String> {
        let dir = s.path(name);
        std::fs::create_dir_all(dir.join("unwritable")).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("barrier.lock"), b"").map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut left = Left { dir: dir.clone(), exits: vec![], acks: vec![], own_pid: vec![], transport: None };
        for (label, args) in &sc.steps {
            let (exit, pid) = self.step(l, s, &dir, label, &args(&dir))?;
            left.exits.push((label, exit));
            let acks = acks_of(&dir, label);
            if acks.exists() {
                left.acks.push((label, masked_acks(&acks)));
                left.own_pid.push((label, pid, ready_pid(&acks)));
            }
        }
        left.transport = std::fs::read_to_string(dir.join("wire")).ok();
        Ok(left)
    }

    /// One step to its end: how it ended and its process id.
    fn step(&self, l: &Launcher, s: &Scratch, dir: &Path, label: &str, args: &OpArgs) -> Result<(Exit, u32), String> {
        let stderr = dir.join(format!("{label}.stderr"));
        let launch = Launch { args: &args.to_args(), home: &s.home, trial: dir, stdout: None, stderr: Some(&stderr) };
        let mut running = l.spawn(&launch, self.deadline, &self.interrupt).map_err(|e| e.to_string())?;
        // What its ready record names: its pid in the run's namespace.
        let pid = running.own_pid();
        match running.wait_until(Instant::now() + self.deadline, &self.interrupt) {
            Ok(exit) => Ok((exit, pid)),
            Err(cut) => Err(format!("`{label}` in {} did not end: {cut}", dir.display())),
        }
    }

    /// The first way the forked run `got` differs from the exec'd `want`
    /// (with its store's dump, once made).
    fn same_as_exec(
        &self,
        forks: &Launcher,
        s: &Scratch,
        got: &Left,
        (want, dump): (&Left, &mut Option<String>),
    ) -> Result<(), String> {
        for ((label, forked), (_, execd)) in got.exits.iter().zip(&want.exits) {
            if forked != execd {
                return Err(format!("`{label}` ended with {forked} forked, {execd} exec'd"));
            }
        }
        if let Some((label, pid, said)) = got.own_pid.iter().find(|(_, pid, said)| *said != Some(*pid)) {
            return Err(format!("`{label}` ran as process {pid}, but its ready record names {said:?}"));
        }
        for ((label, forked), (_, execd)) in got.acks.iter().zip(&want.acks) {
            if forked != execd {
                return Err(format!("`{label}` wrote other acks forked than exec'd"));
            }
        }
        if got.transport != want.transport {
            return Err("it left another transport than exec'd".into());
        }
        let execd = match dump {
            Some(made) => made.clone(),
            None => dump.insert(self.dump_with(self.child, s, &want.dir, "dump-exec")?).clone(),
        };
        let forked = self.dump_with(self.child, s, &got.dir, "dump-forked")?;
        if forked != execd {
            return Err(format!("it left another store than exec'd: {}", first_difference(&forked, &execd)));
        }
        if self.dump_with(forks, s, &got.dir, "dump-through-server")? != forked {
            return Err("`dump` through the server printed other bytes than `dump` exec'd, of the same store".into());
        }
        Ok(())
    }

    /// `append --stop-after 3` in folder `name` of `s`, run to its end: the
    /// folder and the process's pid.
    pub(super) fn append_in(&self, l: &Launcher, s: &Scratch, name: &str) -> Result<(PathBuf, u32), String> {
        let dir = s.path(name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let args = OpArgs::new(Op::Append).db(&dir.join("store.db")).acks(&dir.join("acks.ndjson")).stop_after(APPENDS);
        match self.step(l, s, &dir, "append", &args)? {
            (Exit::Code(0), pid) => Ok((dir, pid)),
            (exit, _) => Err(format!(
                "`append` ({name}) ended with {exit}: {}",
                crate::harness::stderr_tail(&dir.join("append.stderr"))
            )),
        }
    }

    /// `dump` of the store in `dir`, started by `l`: its stdout.
    pub(super) fn dump_with(&self, l: &Launcher, s: &Scratch, dir: &Path, label: &str) -> Result<String, String> {
        let args = OpArgs::new(Op::Dump).db(&dir.join("store.db")).to_args();
        let (stdout, stderr) = (dir.join(format!("{label}.stdout")), dir.join(format!("{label}.stderr")));
        let launch = Launch { args: &args, home: &s.home, trial: dir, stdout: Some(&stdout), stderr: Some(&stderr) };
        match l.run_to_end(&launch, self.deadline, &self.interrupt).map_err(|e| e.to_string())? {
            (Ok(Exit::Code(0)), _) => std::fs::read_to_string(&stdout).map_err(|e| e.to_string()),
            (Ok(exit), tail) => Err(format!("`dump` ({label}) ended with {exit}: {tail}")),
            (Err(cut), _) => Err(format!("`dump` ({label}) did not end: {cut}")),
        }
    }
}

/// What a forked run that differs from an exec'd one points to.
const HINT: &str = "; look for state the server made before the fork or keeps between requests (a cache a warm-up \
                    fills; a `random.Random()` instance made at import, which a fork does not reseed: \
                    docs/PROTOCOL.md §9)";

/// Where two dumps part: the first differing byte and a little of each.
fn first_difference(forked: &str, execd: &str) -> String {
    let at = forked.bytes().zip(execd.bytes()).position(|(a, b)| a != b).unwrap_or(forked.len().min(execd.len()));
    let from = at.saturating_sub(20);
    let part = |t: &str| crate::journal::snippet(&t.as_bytes()[from.min(t.len())..(at + 40).min(t.len())]);
    format!("from byte {at}, forked {} where exec'd {}", part(forked), part(execd))
}

pub(super) fn ready_pid(acks: &Path) -> Option<u32> {
    let bytes = std::fs::read(acks).ok()?;
    crate::journal::parse(&bytes).ok()?.ready.map(|r| r.pid)
}

/// The ack journal with the ready record's pid left out (it is the process's own).
pub(super) fn masked_acks(acks: &Path) -> Option<String> {
    let bytes = std::fs::read(acks).ok()?;
    let journal = crate::journal::parse(&bytes).ok()?;
    let ready = journal.ready.map(|r| crashcells_protocol::Ready { pid: 0, ..r });
    Some(format!("{ready:?} {:?}", journal.acks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_shapes_without_rotate_is_no_scenario() {
        let ready = |ops: &[&str]| -> Ready {
            serde_json::from_value(serde_json::json!({
                "protocol": 2, "pid": 1, "op": "append", "sqlite_version": "3.53.2",
                "journal_mode": "wal", "operations": ops,
            }))
            .unwrap()
        };
        let names = |r: &Ready| scenarios(r).iter().map(|s| s.name).collect::<Vec<_>>();
        assert!(!names(&ready(&["append", "dump", "rotate-shapes"])).contains(&"rotate --shapes on"));
        assert!(names(&ready(&["append", "dump", "rotate", "rotate-shapes"])).contains(&"rotate --shapes on"));
    }

    #[test]
    fn the_first_difference_of_two_dumps_is_shown_with_both_sides() {
        let d = first_difference(r#"{"sessions":[{"id":"main"}]}"#, r#"{"sessions":[]}"#);
        assert!(d.starts_with("from byte 13, forked "), "{d}");
        assert!(d.contains("main") && d.contains("[]"), "{d}");
    }
}
