//! The plan of a run: which cell runs on which leg with which kill mode, and
//! the seed each result derives from the run's seed; which of the kill modes
//! (`crate::killmode`'s table) a cell's shape takes.

use crate::catalog::{Catalog, CellSpec, Legs, Status};
use crate::cells::{Shape, Taking};
use crate::error::{Error, Result};
use crate::matrix::{Leg, Matrix};

pub use crate::killmode::KillMode;

/// One result to produce.
#[derive(Clone, Debug)]
pub struct Job {
    pub cell: CellSpec,
    /// `None` for a stub, which runs on no leg.
    pub leg: Option<Leg>,
    pub kill: KillMode,
    pub seed: u64,
}

/// What the user narrowed the run to.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub cells: Vec<String>,
    pub legs: Vec<String>,
    pub kills: Vec<KillMode>,
}

/// Plans cells × legs × kill modes. Stubs appear once each, so that every
/// run reports them; a leg filter that names no leg of the matrix is an error.
pub fn plan(catalog: &Catalog, matrix: &Matrix, sel: &Selection, seed: u64) -> Result<Vec<Job>> {
    let cells: Vec<&CellSpec> = if sel.cells.is_empty() {
        catalog.cells.iter().collect()
    } else {
        sel.cells.iter().map(|k| catalog.find(k)).collect::<Result<_>>()?
    };
    for name in &sel.legs {
        if !matrix.legs.iter().any(|l| &l.name == name) {
            let known: Vec<_> = matrix.legs.iter().map(|l| l.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "unknown leg `{name}` in matrix {}{} (legs: {})",
                matrix.name,
                crate::suggest::did_you_mean(name, &known),
                known.join(", ")
            )));
        }
    }
    let mut jobs = Vec::new();
    for cell in cells {
        if cell.status == Status::Stub {
            let kill = sel.kills.first().copied().unwrap_or_else(|| KillMode::default_set()[0]);
            jobs.push(Job { cell: cell.clone(), leg: None, kill, seed: crate::seed::derive(seed, &[&cell.id]) });
            continue;
        }
        let kills = kills_for(&shape_of(cell)?, &sel.kills);
        for leg in legs_for(cell, matrix, &sel.legs) {
            for &kill in &kills {
                let s = crate::seed::derive(seed, &[&cell.id, &leg.name, kill.seed_label()]);
                jobs.push(Job { cell: cell.clone(), leg: Some(leg.clone()), kill, seed: s });
            }
        }
    }
    if let [only] = sel.kills[..]
        && jobs.is_empty()
        && !only.kills()
    {
        return Err(Error::Usage(format!(
            "nothing to run: --kill {} selects only races that kill nothing, and no selected cell is one",
            only.as_str()
        )));
    }
    if jobs.is_empty() {
        // Only a resolver-default cell filtered to other legs plans nothing:
        // that is a selection to fix, not a run whose every leg skipped.
        return Err(Error::Usage(format!(
            "nothing to run: the selected cells run only on legs that leave the journal mode to the resolver, \
             and --leg {} selects none in matrix {}",
            sel.legs.join(", --leg "),
            matrix.name
        )));
    }
    Ok(jobs)
}

/// The shape of a live cell: its probe's, from its catalog parameters. A
/// live cell without a probe, or whose file lacks a parameter its shape
/// needs, is refused before anything runs.
pub fn shape_of(cell: &CellSpec) -> Result<Shape> {
    let Some(probe) = crate::cells::find(&cell.id) else {
        return Err(Error::Usage(format!(
            "cell {} `{}` is live in the catalog but this driver has no probe for it",
            cell.number, cell.id
        )));
    };
    probe.shape(&cell.params).map_err(|e| Error::Catalog { file: cell.file.clone(), message: e.to_string() })
}

/// The kill modes a cell of `shape` runs for the modes asked, in order,
/// each once (a race runs `none` where `timed` is asked).
fn kills_for(shape: &Shape, asked: &[KillMode]) -> Vec<KillMode> {
    let mut kills = Vec::new();
    for k in asked.iter().filter_map(|&kill| kill_for(shape, kill)) {
        if !kills.contains(&k) {
            kills.push(k);
        }
    }
    kills
}

/// The kill mode a result of `shape` runs when `asked` is planned, as the
/// shape takes it ([`crate::cells::ShapeKind::takes`]): a race that a mode
/// leaves free (a timed kill's) runs without a kill (`none`); a workload
/// has nothing to show without a kill, so `none` plans none of it; a mode
/// the shape skips is planned, and its result says why.
pub fn kill_for(shape: &Shape, asked: KillMode) -> Option<KillMode> {
    match shape.kind().takes(asked) {
        Taking::Free => Some(KillMode::free_race()),
        Taking::Unplanned => None,
        Taking::Killed | Taking::Skip(_) => Some(asked),
    }
}

fn legs_for<'m>(cell: &CellSpec, matrix: &'m Matrix, only: &[String]) -> impl Iterator<Item = &'m Leg> {
    let cell_legs = cell.legs;
    let wanted = |l: &&Leg| only.is_empty() || only.contains(&l.name);
    // A default-only cell runs on the matrix's resolver-default legs; other legs
    // are not planned for it (and not reported as skips).
    matrix.legs.iter().filter(move |l| cell_legs == Legs::All || l.is_resolver_default()).filter(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(cells: &[&str]) -> Selection {
        Selection { cells: cells.iter().map(|s| s.to_string()).collect(), legs: vec![], kills: vec![KillMode::Timed] }
    }

    fn shape(catalog: &Catalog) -> Vec<(u32, Option<String>)> {
        let jobs = plan(catalog, &Matrix::load("default").unwrap(), &sel(&[]), 7).unwrap();
        jobs.iter().map(|j| (j.cell.number, j.leg.as_ref().map(|l| l.name.clone()))).collect()
    }

    #[test]
    fn default_gate_plans_live_cells_on_their_legs() {
        let catalog = Catalog::embedded().unwrap();
        let mut want = Vec::new();
        for cell in &catalog.cells {
            let legs: &[&str] = match cell.legs {
                Legs::All => &["default", "delete", "wal"],
                Legs::Default => &["default"],
            };
            want.extend(legs.iter().map(|l| (cell.number, Some(l.to_string()))));
        }
        assert_eq!(shape(&catalog), want);
        assert!(want.contains(&(2, Some("default".into()))) && !want.contains(&(2, Some("wal".into()))));
    }

    #[test]
    fn a_stub_is_planned_once_on_no_leg() {
        let stub = "number = 9\nid = \"later\"\nclause = \"c\"\norigin = \"o\"\nstatus = \"stub\"\n\
                    reason = \"not yet\"\nlegs = \"all\"\n";
        let catalog = Catalog::from_files([("9-later.toml".to_string(), stub.to_string())].into_iter()).unwrap();
        assert_eq!(shape(&catalog), [(9, None)]);
    }

    #[test]
    fn result_seeds_do_not_depend_on_filters() {
        let (c, m) = (Catalog::embedded().unwrap(), Matrix::load("default").unwrap());
        let all = plan(&c, &m, &sel(&[]), 7).unwrap();
        let mut one = sel(&["1"]);
        one.legs = vec!["wal".into()];
        let narrowed = plan(&c, &m, &one, 7).unwrap();
        assert_eq!(narrowed.len(), 1);
        assert_eq!(narrowed[0].seed, all[2].seed);
    }

    #[test]
    fn a_selection_that_plans_nothing_is_an_error() {
        let mut s = sel(&["2"]);
        s.legs = vec!["wal".into()];
        let e = plan(&Catalog::embedded().unwrap(), &Matrix::load("default").unwrap(), &s, 7).unwrap_err();
        assert!(e.to_string().starts_with("nothing to run"), "{e}");
    }

    #[test]
    fn a_race_runs_without_a_kill_where_timed_is_asked_and_alone_under_none() {
        let (c, m) = (Catalog::embedded().unwrap(), Matrix::load("default").unwrap());
        let mut s = sel(&["1", "2"]);
        s.kills = vec![KillMode::Timed, KillMode::Syscall];
        let kinds: Vec<_> = plan(&c, &m, &s, 7).unwrap().iter().map(|j| (j.cell.number, j.kill)).collect();
        assert!(kinds.contains(&(2, KillMode::None)) && kinds.contains(&(2, KillMode::Syscall)), "{kinds:?}");
        assert!(kinds.contains(&(1, KillMode::Timed)) && !kinds.contains(&(1, KillMode::None)), "{kinds:?}");
        s.kills = vec![KillMode::None];
        let kinds: Vec<_> = plan(&c, &m, &s, 7).unwrap().iter().map(|j| (j.cell.number, j.kill)).collect();
        assert_eq!(kinds, [(2, KillMode::None)]);
        let mut workload_only = sel(&["1"]);
        workload_only.kills = vec![KillMode::None];
        let e = plan(&c, &m, &workload_only, 7).unwrap_err();
        assert!(e.to_string().contains("--kill none"), "{e}");
    }

    #[test]
    fn a_torn_result_has_its_power_results_seed_and_every_other_mode_its_own() {
        let (c, m) = (Catalog::embedded().unwrap(), Matrix::load("default").unwrap());
        let mut s = sel(&["1"]);
        s.legs = vec!["wal".into()];
        s.kills = KillMode::all().filter(|k| k.sweeps_points()).collect();
        let jobs = plan(&c, &m, &s, 7).unwrap();
        let seed = |name: &str| jobs.iter().find(|j| j.kill.as_str() == name).unwrap().seed;
        assert_eq!(seed("torn"), seed("power"), "torn sweeps the power sweep's workload and points");
        for (i, a) in jobs.iter().enumerate() {
            for b in &jobs[i + 1..] {
                let shared = a.kill.seed_label() == b.kill.seed_label();
                assert_eq!(a.seed == b.seed, shared, "{} and {}", a.kill.as_str(), b.kill.as_str());
            }
        }
    }

    #[test]
    fn unknown_leg_is_an_error() {
        let mut s = sel(&[]);
        s.legs = vec!["wall".into()];
        let e = plan(&Catalog::embedded().unwrap(), &Matrix::load("default").unwrap(), &s, 7).unwrap_err();
        assert!(e.to_string().contains("unknown leg `wall`"), "{e}");
    }
}
