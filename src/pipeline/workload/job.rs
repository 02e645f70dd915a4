//! A workload cell's job (one child runs its operation until killed, cells
//! 1, 3, 4 and 5): its trial folders, the child's command for a run until
//! killed or for a sweep's run to its own end, the files whose calls are
//! kill points, and the judgement of a killed child's folder. Its crash
//! sources are in files of their own: [`crate::pipeline::workload::timed`], [`crate::pipeline::workload::point`],
//! [`crate::pipeline::workload::recorded`], [`crate::pipeline::workload::power`].
//!
//! Crash model: a sweep's workload runs `--stop-after` its operations to
//! the child's own end, so the census counts every point, the close of the
//! store included (in WAL, the last connection's checkpoint).

use std::ffi::OsString;
use std::sync::atomic::{AtomicU64, Ordering};

use crashcells_protocol::{Op, OpArgs, Ready};

use crate::harness::{Exit, Launch, Traced};
use crate::journal;
use crate::kill::TrialIndex;
use crate::kill::syscall::{FileKind, Targets};
use crate::legaudit::audit_leg;
use crate::pipeline::judge::census::{Census, Filter, trace_outcome};
use crate::pipeline::judge::pending::{MakeTrial, in_order};
use crate::pipeline::judge::verdict::{Crash, Ended, conclude};
use crate::pipeline::outcome::{Failure, Outcome};
use crate::pipeline::run::context::{Context, Scope};
use crate::pipeline::trial::Trial;
use crate::trialdir::TrialEnv;

/// A workload cell's job, as its crash sources need it.
pub struct Workload<'a> {
    /// Its job, leg, cell and context (`w.ctx` reads through it).
    pub scope: Scope<'a>,
    pub op: Op,
    /// A sweep's workload: this many operations (`--stop-after`), then the
    /// child ends on its own; every point on the way is a crash state.
    pub sweep_acks: u64,
    /// The step each recovery pass runs before `dump`, if any.
    pub recovery: Option<Op>,
    /// The catalog's `checkpoint_ops`: on a WAL leg, how far a sweep's
    /// workload may run on to cross a checkpoint and the WAL's restart.
    pub checkpoint_ops: Option<u64>,
    /// The sweep's workload, in operations, once settled (`sweep_acks`, or
    /// more on a WAL leg: [`Workload::recording`]); every run of the sweep,
    /// the real kills that confirm a fire included, runs this many.
    pub length: AtomicU64,
}

impl<'a> std::ops::Deref for Workload<'a> {
    type Target = Scope<'a>;

    fn deref(&self) -> &Scope<'a> {
        &self.scope
    }
}

impl Workload<'_> {
    /// This workload run by `ctx` (another launcher: the plain path that
    /// confirms a fire, [`crate::pipeline::plain::confirm`]), at the length it settled on.
    pub fn on<'b>(&'b self, ctx: &'b Context) -> Workload<'b> {
        Workload {
            scope: self.scope.on(ctx),
            op: self.op,
            sweep_acks: self.sweep_acks,
            recovery: self.recovery,
            checkpoint_ops: self.checkpoint_ops,
            length: AtomicU64::new(self.length.load(Ordering::SeqCst)),
        }
    }

    /// A private folder for a sweep's trial `label`: every trial of a sweep
    /// runs the same seeded workload as its census, so a kill point means the
    /// same call in each.
    pub fn env(&self, label: &str) -> Result<TrialEnv, Failure> {
        let mut env = self.seeded_env(label, &[])?;
        // A sweep covers the shapes of its operation whatever the run's seed:
        // the cell picks, from the derived seed, one whose workload shows them.
        env.seed = self.cell.sweep_seed(env.seed, self.sweep_acks);
        Ok(env)
    }

    /// A private folder for trial `label`, whose workload is seeded with
    /// the seed derived from `parts`.
    pub fn seeded_env(&self, label: &str, parts: &[&str]) -> Result<TrialEnv, Failure> {
        let mut env = self.folder(label)?;
        env.seed = crate::seed::derive(self.job.seed, &[parts, &["workload"]].concat());
        env.recovery_step = self.recovery.map(|op| OpArgs::new(op).mutant(self.ctx.mutant()));
        Ok(env)
    }

    /// The workload's arguments in `env`, with the flags its operation takes.
    fn args(&self, env: &TrialEnv) -> OpArgs {
        let mut args = OpArgs::new(self.op).db(&env.db).acks(&env.acks).mutant(self.ctx.mutant());
        if self.op.seeded() {
            args = args.seed(env.seed);
        }
        if self.op.uses_transport() {
            args = args.transport(&env.transport);
        }
        // Every shape of a rotation, for a child that says it can (an
        // optional word of its ready record); others rotate as in version 1.
        if self.op == Op::Rotate && self.ctx.child_ready.as_ref().is_some_and(Ready::rotates_in_shapes) {
            args = args.shapes();
        }
        args
    }

    /// The workload's arguments in `env`: run until killed, or (a sweep's)
    /// its operations, then the child's own end.
    pub fn op_args(&self, env: &TrialEnv, sweep: bool) -> Vec<OsString> {
        let args = self.args(env);
        if sweep { args.stop_after(self.length.load(Ordering::SeqCst)) } else { args }.to_args()
    }

    /// The workload's operation `args` in `env`, as the launcher starts it
    /// (exec'd, or forked by the child's fork server): its stderr to the
    /// trial's file, nothing on stdout.
    pub fn launch<'e>(&self, env: &'e TrialEnv, args: &'e [OsString]) -> Launch<'e> {
        Launch { args, home: &env.home, trial: env.dir(), stdout: None, stderr: Some(&env.stderr) }
    }

    /// The workload's sweep operation in `env` (its `--stop-after` the
    /// sweep's length), started traced under `filter` by the run's
    /// launcher: what every syscall crash source kills or records.
    pub fn spawn_traced(&self, env: &TrialEnv, filter: Filter) -> Result<Traced, Outcome> {
        let args = self.op_args(env, true);
        self.ctx
            .child
            .spawn_traced(&self.launch(env, &args), filter, self.ctx.deadline, &self.ctx.interrupt)
            .map_err(|e| trace_outcome(e, self.ctx))
    }

    /// The files whose calls are kill points: the store's, the ack journal,
    /// and the transport of a workload that sends.
    pub fn targets(&self, env: &TrialEnv) -> Targets {
        Targets::new(&env.db, &env.acks).with(&env.transport, FileKind::Transport)
    }

    /// What a killed child left in `env`, as the verdict reads it; `census`
    /// stands for the leg audit of a sweep's points.
    pub fn crash<'e>(&'e self, env: &'e TrialEnv, census: Option<&'e Census>) -> Crash<'e> {
        Crash {
            cell: self.cell,
            leg: self.leg,
            db: &env.db,
            ended: vec![Ended::killed(&env.acks)],
            seed: env.seed,
            census,
        }
    }

    /// A killed child's folder to a verdict, recovered on its own.
    pub fn judge(&self, env: &TrialEnv, census: Option<&Census>, trial: &mut Trial) -> Outcome {
        let recover = || self.ctx.recover_alone(env).map_err(Outcome::from);
        conclude(&self.crash(env, census), trial, recover)
    }

    /// Runs the trials `indices` (`run` makes one: a timed trial, a
    /// re-executed point) through the one driver ([`crate::pipeline::judge::pending`]),
    /// `census` standing for a sweep's points' leg audit.
    pub fn trials(&self, census: Option<&Census>, indices: &[TrialIndex], run: &MakeTrial) -> Vec<Trial> {
        in_order(self.scope, census, self.env("recovery"), indices, run)
    }

    /// What a census learns from a run to the end that passed `total`
    /// points: the child's ready record and the leg audit of its files.
    pub fn census_of(&self, env: &TrialEnv, total: u64) -> Result<Census, Failure> {
        let bytes = std::fs::read(&env.acks).unwrap_or_default();
        match journal::parse(&bytes).map(|j| j.ready) {
            Ok(Some(ready)) => {
                Ok(Census { points: total, windows: None, audit: audit_leg(&env.db, &ready, self.leg), ready })
            }
            Ok(None) => Err(Failure::census(Failure::NoReady)),
            Err(error) => Err(Failure::census(Failure::Journal { process: None, error })),
        }
    }
}

impl Workload<'_> {
    /// A workload child that ended on its own with an error: the store's
    /// failure if it wrote its ready record first (an operation that failed
    /// without a kill), else the harness's error (it broke the protocol).
    pub fn ended_badly(&self, env: &TrialEnv, failure: Failure) -> Outcome {
        let bytes = std::fs::read(&env.acks).unwrap_or_default();
        let ready = journal::parse(&bytes).ok().and_then(|j| j.ready).is_some();
        if ready { Outcome::store_failure(self.op, failure) } else { Outcome::Error(failure) }
    }
}

/// A sweep's workload ends with exit code 0 after its `--stop-after`
/// operations; anything else is the child's failure.
pub fn ended_well(exit: Exit, counted: u64, tail: &str) -> Result<u64, Failure> {
    match exit {
        Exit::Code(0) => Ok(counted),
        exit => Err(Failure::ChildEnded { exit, counted, before: None, stderr: tail.to_string() }),
    }
}

/// A trial that ended before it began, with the failure in its own folder
/// when it has one.
pub fn ended_with(env: Option<TrialEnv>, outcome: Outcome) -> Box<Trial> {
    let t = Trial::ended(TrialIndex::CENSUS, outcome);
    Box::new(match env {
        Some(env) => t.with_env(env),
        None => t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::matrix::Leg;
    use crate::plan::{Job, KillMode};

    fn ready(operations: &[&str]) -> crashcells_protocol::Ready {
        let text = format!(
            r#"{{"protocol":2,"pid":1,"op":"append","sqlite_version":"3.54.1","journal_mode":"wal","operations":{}}}"#,
            serde_json::to_string(operations).unwrap()
        );
        serde_json::from_str(&text).unwrap()
    }

    /// Runs `f` on a workload of `op` for cell `id` (run seed 7, a sweep of
    /// `sweep_acks`), for a child whose preflight listed `operations`.
    fn with_workload<T>(id: &str, op: Op, sweep_acks: u64, operations: &[&str], f: impl Fn(&Workload) -> T) -> T {
        let spec = Catalog::embedded().unwrap().find(id).unwrap().clone();
        let leg = Leg::new("wal", None, None);
        let job = Job { cell: spec, leg: Some(leg.clone()), kill: KillMode::Syscall, seed: 7 };
        let ctx = Context::for_tests(1, Some(ready(operations)));
        let cell = crate::cells::find(id).unwrap();
        let length = AtomicU64::new(sweep_acks);
        f(&Workload {
            scope: Scope { job: &job, leg: &leg, cell, ctx: &ctx },
            op,
            sweep_acks,
            recovery: None,
            checkpoint_ops: None,
            length,
        })
    }

    /// The words of `op`'s sweep command in a trial folder, for a child
    /// whose preflight listed `operations`.
    fn words(op: Op, operations: &[&str]) -> Vec<String> {
        with_workload("rotation-atomicity", op, 4, operations, |w| {
            let env = w.env("t").unwrap();
            w.args(&env).to_args().iter().map(|a| a.to_string_lossy().into_owned()).collect()
        })
    }

    /// A sweep's `fork` runs the seed the cell picked for it, a timed trial
    /// the seed as drawn.
    #[test]
    fn a_sweep_runs_the_seed_its_cell_picks_and_a_timed_trial_the_drawn_one() {
        use crate::cells::fork::{cuts, sweep_seed};
        let (swept, timed) = with_workload("fork-determinism", Op::Fork, 20, &["fork"], |w| {
            (w.env("census").unwrap().seed, w.seeded_env("t0", &["0"]).unwrap().seed)
        });
        let drawn = crate::seed::derive(7, &["workload"]);
        assert_eq!(swept, sweep_seed(drawn, 20));
        assert_eq!(cuts(swept, 20).len(), 5, "five rewinds, every cut among them");
        assert_eq!(timed, crate::seed::derive(7, &["0", "workload"]));
    }

    #[test]
    fn rotate_gets_its_shapes_only_from_a_child_that_lists_them() {
        let listed = ["append", "rotate", "dump", crashcells_protocol::ROTATE_SHAPES];
        assert!(words(Op::Rotate, &listed).windows(2).any(|w| w == ["--shapes", "on"]));
        assert!(!words(Op::Rotate, &["append", "rotate", "dump"]).contains(&"--shapes".to_string()));
        assert!(!words(Op::Append, &listed).contains(&"--shapes".to_string()), "rotate's flag only");
    }
}
