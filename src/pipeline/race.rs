//! The race shape (cell 2): park a handoff, start N claimants, wait until
//! every one is at the barrier, release them at once, and judge.
//!
//! Crash model: in a free race nothing is killed; the race itself is the
//! probe. Under syscall kills, racer r0 is traced and killed at the entry of
//! its Nth file-mutating call (its locks die with it) while the others race
//! and must end WON or LOST. The race is real, so r0's path can differ from
//! the census's: a point r0 does not reach leaves r0 to finish its race,
//! which is judged the same way. Every racer must end WON (0), LOST (10) or,
//! for r0 at its point, killed; any other end is an `error`, never a loss.

use std::fs::File;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crashcells_protocol::{EXIT_LOST, EXIT_WON, Op, OpArgs, Ready};

use super::sweep::{Census, Filter, Sweepable, trace_outcome};
use super::verdict::{Ended, conclude};
use super::{Context, Outcome, Trial, TrialEnv};
use crate::audit::audit_leg;
use crate::cells::consume::HANDOFF;
use crate::cells::{Cell, End};
use crate::harness::{Cut, Exit, POLL, Running, Traced, interrupted, run_to_end};
use crate::journal;
use crate::kill::syscall::{Driven, Goal, Targets, drive};
use crate::matrix::Leg;
use crate::plan::Job;
use crate::report::KillPoint;

/// A race cell's job, as a race needs it.
pub struct Race<'a> {
    pub job: &'a Job,
    pub leg: &'a Leg,
    pub cell: &'a dyn Cell,
    pub ctx: &'a Context,
    pub racers: u32,
}

impl Sweepable for Race<'_> {
    fn census(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        self.count_points(filter)
    }

    fn at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        self.kill_at(filter, n, census)
    }
}

/// How racer r0 takes part: racing freely, or traced toward a goal.
#[derive(Clone, Copy)]
enum R0 {
    Free,
    Traced(Filter, Goal),
}

/// How a traced r0 ended.
enum Traced0 {
    Killed(KillPoint),
    /// Finished its race after passing this many points.
    Exited(Exit, u64),
}

/// What a race left before judging: every racer's end, r0 first.
struct Finished {
    ends: Vec<End>,
    kill_point: Option<KillPoint>,
    /// Points r0 passed, when it was traced and finished on its own.
    r0_points: Option<u64>,
}

impl Race<'_> {
    /// Trial `index` of a free race: nothing is killed.
    pub fn free(&self, index: u32) -> Trial {
        self.trial(index, &format!("t{index}"), R0::Free, None)
    }

    /// One trial of a sweep: r0 killed at point `n` while the others race.
    fn kill_at(&self, filter: Filter, n: u64, census: &Census) -> Trial {
        let index = u32::try_from(n).unwrap_or(u32::MAX);
        self.trial(index, &format!("p{n}"), R0::Traced(filter, Goal::KillAt(n)), Some(census))
    }

    /// r0 races alone, traced to its end: it always wins, so it passes the
    /// points of the longest path (the winning claim's commit included), and
    /// the count, with `--points` and every repro, does not depend on who won.
    fn count_points(&self, filter: Filter) -> Result<Census, Box<Trial>> {
        let fail = |env: Option<TrialEnv>, o: Outcome| {
            let t = Trial::ended(0, census_outcome(o));
            Box::new(match env {
                Some(env) => t.with_env(env),
                None => t,
            })
        };
        let env = self.env("census").map_err(|o| fail(None, o))?;
        let finished = match self.run(&env, 1, R0::Traced(filter, Goal::ToEnd)) {
            Ok(f) => f,
            Err(o) => return Err(fail(Some(env), o)),
        };
        let (Some(points), [End::Exited(EXIT_WON)]) = (finished.r0_points, finished.ends.as_slice()) else {
            let why = format!("r0 racing alone did not win ({:?})", finished.ends);
            return Err(fail(Some(env), Outcome::Error(why)));
        };
        match ready_of(&env, 0) {
            Ok(ready) => Ok(Census { points, audit: audit_leg(&env.db, &ready, self.leg), ready }),
            Err(why) => Err(fail(Some(env), Outcome::Error(why))),
        }
    }

    fn env(&self, label: &str) -> Result<TrialEnv, Outcome> {
        let label = format!("{}-{}-{label}", self.job.cell.id, self.leg.name);
        TrialEnv::new(&self.ctx.work_root, self.leg, &label).map_err(|e| Outcome::Error(format!("trial folder: {e}")))
    }

    fn trial(&self, index: u32, label: &str, r0: R0, census: Option<&Census>) -> Trial {
        let env = match self.env(label) {
            Ok(env) => env,
            Err(o) => return Trial::ended(index, o),
        };
        let mut trial = Trial::new(index);
        let outcome = match self.run(&env, self.racers, r0) {
            Ok(f) => self.judge(&env, f, census, &mut trial),
            Err(o) => o,
        };
        trial.conclude(outcome).with_env(env)
    }

    fn judge(&self, env: &TrialEnv, f: Finished, census: Option<&Census>, trial: &mut Trial) -> Outcome {
        trial.kill_point = f.kill_point;
        if f.r0_points.is_some() {
            trial.details.push("r0 finished its race before reaching its kill point".into());
        }
        let ended: Vec<Ended> = f
            .ends
            .iter()
            .enumerate()
            .map(|(r, &end)| Ended { name: format!("r{r}"), journal: acks_of(env, r as u32), end })
            .collect();
        conclude(self.cell, self.leg, self.ctx, env, &ended, census, trial)
    }

    /// Parks, runs `racers` claimants with r0 as asked, and returns how each ended.
    fn run(&self, env: &TrialEnv, racers: u32, r0: R0) -> Result<Finished, Outcome> {
        let barrier = self.park_behind_barrier(env)?;
        let done = AtomicBool::new(false);
        let r0_done = &done;
        let (traced, exits) = std::thread::scope(|s| {
            // ptrace binds r0 to the thread that spawns it, which must keep
            // resuming it while this thread runs the barrier.
            let tracer = match r0 {
                R0::Free => None,
                R0::Traced(filter, goal) => Some(s.spawn(move || {
                    let end = self.trace_r0(env, filter, goal);
                    r0_done.store(true, Ordering::SeqCst);
                    end
                })),
            };
            let first = if tracer.is_some() { 1 } else { 0 };
            let exits = self.run_free(env, first..racers, barrier, r0_done);
            let traced = tracer.map(|t| t.join().unwrap_or_else(|_| Err(Outcome::Error("the tracer panicked".into()))));
            (traced, exits)
        });
        let mut finished = Finished { ends: Vec::new(), kill_point: None, r0_points: None };
        match traced.transpose()? {
            Some(Traced0::Killed(kp)) => {
                finished.ends.push(End::Killed);
                finished.kill_point = Some(kp);
            }
            Some(Traced0::Exited(exit, counted)) => {
                finished.ends.push(racer_end(env, 0, exit)?);
                finished.r0_points = Some(counted);
            }
            None => {}
        }
        let first = finished.ends.len() as u32;
        for (r, exit) in (first..).zip(exits?) {
            finished.ends.push(racer_end(env, r, exit)?);
        }
        Ok(finished)
    }

    fn park_behind_barrier(&self, env: &TrialEnv) -> Result<File, Outcome> {
        let args = OpArgs::new(Op::Park).db(&env.db).session(HANDOFF).to_args();
        let cmd = self.ctx.child.command(&args, &env.home);
        let (exit, tail) = run_to_end(cmd, &env.path("park.stdout"), &env.stderr, self.ctx.deadline)
            .map_err(|e| Outcome::Error(format!("could not start the child `{}`: {e}", self.ctx.child.display())))?;
        match exit {
            Ok(Exit::Code(0)) => {}
            Ok(other) => return Err(Outcome::Error(format!("park failed ({other}): {tail}"))),
            Err(Cut::Deadline) => return Err(Outcome::Error("park did not finish within the deadline".into())),
            Err(Cut::Interrupted) => return Err(Outcome::Interrupted("park was cut short".into())),
        }
        // The racers block on this lock until the returned file is dropped,
        // which releases all of them at once.
        let path = env.path("barrier.lock");
        File::create(&path)
            .and_then(|f| f.lock().map(|()| f))
            .map_err(|e| Outcome::Error(format!("barrier {}: {e}", path.display())))
    }

    fn racer_command(&self, env: &TrialEnv, r: u32) -> Command {
        let args = OpArgs::new(Op::Claim)
            .db(&env.db)
            .acks(&acks_of(env, r))
            .session(HANDOFF)
            .barrier(&env.path("barrier.lock"))
            .claimant(&format!("r{r}"))
            .mutant(self.ctx.mutant());
        self.ctx.child.command(&args.to_args(), &env.home)
    }

    /// Spawns r0 traced and drives it to `goal`.
    fn trace_r0(&self, env: &TrialEnv, filter: Filter, goal: Goal) -> Result<Traced0, Outcome> {
        let stderr = env.path("racer-r0.stderr");
        let mut child = Traced::spawn(self.racer_command(env, 0), Some(&stderr), filter, self.ctx.deadline)
            .map_err(|e| trace_outcome(e, self.ctx))?;
        match drive(&mut child, &Targets::new(&env.db, &acks_of(env, 0)), goal) {
            Ok(Driven::At(p)) => {
                child.kill_and_reap().check().map_err(|e| Outcome::Error(format!("r0: {e}")))?;
                Ok(Traced0::Killed(p.kill_point(u32::try_from(p.ordinal).unwrap_or(u32::MAX), 0)))
            }
            Ok(Driven::Exited { exit, counted }) => Ok(Traced0::Exited(exit, counted)),
            Err(e) => Err(trace_outcome(e, self.ctx)),
        }
    }

    /// Spawns the free racers, waits until every racer is at the barrier
    /// (a traced r0 too, unless it already ended), releases them, and waits
    /// for the free ones to end.
    fn run_free(
        &self,
        env: &TrialEnv,
        racers: std::ops::Range<u32>,
        barrier: File,
        r0_done: &AtomicBool,
    ) -> Result<Vec<Exit>, Outcome> {
        let first = racers.start;
        let mut running = Vec::new();
        for r in racers.clone() {
            let stderr = env.path(&format!("racer-r{r}.stderr"));
            let child = Running::spawn(self.racer_command(env, r), Some(&stderr))
                .map_err(|e| Outcome::Error(format!("could not start racer r{r}: {e}")))?;
            running.push(child);
        }
        let ready = |r: u32| wrote_ready(env, r) || (r < first && r0_done.load(Ordering::SeqCst));
        self.wait_ready(0..racers.end, &ready, &mut running, first)?;
        drop(barrier);
        let end = Instant::now() + self.ctx.deadline;
        let mut exits = Vec::new();
        for (r, child) in (first..).zip(running.iter_mut()) {
            let exit = child.wait_until(end).map_err(|cut| match cut {
                Cut::Deadline => Outcome::Error(format!("racer r{r} did not finish within {:?}", self.ctx.deadline)),
                Cut::Interrupted => Outcome::Interrupted(format!("waiting for racer r{r} to finish")),
            })?;
            exits.push(exit);
        }
        Ok(exits)
    }

    /// Waits until every racer has written its ready record (it is then at
    /// the barrier, or about to block on it).
    fn wait_ready(
        &self,
        all: std::ops::Range<u32>,
        ready: &dyn Fn(u32) -> bool,
        running: &mut [Running],
        first: u32,
    ) -> Result<(), Outcome> {
        let end = Instant::now() + self.ctx.deadline;
        loop {
            let pending: Vec<u32> = all.clone().filter(|&r| !ready(r)).collect();
            if pending.is_empty() {
                return Ok(());
            }
            for (r, child) in (first..).zip(running.iter_mut()) {
                if let Some(exit) = child.try_exit() {
                    let why = format!("racer r{r} ended before the barrier ({exit}): {}", child.stderr_tail());
                    return Err(Outcome::Error(why));
                }
            }
            if interrupted().is_some() {
                return Err(Outcome::Interrupted("waiting for the racers at the barrier".into()));
            }
            if Instant::now() >= end {
                return Err(Outcome::Error(format!(
                    "racers {pending:?} were not ready within {:?}",
                    self.ctx.deadline
                )));
            }
            std::thread::sleep(POLL);
        }
    }
}

fn acks_of(env: &TrialEnv, r: u32) -> std::path::PathBuf {
    env.path(&format!("acks-r{r}.ndjson"))
}

fn wrote_ready(env: &TrialEnv, r: u32) -> bool {
    std::fs::metadata(acks_of(env, r)).is_ok_and(|m| m.len() > 0)
}

/// A racer that ended on its own must have ended WON or LOST.
fn racer_end(env: &TrialEnv, r: u32, exit: Exit) -> Result<End, Outcome> {
    match exit {
        Exit::Code(c @ (EXIT_WON | EXIT_LOST)) => Ok(End::Exited(c)),
        other => {
            let tail = crate::harness::stderr_tail(&env.path(&format!("racer-r{r}.stderr")));
            Err(Outcome::Error(format!("racer r{r} ended with {other}, neither WON (0) nor LOST (10): {tail}")))
        }
    }
}

/// Racer `r`'s ready record, or why there is none.
fn ready_of(env: &TrialEnv, r: u32) -> Result<Ready, String> {
    let bytes = std::fs::read(acks_of(env, r)).unwrap_or_default();
    match journal::parse(&bytes).map(|j| j.ready) {
        Ok(Some(ready)) => Ok(ready),
        Ok(None) => Err(format!("census: racer r{r} wrote no ready record")),
        Err(e) => Err(format!("census: {e}")),
    }
}

/// A census's failure names the census.
fn census_outcome(o: Outcome) -> Outcome {
    match o {
        Outcome::Error(why) if !why.starts_with("census") => Outcome::Error(format!("census: {why}")),
        other => other,
    }
}
