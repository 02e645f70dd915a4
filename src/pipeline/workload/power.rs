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

use crate::crashstate::power::{AtPoint, Model};
use crate::crashstate::torn::Bound;
use crate::crashstate::{Event, Files, Log, State};
use crate::kill::syscall::sweep_points;
use crate::kill::{Ordinal, TrialIndex};
use crate::model::{Crash, Trace};
use crate::pipeline::judge::driver::{
    BadPower, Cause, Count, Driver, Got, Passed, Plan, Source, first_rule, judged_order,
};
use crate::pipeline::judge::recover::Stores;
use crate::pipeline::judge::sweep::Swept;
use crate::pipeline::outcome::{Failure, Interruption, Outcome, PowerLoss};
use crate::pipeline::trial::Trial;
use crate::pipeline::workload::job::Workload;
use crate::pipeline::workload::power_share::Share;

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
    // The audit's power and torn sweeps share a recording and take turns
    // at recovering its stores (the run's recoveries hold them).
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
                return Swept::unplanned(Trial::ended(TrialIndex::CENSUS, Outcome::Error(failure)).with_env(r.env));
            }
            own = r;
            &own
        }
    };
    let o = &w.ctx.options;
    if let Some(outside) = crate::pipeline::judge::sweep::point_outside(o.point, rec.census.points) {
        return Swept::unplanned(Trial::ended(TrialIndex::CENSUS, outside));
    }
    let points = sweep_points(rec.census.candidates(), o.point, o.points, seed);
    let m = power.build(rec.log.ran(), &points);
    let stores = distinct_stores(&m);
    let make_env = |l: &str| w.env(l);
    let driver = w.driver(rec, &make_env);
    let source = Points { log: &rec.log, m: &m };
    let turn = share.as_deref().map(|s| &s.turn);
    // One wave: every distinct store recovered, then the points judged.
    let (units, wave) = (m.points.len(), m.points.len());
    let mut trials = driver
        .run(&source, &Plan { units, wave, label: "power", count: Count::Stores, turn, one_log: false, spread: true });
    if w.ctx.interrupt.is_set() {
        return Swept::unplanned(Trial::ended(TrialIndex::CENSUS, Outcome::Interrupted(Interruption::PowerStates)));
    }
    if let Some(last) = trials.last_mut() {
        last.details.extend(states_per_point(power, &m, judged_points(&m, last.index), stores));
        if last.is_bad() {
            let crash = if power == PowerModel::InOrder { Crash::PowerCut } else { Crash::Torn };
            last.trace = Some(Trace::of_log(&rec.log, last.index.ordinal().0, crash));
        }
    }
    Swept { planned: Some(points), trials, recorded: true, distinct: None }
}

/// How many of the model's points were judged: those up to point `last`.
fn judged_points(m: &Model, last: TrialIndex) -> usize {
    m.points.iter().take_while(|at| Ordinal(at.point) <= last.ordinal()).count()
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

/// How many distinct stores the model's states hold (each one recovery
/// per transport it is reached with).
fn distinct_stores(m: &Model) -> usize {
    let mut stores = Stores::default();
    for s in &m.states {
        stores.add(s.files.clone());
    }
    stores.len()
}

/// A power sweep's crash source: a unit per kill point of the model, its
/// states (a power loss keeps the transport as the process crash at the
/// point left it: the provider's log is not on this machine), listed and
/// judged the one that lost the least first ([`judged_order`]).
struct Points<'a> {
    log: &'a Log,
    m: &'a Model,
}

impl Source for Points<'_> {
    type Unit = usize;

    fn key(&self, i: usize) -> u64 {
        self.m.points[i].point
    }

    fn make(&self, i: usize) -> Result<usize, Box<Trial>> {
        Ok(i)
    }

    fn stores(&self, &i: &usize) -> Vec<Files> {
        let at = &self.m.points[i];
        judged_order(at).map(|(id, _)| self.files(*id, at)).collect()
    }

    fn judge(&self, d: &Driver, i: usize, got: &[Got], memo: &mut Passed) -> Vec<Trial> {
        vec![self.point(d, i, got, memo)]
    }
}

impl Points<'_> {
    /// The trial of point `i`: the last of its states that passed, or the
    /// first that did not, its finding with the power loss that made its
    /// state, and that state as evidence.
    fn point(&self, d: &Driver, i: usize, got: &[Got], memo: &mut Passed) -> Trial {
        let at = &self.m.points[i];
        let point = self.log.point(at.point);
        let index = TrialIndex::at(Ordinal(at.point));
        let bad = match d.power_point(index, at, got, memo) {
            Ok(mut last) => {
                last.details.push(format!("{} power-loss states checked at this point", at.states.len()));
                last.kill_point = Some(point.kill_point(index, last.acked));
                return last;
            }
            Err(bad) => bad,
        };
        let BadPower { trial: mut t, at: k, outcome } = *bad;
        t.kill_point = Some(point.kill_point(index, t.acked));
        let rules: Vec<String> = self.m.dropped(&at.states[k].1).iter().map(|p| p.rule()).collect();
        let rule = first_rule(&rules);
        let power = PowerLoss { point: at.point, rule: rule.clone(), later: rules.len().saturating_sub(1) };
        t.details.extend(rules.iter().map(|r| format!("not durable: {r}")));
        let files = self.files(at.states[k].0, at);
        let state = State { point, acks: at.acks.clone(), files, version: 0, rule: Some(rule) };
        t.env = d.keep(&state, &format!("p{}-power", at.point), "power-loss.txt", &power_note(at.point, rules));
        t.conclude(Cause { power: Some(power), fault: None }.annotate(outcome))
    }

    /// State `id`'s files with the transport point `at` left.
    fn files(&self, id: usize, at: &AtPoint) -> Files {
        let mut files = self.m.states[id].files.clone();
        files.set_transport(at.transport.as_deref());
        files
    }
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
