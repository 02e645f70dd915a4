//! Injecting sweeps (`--kill fault`, and any mode whose source is an
//! [`Injection`]): at each kill point whose call the mode's injection
//! changes, one run of the workload in which that call is changed, and what
//! the store made of it.
//!
//! Crash model: no crash but a fault. At kill point N the call is changed
//! as the injection says; for `--kill fault` it does not run and returns
//! an error instead ([`crate::harness::Traced::fail`]): a write `ENOSPC` (a
//! full disk), an `fsync`/`fdatasync` `EIO` (a failing disk), as
//! [`crate::kill::fault::fault_for`] says; the ack journal and the
//! transport stand for the world, not the disk, and are never failed. The
//! child runs on to its own end, whatever that is: an exit with the store's
//! error is its legitimate reaction. The run is recorded, the failed call
//! logged as failed ([`crate::crashstate::record`]), and self-checked
//! against the files it left.
//!
//! Clause, for every workload cell, at every such point:
//! - (a) where the call returned an error, the operation in flight at N,
//!   the one after the acks the journal held before N, is never
//!   acknowledged (`acked-despite-io-error`);
//! - (b) what the child left at its end, recovered, passes the cell's own
//!   check with the acks it gave, by the one verdict path;
//! - (c) after a failed sync, each power-loss state the failure added
//!   ([`crate::crashstate::failed`]: Linux loses the writes that sync was
//!   to make durable for good) keeps every acknowledged operation.
//!
//! A fire names the call that failed (for (c), the power loss and the rule
//! that made its state), keeps the run's folder (for (c), the state) as
//! evidence, and its repro reruns that point: `--kill fault --point N`.
//! The runs are a crash source of the one driver ([`crate::pipeline::judge::driver`]): it
//! recovers each distinct store once, judges (c)'s power states as a power
//! sweep's, and keeps the evidence.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::cells::{ACKED_DESPITE_IO_ERROR as ACKED_DESPITE, Violation};
use crate::crashstate::failed::added_by_failure;
use crate::crashstate::power::{AtPoint, Dropped, Model, Pending};
use crate::crashstate::record::record;
use crate::crashstate::{Effect, Files, Log, Names, State};
use crate::harness::Exit;
use crate::kill::inject::{Injected, Injection};
use crate::kill::syscall::{Driven, FileKind, Goal, sweep_points};
use crate::kill::{Ordinal, TrialIndex};
use crate::model::{Crash, Trace};
use crate::pipeline::judge::census::{Filter, trace_outcome};
use crate::pipeline::judge::driver::{
    BadPower, Cause, Count, Driver, Got, Passed, Plan, Source, first_rule, judged_order,
};
use crate::pipeline::judge::sweep::Swept;
use crate::pipeline::judge::verdict::conclude;
use crate::pipeline::outcome::{Failure, Fault, Finding, Outcome, PowerLoss, Skip};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::Workload;
use crate::pipeline::workload::recorded::Recording;
use crate::trialdir::TrialEnv;

/// Runs of the workload per `--jobs` thread between two batched recoveries:
/// enough that a dump process recovers many stores, few enough that a store
/// whose first faulty point fires does not first run them all.
const RUNS_PER_JOB: usize = 16;

/// The trials of an injecting sweep of `w`: one per point whose call
/// `injection` changes, up to the first that does not pass; the last says
/// what the runs did. `mode` is the mode's phrase (`fault injection`).
pub fn fault_sweep(w: &Workload, seed: u64, injection: &'static dyn Injection, mode: &'static str) -> Swept {
    let rec = match w.honoured_recording(false) {
        Ok(r) => r,
        Err(ended) => return *ended,
    };
    let points = match planned(&rec.log, injection, mode, w.ctx.options.point, w.ctx.options.points, seed) {
        Ok(p) => p,
        Err(outcome) => return Swept::unplanned(Trial::ended(TrialIndex::CENSUS, outcome)),
    };
    w.ctx.events.planned(points.len() as u64);
    let sweep = Sweep { w, rec: &rec, injection, points: &points, seen: Mutex::default() };
    let make_env = |l: &str| w.env(l);
    let driver = w.driver(&rec, &make_env);
    let wave = RUNS_PER_JOB * w.ctx.jobs.max(1);
    let plan = Plan {
        units: points.len(),
        wave,
        label: "fault-",
        count: Count::Units,
        turn: None,
        one_log: false,
        spread: true,
    };
    let mut trials = driver.run(&sweep, &plan);
    let seen = sweep.seen.into_inner().expect("no judge panics holding the counts");
    if let Some(last) = trials.last_mut() {
        last.details.push(injection.summary(seen.writes, seen.syncs, seen.failed_ends, seen.power_states));
    }
    Swept { planned: Some(points), trials, recorded: false, distinct: None }
}

/// What the sweep's runs did, for its last trial's details.
#[derive(Default)]
struct Seen {
    writes: usize,
    syncs: usize,
    /// Runs whose child ended with an error (or a signal) after its fault.
    failed_ends: usize,
    /// Power states a failed sync added, judged.
    power_states: usize,
}

/// One workload run with point `n`'s call made to fail.
struct Run {
    n: u64,
    fault: Fault,
    /// The failed call was a sync: clause (c) applies.
    sync: bool,
    env: TrialEnv,
    log: Log,
    /// The operation in flight at `n`: the number of operations acked
    /// before it; none before the ready record (the store was opening).
    in_flight: Option<u64>,
    /// Clause (a)'s violation, if the in-flight operation was acked.
    acked: Option<Violation>,
    /// The files the run left at its end, replayed from its log once (the
    /// self-check found them equal to the disk's).
    end: Files,
    /// The power states clause (c) judges after the fault, if any.
    added: Option<Added>,
}

/// An injecting sweep: its recording, workload and injection, the points
/// it injects into, and what its runs did.
struct Sweep<'a> {
    w: &'a Workload<'a>,
    rec: &'a Recording,
    injection: &'static dyn Injection,
    points: &'a [u64],
    seen: Mutex<Seen>,
}

/// The power states clause (c) judges after a run's fault
/// ([`power_states`]): the model and its points after the fault.
struct Added {
    model: Model,
    points: Vec<AtPoint>,
}

impl Source for Sweep<'_> {
    type Unit = Run;

    fn key(&self, i: usize) -> u64 {
        self.points[i]
    }

    fn make(&self, i: usize) -> Result<Run, Box<Trial>> {
        self.run(self.rec.filter, self.points[i])
    }

    /// Clause (a) decides a run as soon as it ended.
    fn decided(&self, run: &Run) -> bool {
        run.acked.is_some()
    }

    /// The run's end state (b), then the power states its fault leaves
    /// after it (c), each with the transport the process crash at its point
    /// left, each point's in the order they are judged ([`judged_order`]).
    fn stores(&self, run: &Run) -> Vec<Files> {
        let mut files = vec![run.end.clone()];
        for (model, at) in run.added.iter().flat_map(|a| a.points.iter().map(move |at| (&a.model, at))) {
            files.extend(judged_order(at).map(|(id, _)| with_transport(model, *id, at)));
        }
        files
    }

    fn judge(&self, d: &Driver, run: Run, got: &[Got], memo: &mut Passed) -> Vec<Trial> {
        self.seen.lock().expect("no judge panics holding the counts").count(&run);
        vec![judge(d, run, got, memo)]
    }
}

impl Sweep<'_> {
    /// The workload run with point `n`'s call made to fail, to its own end:
    /// one unit of the run's pool of child work.
    fn run(&self, filter: Filter, n: u64) -> Result<Run, Box<Trial>> {
        self.w.ctx.pool.unit(&self.w.ctx.interrupt, || self.faulty(filter, n))
    }

    fn faulty(&self, filter: Filter, n: u64) -> Result<Run, Box<Trial>> {
        let w = self.w;
        let index = TrialIndex::at(Ordinal(n));
        let injected = self.injection.at(&self.rec.log.point(n)).expect("a planned point gets an injection");
        let env = w.env(&format!("f{n}")).map_err(|f| Box::new(Trial::ended(index, Outcome::Error(f))))?;
        let failed = |o: Outcome, env: TrialEnv| Box::new(Trial::ended(index, o).with_env(env));
        let args = w.op_args(&env, true);
        let mut child = match w.ctx.child.spawn_traced(&w.launch(&env, &args), filter, w.ctx.deadline, &w.ctx.interrupt)
        {
            Ok(c) => c,
            Err(e) => return Err(failed(trace_outcome(e, w.ctx), env)),
        };
        let (exit, log) = match record(&mut child, &w.targets(&env), Goal::InjectAt(n, injected)) {
            Ok((Driven::Exited { exit, counted }, log)) if counted >= n => (exit, log),
            Ok((Driven::Exited { exit, counted }, _)) => {
                let stderr = child.stderr_tail();
                return Err(failed(
                    Outcome::Error(Failure::ChildEnded { exit, counted, before: Some(n), stderr }),
                    env,
                ));
            }
            Ok((Driven::At(p), _)) => return Err(failed(Outcome::Error(Failure::RecordingStopped(p.ordinal.0)), env)),
            Err(e) => return Err(failed(trace_outcome(e, w.ctx), env)),
        };
        drop(child);
        let names = Names::new(&env.db, &env.acks, &env.transport);
        let dir = env.db.parent().expect("a trial's database is in its folder");
        let end = Files::after(log.ran());
        if let Some(why) = end.differs_from_disk(dir, &names) {
            return Err(failed(Outcome::Error(Failure::FaultUnlogged(why)), env));
        }
        let run = Run::of(n, injected, exit, env, log, end).map_err(|e| failed(e.0, e.1))?;
        let mut run = run.audited(w, self.rec);
        run.added = power_states(&run).map(|(model, points)| Added { model, points });
        Ok(run)
    }
}

impl Run {
    /// Whether the store changed how it commits after the fault: its own
    /// files contradict the mode its census ran in (`fault.then` says so).
    fn changed(&self) -> bool {
        self.fault.then.is_some()
    }

    /// A finished faulty run, with clause (a) judged: its in-flight
    /// operation against the acks it ended with.
    fn of(
        n: u64,
        injected: Injected,
        exit: Exit,
        env: TrialEnv,
        log: Log,
        end: Files,
    ) -> Result<Run, Box<(Outcome, TrialEnv)>> {
        let effect = match &log.events[log.at[n as usize - 1]].effect {
            Effect::Failed { effect, .. } => (**effect).clone(),
            other => other.clone(),
        };
        // Clause (c): a sync that failed lost its writes for good.
        let sync = matches!(effect, Effect::Sync { .. }) && injected.is_error();
        let fault = Fault { point: n, call: effect.describe(), injected, exit, then: None };
        let before = Files::after(log.before(n)).get(FileKind::Acks).unwrap_or_default();
        let bad_journal = |error| Outcome::Error(Failure::Journal { process: None, error });
        let in_flight = match crate::journal::parse(&before) {
            Ok(j) => j.ready.map(|_| j.acks.iter().map(|a| a.i + 1).max().unwrap_or(0)),
            Err(e) => return Err(Box::new((bad_journal(e), env))),
        };
        let acks = match crate::journal::parse(&end.get(FileKind::Acks).unwrap_or_default()) {
            Ok(j) => j.acks,
            Err(e) => return Err(Box::new((bad_journal(e), env))),
        };
        // Clause (a): only a call that returned an error fails its operation.
        let acked = in_flight.filter(|_| injected.is_error()).and_then(|i| acked_despite(&acks, i, &fault));
        Ok(Run { n, fault, sync, env, log, in_flight, acked, end, added: None })
    }

    /// The run with its leg audited on its own files: a store that, after
    /// the fault, reported its mode (its ready record) and then committed in
    /// another journal mode than its census did (SQLite's switch to WAL is
    /// a transaction: when it fails the connection stays in a rollback
    /// journal) has every power state after the fault judged, not only
    /// those the failed sync added. A store that ended before its ready
    /// record claimed no mode, and changed none.
    fn audited(mut self, w: &Workload, rec: &Recording) -> Run {
        let bytes = self.end.get(FileKind::Acks).unwrap_or_default();
        let Some(ready) = crate::journal::parse(&bytes).ok().and_then(|j| j.ready) else { return self };
        let audit = crate::legaudit::audit_leg(&self.env.db, &ready, w.leg);
        let known = audit.family != crate::dbfiles::Family::Unknown;
        if known && audit.effective != rec.census.audit.effective {
            let journal = if audit.family == crate::dbfiles::Family::Wal { "WAL" } else { "a rollback journal" };
            let was = &rec.census.audit.effective;
            self.fault.then =
                Some(format!("then the store ran in {journal}, not {was} as its census did ({})", audit.reason));
        }
        self
    }
}

impl Seen {
    fn count(&mut self, run: &Run) {
        if run.sync {
            self.syncs += 1;
        } else {
            self.writes += 1;
        }
        if run.fault.exit != Exit::Code(0) {
            self.failed_ends += 1;
        }
        // A state reached at several points counts once per transport.
        let distinct = |a: &Added| {
            let of = |at: &AtPoint| at.states.iter().map(|(id, _)| (*id, at.transport.clone())).collect::<Vec<_>>();
            a.points.iter().flat_map(of).collect::<HashSet<_>>().len()
        };
        self.power_states += run.added.as_ref().map_or(0, distinct);
    }
}

/// State `id` of `model` with the transport point `at` left (a power loss
/// keeps the transport as the process crash left it: the provider's log
/// is not on this machine).
fn with_transport(model: &Model, id: usize, at: &AtPoint) -> Files {
    let mut files = model.states[id].files.clone();
    files.set_transport(at.transport.as_deref());
    files
}

/// The power states clause (c) judges after a run's fault, at every point
/// after it: for a failed sync, those the failure added; for a store that
/// changed its journal mode after the fault (either kind), every one, since
/// how it committed from then on is the fault's doing. None otherwise.
fn power_states(run: &Run) -> Option<(Model, Vec<AtPoint>)> {
    let wanted: Vec<u64> = (run.n + 1..=run.log.total() + 1).collect();
    if run.changed() {
        let model = crate::crashstate::power::model(run.log.ran(), &wanted);
        let points = model.points.clone();
        return Some((model, points));
    }
    run.sync.then(|| added_by_failure(run.log.ran(), &wanted))
}

/// Judges one run (`got`: its stores' recoveries, as
/// [`Sweep::stores`] listed them): (a), then (b) on its end state, then
/// (c) on the power states after its fault; the first that does not pass
/// decides.
fn judge(d: &Driver, run: Run, got: &[Got], memo: &mut Passed) -> Trial {
    let index = TrialIndex::at(Ordinal(run.n));
    let point = run.log.point(run.n);
    let mut t = Trial::new(index);
    let in_flight = run
        .in_flight
        .map_or("the store was opening (no ready record yet)".into(), |i| format!("operation {i} was in flight"));
    t.details.push(format!("{}; {in_flight}", run.fault));
    let head = t.details.clone();
    let cause = Cause { power: None, fault: Some(run.fault.clone()) };
    let acks = run.end.get(FileKind::Acks).unwrap_or_default();
    if let Some(v) = run.acked.clone() {
        t.acked = crate::journal::parse(&acks).map_or(0, |j| j.acks.len() as u64);
        t.kill_point = Some(point.kill_point(index, run.in_flight.unwrap_or(0)));
        let fire = Outcome::Fire(Finding { violations: vec![v], power: None, fault: None });
        return keep_run(d, t, run, cause.annotate(fire), false);
    }
    let outcome = conclude(&d.crash(&acks), &mut t, || d.recovered(&got[0]));
    // Where the fault struck: after the acks given before it.
    t.kill_point = Some(point.kill_point(index, run.in_flight.unwrap_or(0)));
    if !outcome.is_pass() {
        return keep_run(d, t, run, cause.annotate(outcome), true);
    }
    match run.added.as_ref().and_then(|a| judge_power(d, &run, a, &got[1..], memo)) {
        Some((mut bad, state)) => {
            bad.kill_point = t.kill_point.take();
            bad.details.splice(0..0, head);
            bad.trace = Some(Trace::of_log(&run.log, state.point.ordinal.0, Crash::PowerCut));
            let text = fault_note(&run.fault, &bad.details);
            bad.env = d.keep(&state, &format!("f{}-power", run.n), "fault.txt", &text);
            bad
        }
        None => t,
    }
}

/// Clause (c): the power states after the run's fault, point by point,
/// as a power sweep judges them ([`Driver::power_point`]); the first that
/// does not pass, as a trial, and its state for evidence.
fn judge_power(d: &Driver, run: &Run, added: &Added, mut got: &[Got], memo: &mut Passed) -> Option<(Trial, State)> {
    let index = TrialIndex::at(Ordinal(run.n));
    for at in &added.points {
        let (here, rest) = got.split_at(at.states.len());
        got = rest;
        let Err(bad) = d.power_point(index, at, here, memo) else { continue };
        let BadPower { trial: mut t, at: k, outcome } = *bad;
        let (id, dropped) = &at.states[k];
        let rules = lost_rules(&added.model, at, dropped, run.changed());
        let power = PowerLoss { point: at.point, rule: first_rule(&rules), later: rules.len().saturating_sub(1) };
        t.details.extend(rules.iter().map(|r| format!("not durable: {r}")));
        let files = with_transport(&added.model, *id, at);
        let state = State { point: run.log.point(at.point), acks: at.acks.clone(), files, version: 0, rule: None };
        let cause = Cause { power: Some(power), fault: Some(run.fault.clone()) };
        return Some((t.conclude(cause.annotate(outcome)), state));
    }
    None
}

/// A run's trial that does not pass, its folder kept as evidence with a
/// note (and, when its end state was judged, the recovery passes beside).
fn keep_run(d: &Driver, t: Trial, run: Run, outcome: Outcome, recovered: bool) -> Trial {
    let mut t = t.conclude(outcome);
    t.trace = Some(Trace::of_log(&run.log, run.n, Crash::Failed));
    let _ = std::fs::write(run.env.path("fault.txt"), format!("{}\n", fault_note(&run.fault, &t.details)));
    if recovered {
        d.beside(&run.env);
    }
    t.with_env(run.env)
}

/// The points a sweep injects into: `--point N` if the injection changes
/// its call (else the skip that says why not); else a sample of `--points`
/// of those whose call it changes, drawn with the seed; else all of them.
fn planned(
    log: &Log,
    injection: &dyn Injection,
    mode: &'static str,
    only: Option<u64>,
    sample: Option<u32>,
    seed: u64,
) -> Result<Vec<u64>, Outcome> {
    let faulted: Vec<u64> = (1..=log.total()).filter(|&n| injection.at(&log.point(n)).is_some()).collect();
    if let Some(n) = only {
        if let Some(outside) = crate::pipeline::judge::sweep::point_outside(only, log.total()) {
            return Err(outside);
        }
        if faulted.contains(&n) {
            return Ok(vec![n]);
        }
        let p = log.point(n);
        let call = match p.file {
            Some(f) => format!("{} of the {}", p.syscall, f.as_str()),
            None => "child's own end".into(),
        };
        return Err(Outcome::Skip(Skip::NothingToInject { point: n, call, mode, changes: injection.changes() }));
    }
    let drawn = sweep_points((1..=faulted.len() as u64).collect(), None, sample, seed);
    Ok(drawn.into_iter().map(|i| faulted[i as usize - 1]).collect())
}

/// Clause (a): the ack of operation `in_flight`, whose write or sync was
/// made to fail, if the journal holds one.
fn acked_despite(acks: &[crashcells_protocol::Ack], in_flight: u64, fault: &Fault) -> Option<Violation> {
    let ack = acks.iter().find(|a| a.i == in_flight)?;
    Some(Violation::new(
        ACKED_DESPITE,
        format!(
            "{} {} was acknowledged, though the {} at #{} {} while it was in flight",
            ack.op,
            ack.i,
            fault.call,
            fault.point,
            fault.injected.returned()
        ),
    ))
}

/// The rules of what a state lost, the cause first: the writes the failed
/// sync lost for good, then the operations the power loss dropped; for a
/// store that changed its journal mode, the power loss's first (the lost
/// writes were the change's occasion, not its cause).
fn lost_rules(m: &Model, at: &AtPoint, dropped: &Dropped, changed: bool) -> Vec<String> {
    let (failed, later) = (&m.lost[..at.lost], m.dropped(dropped));
    let rules: Vec<&Pending> =
        if changed { later.iter().chain(failed).collect() } else { failed.iter().chain(&later).collect() };
    rules.into_iter().map(Pending::rule).collect()
}

/// The evidence's note: the call that was made to fail, and what followed.
fn fault_note(fault: &Fault, details: &[String]) -> String {
    let mut text = format!("{fault}\n{}\n", fault.injected.note());
    for d in details {
        text.push_str(&format!("{d}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::syscall::Call;
    use crate::kill::syscall::Point;
    use crashcells_protocol::Ack;

    fn point(syscall: &'static str, file: FileKind) -> Point {
        Point { ordinal: Ordinal(1), syscall: Call::Sys(syscall), file: Some(file), offset: None, len: None }
    }

    #[test]
    fn an_ack_of_the_operation_in_flight_is_a_fire_and_later_ones_are_not() {
        let injected = Injected::Failed(nix::errno::Errno::EIO);
        let fault = Fault { point: 57, call: "fsync of the wal".into(), injected, exit: Exit::Code(0), then: None };
        let acks: Vec<Ack> = (0..3).map(|i| Ack::of("append", i)).collect();
        let v = acked_despite(&acks, 2, &fault).expect("append 2 was in flight");
        assert_eq!(v.kind, ACKED_DESPITE);
        assert_eq!(
            v.text,
            "append 2 was acknowledged, though the fsync of the wal at #57 failed with EIO while it was in flight"
        );
        assert_eq!(acked_despite(&acks, 3, &fault), None, "an operation never acked");
        assert_eq!(acked_despite(&acks[..2], 2, &fault), None);
    }

    #[test]
    fn a_point_whose_call_gets_no_fault_is_skipped_saying_what_it_is() {
        let mut log = Log::default();
        log.push(Some(point("pwrite64", FileKind::Database)), Effect::SyncDir);
        log.push(Some(point("unlink", FileKind::Journal)), Effect::SyncDir);
        log.push(Some(point("fsync", FileKind::Journal)), Effect::SyncDir);
        let planned = |only, sample| planned(&log, &crate::kill::fault::FAULT, "fault injection", only, sample, 1);
        assert_eq!(planned(None, None).unwrap(), [1, 3]);
        assert_eq!(planned(Some(3), None).unwrap(), [3]);
        let skip = planned(Some(2), None).unwrap_err();
        assert_eq!(
            skip.to_string(),
            "kill point 2 is the unlink of the journal: fault injection fails only writes (ENOSPC) and syncs (EIO) of \
             the store's files"
        );
        assert_eq!(planned(None, Some(1)).unwrap().len(), 1);
    }
}
