//! Power-loss sweeps (`--kill power`, `--kill torn`): the workload's
//! recorded run, and at each kill point every state a power loss there may
//! leave by the model asked for ([`PowerModel`]: the in-order one of
//! [`crate::crashstate::power`], or the torn one of
//! [`crate::crashstate::torn`]), each judged with the acks the world had
//! been given at that point, by the one verdict path.
//!
//! Crash model: a power loss at the entry of kill point N: the disk holds
//! only what was durable (data as of each file's last sync, names as of the
//! folder's last sync), or that plus an in-order prefix of what was not; the
//! torn model adds a write torn at a sector and a write lost out of order,
//! within its bound. The ack journal is the process crash's (the world was
//! told). Clause: the cell's; a fire names its point and the rule that made
//! the state (for the torn model, which write tore where or was
//! reordered), and keeps the exact state as evidence. Nothing here can be
//! confirmed by a real kill: the states are the model's, and
//! `docs/DESIGN.md` says what each keeps, drops and does not model.

use std::collections::HashMap;
use std::sync::Arc;

use super::batch::{Checker, Recovery};
use super::outcome::{Failure, Finding, Interruption, Outcome, PowerLoss};
use super::power_share::{Share, recover};
use super::sweep::Swept;
use super::trial::Trial;
use super::verdict::conclude;
use super::workload::Workload;
use crate::crashstate::power::{AtPoint, Model};
use crate::crashstate::torn::Bound;
use crate::crashstate::{Event, Files, Log, State};
use crate::kill::syscall::sweep_points;
use crate::report::{Crash, Trace};

/// The power-loss model a sweep builds its states with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerModel {
    /// Each file as of its last sync, names as of the folder's, and every
    /// in-order prefix of what was pending (`--kill power`).
    InOrder,
    /// That, and writes torn in sector units or lost out of order within
    /// the bound (`--kill torn`).
    Torn(Bound),
}

impl PowerModel {
    /// The model a power-loss kill mode sweeps with: torn (in the
    /// default bound) or in order, as its row in the table says.
    pub fn of(torn: bool) -> PowerModel {
        if torn { PowerModel::Torn(Bound::default()) } else { PowerModel::InOrder }
    }

    fn build(self, events: &[Event], points: &[u64]) -> Model {
        match self {
            PowerModel::InOrder => crate::crashstate::power::model(events, points),
            PowerModel::Torn(bound) => crate::crashstate::torn::model(events, points, bound),
        }
    }

    /// The model and its bound, for a result's details.
    pub fn describe(self) -> String {
        match self {
            PowerModel::InOrder => "in-order power model (every in-order prefix of what was not durable)".into(),
            PowerModel::Torn(b) => format!(
                "torn power model, bound: {}-byte sectors, at most {} tear{} per write, at most {} write{} lost out \
                 of order among the last {} unsynced",
                b.sector,
                b.tears,
                if b.tears == 1 { "" } else { "s" },
                b.out_of_order,
                if b.out_of_order == 1 { "" } else { "s" },
                b.window
            ),
        }
    }
}

/// The trials of a power-loss sweep of `w` by `model`: one per kill point,
/// up to the first at which some power state does not pass; the last says
/// how many states each point had (`Model::explored` for the torn model:
/// built before identical ones merged) and the model's bound.
pub fn power_sweep(w: &Workload, seed: u64, power: PowerModel) -> Swept {
    // The audit's power and torn sweeps share a recording and its recoveries.
    let share = Share::of(w, seed);
    let own;
    let rec = match share.as_deref().and_then(Share::recording) {
        Some(rec) => rec,
        None => {
            let r = match w.honoured_recording(false) {
                Ok(r) => r,
                Err(ended) => return *ended,
            };
            if let Some(why) = r.disagrees.clone() {
                let failure = Failure::UnloggedWrites(why);
                return Swept::unplanned(Trial::ended(0, Outcome::Error(failure)).with_env(r.env));
            }
            own = r;
            &own
        }
    };
    let o = &w.ctx.options;
    let points = sweep_points(rec.census.candidates(), o.point, o.points, seed);
    let m = power.build(rec.log.ran(), &points);
    let (canon, stores) = distinct(&m);
    let units = Units::of(&m, &canon, &stores);
    let label = |l: &str| w.label(l);
    let make_env = |l: &str| w.env(l);
    let checker = w.checker(rec, &label, &make_env);
    // Progress counts the distinct stores recovered, batch by batch: the
    // points are judged in a moment once they are.
    w.ctx.tally.planned(units.files.len() as u64);
    w.ctx.tally.phase("recovering");
    let recovered = recover(&checker, &units.files, share.as_deref());
    if crate::harness::interrupted().is_some() {
        return Swept::unplanned(Trial::ended(0, Outcome::Interrupted(Interruption::PowerStates)));
    }
    let mut trials = judge_points(&checker, &rec.log, &m, (&canon, &units), &recovered);
    if let Some(last) = trials.last_mut() {
        last.details.extend(states_per_point(power, &m, judged_points(&m, last.index), stores.len()));
        if last.is_bad() {
            let crash = if power == PowerModel::InOrder { Crash::PowerCut } else { Crash::Torn };
            last.trace = Some(Trace::of_log(&rec.log, u64::from(last.index), crash));
        }
    }
    Swept { planned: Some(points), trials, recorded: true, distinct: None }
}

/// How many of the model's points were judged: those up to point `last`.
fn judged_points(m: &Model, last: u32) -> usize {
    m.points.iter().take_while(|at| at.point <= u64::from(last)).count()
}

/// The details a power sweep ends with: the model and its bound, and per
/// judged point (the first `judged` of the model's) how many states it
/// built there and how many it held once identical ones merged, and how
/// many distinct stores all of them came to (each one recovery).
fn states_per_point(power: PowerModel, m: &Model, judged: usize, stores: usize) -> Vec<String> {
    let at = &m.points[..judged.min(m.points.len())];
    let built = |i: usize| m.explored.get(i).copied().unwrap_or(at[i].states.len());
    let counts: Vec<(usize, usize)> = (0..at.len()).map(|i| (built(i), at[i].states.len())).collect();
    let (most, all) = (counts.iter().map(|c| c.0).max().unwrap_or(0), counts.iter().map(|c| c.0).sum::<usize>());
    let mut lines = vec![format!(
        "{}: {all} states built over {} kill points, at most {most} at one point; {stores} distinct stores",
        power.describe(),
        at.len(),
    )];
    let list: Vec<String> = at.iter().zip(&counts).map(|(p, (b, d))| format!("#{} {b}/{d}", p.point)).collect();
    lines.push(format!("states per kill point (built/distinct): {}", list.join(", ")));
    lines
}

/// What each recovery starts from: a distinct store, with the transport of
/// the points that may leave it (a power loss keeps the transport as the
/// process crash left it: the provider's log is not on this machine, so one
/// store reached at points with other transports is recovered once per
/// transport; without a transport, one unit per store).
struct Units {
    of: HashMap<(usize, Option<Vec<u8>>), usize>,
    files: Vec<Files>,
}

impl Units {
    fn of(m: &Model, canon: &[usize], stores: &[usize]) -> Units {
        let mut units = Units { of: HashMap::new(), files: Vec::new() };
        for at in &m.points {
            for (id, _) in &at.states {
                let store = canon[*id];
                let key = (store, at.transport.clone());
                if !units.of.contains_key(&key) {
                    let mut files = m.states[stores[store]].files.clone();
                    files.set_transport(at.transport.as_deref());
                    units.of.insert(key, units.files.len());
                    units.files.push(files);
                }
            }
        }
        units
    }

    /// The unit of state `id` at point `at`.
    fn at(&self, canon: &[usize], id: usize, at: &AtPoint) -> usize {
        self.of[&(canon[id], at.transport.clone())]
    }
}

/// The distinct stores among the model's states: for each state, the index
/// of its store; and each store's first state.
fn distinct(m: &Model) -> (Vec<usize>, Vec<usize>) {
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut stores: Vec<usize> = Vec::new();
    let mut canon = Vec::with_capacity(m.states.len());
    for (i, s) in m.states.iter().enumerate() {
        let bucket = seen.entry(s.files.store_hash()).or_default();
        let same = bucket.iter().copied().find(|&j| m.states[stores[j]].files.store().eq(s.files.store()));
        canon.push(same.unwrap_or_else(|| {
            stores.push(i);
            bucket.push(stores.len() - 1);
            stores.len() - 1
        }));
    }
    (canon, stores)
}

/// Judges every state of every point, in order; stops at the first point
/// with a state that does not pass, which keeps that state as evidence.
fn judge_points(
    checker: &Checker,
    log: &Log,
    m: &Model,
    units: (&[usize], &Units),
    recovered: &[Arc<Recovery>],
) -> Vec<Trial> {
    let mut passed: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
    let mut trials = Vec::new();
    for at in &m.points {
        let trial = judge_point(checker, log, m, at, units, recovered, &mut passed);
        let bad = trial.is_bad();
        trials.push(trial);
        if bad {
            break;
        }
    }
    trials
}

/// The power states of one point, the one that lost the least first: if it
/// fails, the first operation it lost is the one whose loss did it, and
/// that is the rule reported.
fn judge_point(
    checker: &Checker,
    log: &Log,
    m: &Model,
    at: &AtPoint,
    (canon, units): (&[usize], &Units),
    recovered: &[Arc<Recovery>],
    passed: &mut std::collections::HashSet<(usize, usize)>,
) -> Trial {
    let point = log.point(at.point);
    let index = u32::try_from(at.point).unwrap_or(u32::MAX);
    let mut last = Trial::new(index);
    for (k, (id, dropped)) in at.states.iter().rev().enumerate() {
        let store = units.at(canon, *id, at);
        if k > 0 && passed.contains(&(store, at.acks.len())) {
            continue;
        }
        let mut t = Trial::new(index);
        let recovery = || recovered[store].as_ref().as_ref().map_err(Clone::clone);
        let outcome = conclude(&checker.crash(&at.acks), &mut t, recovery);
        t.kill_point = Some(point.kill_point(index, t.acked));
        if outcome.is_pass() {
            passed.insert((store, at.acks.len()));
            last = t;
            continue;
        }
        let lost = m.dropped(dropped);
        let rule = lost.first().map_or_else(|| "nothing was lost (the process crash's own state)".into(), |p| p.rule());
        let power = PowerLoss { point: at.point, rule: rule.clone(), later: lost.len().saturating_sub(1) };
        let outcome = match outcome {
            Outcome::Fire(finding) => Outcome::Fire(Finding { power: Some(power), ..finding }),
            Outcome::Error(error) => Outcome::Error(Failure::PowerLoss { power, error: Box::new(error) }),
            other => other,
        };
        t.details.extend(lost.iter().map(|p| format!("not durable: {}", p.rule())));
        let state = State {
            point: point.clone(),
            acks: at.acks.clone(),
            files: units.files[store].clone(),
            version: 0,
            rule: Some(rule),
        };
        let text = power_note(at.point, lost.iter().map(|p| p.rule()).collect());
        t.env = checker.evidence(&state, &format!("p{}-power", at.point), "power-loss.txt", &text);
        if let Some(env) = &t.env {
            // The passes' copies and outputs beside the state, as for a killed trial.
            let _ = checker.ctx.pool.unit(|| crate::recovery::recover(&checker.ctx.child, checker.ctx.deadline, env));
        }
        return t.conclude(outcome);
    }
    last.details.push(format!("{} power-loss states checked at this point", at.states.len()));
    last.kill_point.get_or_insert_with(|| point.kill_point(index, 0));
    last
}

/// The evidence's note: the point and every operation the power loss undid.
fn power_note(point: u64, rules: Vec<String>) -> String {
    let mut text = format!("a power loss at kill point #{point}; the ack journal is the process crash's\n");
    if rules.is_empty() {
        text.push_str("nothing was lost: this is the process crash's own state\n");
    }
    for r in rules {
        text.push_str(&format!("lost: {r}\n"));
    }
    text
}
