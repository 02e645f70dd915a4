//! Each configuration judged once (issue 51): the configuration each leg
//! of a run really applies, learned before any cell runs by a probe of
//! the leg (`append --stop-after 1` with the leg's config home and
//! library), and the rule that a leg whose applied configuration an
//! earlier leg of the run already has is not run again: its results are
//! that leg's, copied and labelled ([`crate::model::JudgedWith`]).
//!
//! Crash model and clause: unchanged. Two legs that apply the same
//! journal mode, the same synchronous level, the same SQLite library (its
//! version and source id, as the child reports them) and ask for the
//! same library run the same store the same way; a second judgement of
//! it repeats the first (the resolver's `default` leg and the `wal` leg
//! it picks, say). Deciding it from the probes, at plan time, keeps it
//! deterministic whatever `--jobs` runs first. A store whose recovery
//! reads the requested leg rather than the applied one is judged on
//! every leg with `--every-leg` (docs/PROTOCOL.md).

use std::collections::HashMap;

use crashcells_protocol::Ready;

use crate::journalmode::ReportedMode;
use crate::matrix::Leg;
use crate::plan::Job;
use crate::sqlitelib::Library;

/// What a leg really ran: the ready record's applied mode and level, the
/// SQLite the child loaded, and the library the leg asked for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Applied {
    pub journal_mode: ReportedMode,
    pub synchronous: Option<String>,
    pub sqlite_version: String,
    pub sqlite_source_id: Option<String>,
    /// The leg's own option: the library it put under its child.
    pub library: Option<Library>,
}

impl Applied {
    /// The configuration `ready` reports for a child of `leg`.
    pub fn of(ready: &Ready, leg: &Leg) -> Applied {
        Applied {
            journal_mode: ReportedMode::said(&ready.journal_mode),
            synchronous: ready.synchronous.as_ref().map(|s| s.to_ascii_lowercase()),
            sqlite_version: ready.sqlite_version.clone(),
            sqlite_source_id: ready.sqlite_source_id.clone(),
            library: leg.sqlite.clone(),
        }
    }

    /// The configuration `ready` reports for a child of `leg`, if the leg
    /// got what it asked for: a leg whose child ran another mode, level or
    /// library than it asked for is skipped by its leg audit, and a copy
    /// of another leg's results would turn that skip into their verdicts
    /// (the `wal` leg on a SQLite with the WAL-reset bug applies DELETE,
    /// as the `delete` leg does, and must still skip).
    pub fn honored(ready: &Ready, leg: &Leg) -> Option<Applied> {
        let applied = Applied::of(ready, leg);
        let mode = leg.journal_mode.is_none_or(|m| applied.journal_mode.mode() == Some(m));
        let level = leg.synchronous.is_none_or(|s| Some(s.as_str()) == applied.synchronous.as_deref());
        let library = match (&leg.sqlite, &leg.placed) {
            (Some(lib), Some(placed)) => {
                crate::sqlitelib::not_loaded(lib, placed, &ready.sqlite_version, ready.sqlite_source_id.as_deref())
                    .is_none()
            }
            (Some(_), None) => false,
            (None, _) => true,
        };
        (mode && level && library).then_some(applied)
    }

    /// `wal/full, SQLite 3.54.1`: what a copied result's label names.
    pub fn words(&self) -> String {
        let level = self.synchronous.as_deref().unwrap_or("-");
        format!("{}/{level}, SQLite {}", self.journal_mode, self.sqlite_version)
    }
}

/// For each leg (by name) whose applied configuration an earlier leg of
/// `legs` (in the run's order) has: that leg, and the configuration. A
/// leg whose probe said nothing, or showed it not honored (`None`), is
/// judged on its own.
pub fn judged_with(legs: &[(String, Option<Applied>)]) -> HashMap<String, (String, Applied)> {
    let mut first: HashMap<&Applied, &str> = HashMap::new();
    let mut same = HashMap::new();
    for (name, applied) in legs {
        let Some(applied) = applied else { continue };
        match first.get(applied) {
            Some(judge) => {
                same.insert(name.clone(), (judge.to_string(), applied.clone()));
            }
            None => {
                first.insert(applied, name);
            }
        }
    }
    same
}

/// For each job of `jobs`: the index of the job whose result it takes
/// (the same cell and kill mode on the leg it is judged with), if that
/// job is in `jobs` too (a `--partition` share may not hold it; then the
/// job runs).
pub fn copies(jobs: &[Job], same: &HashMap<String, (String, Applied)>) -> Vec<Option<usize>> {
    let leg = |j: &Job| j.leg.as_ref().map(|l| l.name.clone());
    jobs.iter()
        .map(|job| {
            let (judge, _) = same.get(&leg(job)?)?;
            jobs.iter().position(|j| {
                j.cell.id == job.cell.id && j.kill == job.kill && leg(j).as_deref() == Some(judge.as_str())
            })
        })
        .collect()
}

/// The legs of `jobs`, each once, in the order they first appear.
pub fn legs_of(jobs: &[Job]) -> Vec<&Leg> {
    let mut legs: Vec<&Leg> = Vec::new();
    for leg in jobs.iter().filter_map(|j| j.leg.as_ref()) {
        if !legs.iter().any(|l| l.name == leg.name) {
            legs.push(leg);
        }
    }
    legs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::killmode::KillMode;
    use crate::matrix::Matrix;
    use crate::plan::{Selection, plan};

    fn applied(mode: &str, level: &str, version: &str) -> Option<Applied> {
        Some(Applied {
            journal_mode: mode.into(),
            synchronous: Some(level.into()),
            sqlite_version: version.into(),
            sqlite_source_id: Some(format!("{version} id")),
            library: None,
        })
    }

    #[test]
    fn a_leg_that_applies_an_earlier_legs_configuration_is_judged_with_it() {
        let legs = vec![
            ("default".to_string(), applied("wal", "full", "3.54.1")),
            ("delete".to_string(), applied("delete", "full", "3.54.1")),
            ("wal".to_string(), applied("wal", "full", "3.54.1")),
            ("wal-sync-normal".to_string(), applied("wal", "normal", "3.54.1")),
            ("unheard".to_string(), None),
            ("other-sqlite".to_string(), applied("wal", "full", "3.40.1")),
        ];
        let same = judged_with(&legs);
        assert_eq!(same.len(), 1, "{same:?}");
        let (judge, config) = &same["wal"];
        assert_eq!((judge.as_str(), config.words()), ("default", "wal/full, SQLite 3.54.1".to_string()));
        let mut bundled = legs[2].clone();
        bundled.1.as_mut().unwrap().library = Some(Library::Bundled);
        bundled.0 = "bundled-wal".into();
        assert!(judged_with(&[legs[0].clone(), bundled]).is_empty(), "another library asked for");
        let resolver_delete = [("delete".into(), applied("delete", "full", "3.40.1")), legs[0].clone()];
        let default_later = [resolver_delete[0].clone(), ("default".into(), applied("delete", "full", "3.40.1"))];
        assert_eq!(judged_with(&default_later)["default"].0, "delete", "the earlier leg judges");
    }

    fn ready(mode: &str, level: &str) -> Ready {
        serde_json::from_value(serde_json::json!({
            "protocol": 2, "pid": 1, "op": "append", "sqlite_version": "3.40.1",
            "journal_mode": mode, "synchronous": level,
        }))
        .unwrap()
    }

    /// A leg that did not get the mode or level it asked for takes no
    /// other leg's results: its leg audit skips it (the WAL-reset gate's
    /// DELETE under the `wal` leg is the `delete` leg's configuration).
    #[test]
    fn a_leg_not_honored_is_judged_on_its_own() {
        let m = Matrix::load("audit").unwrap();
        let leg = |name: &str| m.legs.iter().find(|l| l.name == name).unwrap().clone();
        assert!(Applied::honored(&ready("delete", "full"), &leg("wal")).is_none(), "the gate refused WAL");
        assert!(Applied::honored(&ready("wal", "full"), &leg("wal-sync-off")).is_none(), "another level");
        assert!(Applied::honored(&ready("delete", "full"), &leg("default")).is_some(), "the resolver's choice");
        assert!(Applied::honored(&ready("wal", "off"), &leg("wal-sync-off")).is_some());
        let bundled = Leg { sqlite: Some(Library::Bundled), ..leg("wal") };
        assert!(Applied::honored(&ready("wal", "full"), &bundled).is_none(), "a library never placed");
        let legs = [("delete", ready("delete", "full")), ("wal", ready("delete", "full"))];
        let heard: Vec<_> = legs.iter().map(|(l, r)| (l.to_string(), Applied::honored(r, &leg(l)))).collect();
        assert!(judged_with(&heard).is_empty(), "{heard:?}");
    }

    #[test]
    fn a_job_copies_the_same_cell_and_kill_on_its_judge_and_runs_where_that_is_not_planned() {
        let (c, m) = (Catalog::embedded().unwrap(), Matrix::load("default").unwrap());
        let sel = Selection { cells: vec!["1".into(), "2".into()], legs: vec![], kills: vec![KillMode::Syscall] };
        let jobs = plan(&c, &m, &sel, 7).unwrap();
        let same = judged_with(&[
            ("default".into(), applied("wal", "full", "3.54.1")),
            ("wal".into(), applied("wal", "full", "3.54.1")),
        ]);
        let copies = copies(&jobs, &same);
        for (i, job) in jobs.iter().enumerate() {
            let leg = job.leg.as_ref().unwrap().name.as_str();
            match copies[i] {
                Some(j) => {
                    assert_eq!(leg, "wal");
                    let judge = &jobs[j];
                    assert_eq!((judge.leg.as_ref().unwrap().name.as_str(), &judge.cell.id), ("default", &job.cell.id));
                }
                None => assert_ne!(leg, "wal", "{}", job.cell.id),
            }
        }
        let wal_only: Vec<Job> = jobs.iter().filter(|j| j.leg.as_ref().unwrap().name == "wal").cloned().collect();
        assert!(super::copies(&wal_only, &same).iter().all(Option::is_none), "its judge not in the share");
    }
}
