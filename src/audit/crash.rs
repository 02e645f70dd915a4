//! The audit's crash columns, one per kill mode whose row in the kill
//! modes' table has one (`crate::killmode::MODES`): for one leg, whether every workload cell
//! that answers durability ([`crate::cells::Cell::answers_durability`]) keeps every acknowledged commit under a process
//! crash (the recorded syscall sweep), a power loss (the power sweep), a
//! power loss with torn and reordered writes (the torn sweep) and a failed
//! write or sync (the fault sweep), each checked at every kill point of the
//! cell's sweep workload.
//!
//! Crash model: those of [`crate::pipeline::workload::recorded`],
//! [`crate::pipeline::workload::power`] (both models) and [`crate::pipeline::workload::fault`];
//! the leg's row says `keeps` when every cell passed, `LOSES` (with the
//! first cell's reason and the command that reproduces it) when one fired,
//! and `-` when the leg could not be probed (skipped) or a sweep errored.

use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Status};
use crate::cells::{Shape, Taking};
use crate::killmode::{AuditColumn, MODES};
use crate::matrix::{Leg, Matrix};
use crate::model::Verdict;
use crate::pipeline::Context;
use crate::plan::{KillMode, Selection, plan};

/// One crash column of a leg: what the workload cells' sweeps concluded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// True: every cell kept every acked commit; false: one lost some (or
    /// recovered a broken store); null: no verdict (skipped or errored).
    pub keeps: Option<bool>,
    /// The first non-passing cell's reason, with its cell number.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Each cell's verdict, `N: verdict`.
    pub cells: Vec<String>,
    /// The command that reruns the first cell that lost a commit (its
    /// result's repro): where a `LOSES` is looked at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro: Option<String>,
}

/// A leg's crash columns, one per kill mode the audit sweeps, in the kill
/// modes' table's order, each under its column's key (`process_crash`,
/// ...); none with `--no-crash`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns(pub Vec<(AuditColumn, Column)>);

impl Columns {
    /// The columns of a leg the audited folder did not honor: `-`, no sweep
    /// (in the sweeps' own folder the leg might run, and answer for a mode
    /// the workdir's filesystem would not give the store); the row's `not
    /// honored` line says why.
    pub fn not_honored() -> Columns {
        let none = || Column { keeps: None, reason: String::new(), cells: vec![], repro: None };
        Columns(swept().into_iter().map(|(_, c)| (c, none())).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The column under `key`, if the audit swept it.
    pub fn get(&self, key: &str) -> Option<&Column> {
        self.0.iter().find(|(c, _)| c.key == key).map(|(_, col)| col)
    }
}

/// As a JSON object, a key per column in the table's order: flattened into
/// a row, the same fields the audit always wrote.
impl Serialize for Columns {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (c, column) in &self.0 {
            map.serialize_entry(c.key, column)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Columns, D::Error> {
        let mut read = std::collections::BTreeMap::<String, Column>::deserialize(d)?;
        Ok(Columns(swept().into_iter().filter_map(|(_, c)| read.remove(c.key).map(|col| (c, col))).collect()))
    }
}

impl Column {
    /// The table's word for it.
    pub fn word(&self) -> &'static str {
        match self.keeps {
            Some(true) => "keeps",
            Some(false) => "LOSES",
            None => "-",
        }
    }
}

/// The kill modes the audit sweeps, a column each: those whose row in the
/// kill modes' table has one, in its order.
pub fn swept() -> Vec<(KillMode, AuditColumn)> {
    MODES.iter().filter_map(|m| m.audit.map(|c| (m.kill, c))).collect()
}

/// How many results the columns of one leg run: each workload cell under
/// each of [`swept`] (for a progress bar's length).
pub fn results_per_leg() -> crate::error::Result<usize> {
    Ok(workload_cells(&Catalog::embedded()?).len() * swept().len())
}

/// The crash columns of `leg`, each result told to `progress` as it runs,
/// and the synchronous level its recorded commits kept (from their calls).
pub fn columns(
    ctx: &Context,
    matrix_name: &str,
    leg: &Leg,
    progress: std::sync::Arc<dyn crate::model::Listener>,
) -> crate::error::Result<(Columns, Option<String>)> {
    let catalog = Catalog::embedded()?;
    let matrix = Matrix { name: matrix_name.to_string(), description: String::new(), legs: vec![leg.clone()] };
    let cells = workload_cells(&catalog);
    let kills: Vec<KillMode> = swept().into_iter().map(|(k, _)| k).collect();
    let selection = Selection { cells, legs: vec![leg.name.clone()], kills };
    let jobs = plan(&catalog, &matrix, &selection, ctx.seed)?;
    // The power and torn sweeps of a cell share one recording and its
    // recoveries; what they share goes with the leg. A row names a repro
    // without a refire rate: the audit's fires are its columns' answers.
    let ctx = Context { shared: crate::pipeline::Shared::on(), refires: 0, ..ctx.clone() };
    let results = crate::run::execute(&jobs, &ctx, ctx.jobs, progress);
    let column = |kill: KillMode| {
        let of: Vec<_> = results.iter().filter(|r| r.kill == kill).collect();
        let first_bad = of.iter().find(|r| r.verdict != Verdict::Pass);
        let keeps = match first_bad.map(|r| r.verdict) {
            None => Some(true),
            Some(Verdict::Fire) => Some(false),
            Some(_) => None,
        };
        Column {
            keeps,
            reason: first_bad.map_or_else(String::new, |r| format!("cell {}: {}", r.number, r.reason)),
            cells: of.iter().map(|r| format!("{}: {}", r.number, r.verdict.as_str())).collect(),
            repro: first_bad.filter(|r| r.verdict == Verdict::Fire).map(|r| r.repro.clone()),
        }
    };
    let kept = results.iter().find_map(|r| r.kept_synchronous.clone());
    Ok((Columns(swept().into_iter().map(|(kill, c)| (c, column(kill))).collect()), kept))
}

/// The numbers of the cells the crash columns sweep, in catalog order: what
/// the table's legend names.
pub fn cell_numbers() -> Vec<u32> {
    let Ok(catalog) = Catalog::embedded() else { return vec![] };
    workload_cells(&catalog).iter().filter_map(|id| catalog.find(id).ok()).map(|c| c.number).collect()
}

/// The live workload cells (a child that writes until it is killed) whose
/// clause is that acknowledged commits survive, as each cell says
/// ([`crate::cells::Cell::answers_durability`]).
fn workload_cells(catalog: &Catalog) -> Vec<String> {
    catalog
        .cells
        .iter()
        .filter(|c| c.status == Status::Live)
        .filter(|c| {
            crate::cells::find(&c.id)
                .is_some_and(|cell| cell.answers_durability() && cell.shape(&c.params).is_ok_and(|s| sweepable(&s)))
        })
        .map(|c| c.id.clone())
        .collect()
}

/// Whether a cell of `shape` can be swept by every crash column: it runs
/// each column's mode (a race or the writers skip power loss, whose
/// recording cannot stand for the other processes).
fn sweepable(shape: &Shape) -> bool {
    swept().iter().all(|&(kill, _)| shape.kind().takes(kill) == Taking::Killed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read from the registry, not the catalog: a cell answers for itself.
    #[test]
    fn the_audits_crash_cells_are_the_workload_cells_that_answer_durability() {
        let catalog = Catalog::embedded().unwrap();
        let answer = |id: &str| {
            let (cell, spec) = (crate::cells::find(id).unwrap(), catalog.find(id).unwrap());
            cell.answers_durability() && matches!(cell.shape(&spec.params), Ok(Shape::Workload(_)))
        };
        let swept = workload_cells(&catalog);
        assert!(!swept.is_empty(), "the crash columns sweep some cell");
        let registered: Vec<&str> = crate::cells::CELLS.iter().map(|c| c.id()).filter(|id| answer(id)).collect();
        assert_eq!(swept, registered);
        // The race (cell 2) keeps no acknowledged commit to lose.
        let race = catalog.cells.iter().find(|c| c.params.racers.is_some()).unwrap();
        assert!(!swept.contains(&race.id));
        let numbers: Vec<u32> = swept.iter().map(|id| catalog.find(id).unwrap().number).collect();
        assert_eq!(cell_numbers(), numbers);
    }

    #[test]
    fn a_column_says_keeps_loses_or_nothing() {
        let c = |keeps| Column { keeps, reason: String::new(), cells: vec![], repro: None };
        assert_eq!([c(Some(true)).word(), c(Some(false)).word(), c(None).word()], ["keeps", "LOSES", "-"]);
    }
}
