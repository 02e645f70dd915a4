//! The note a repro needs before a reader trusts it. A syscall kill point
//! is a place in the write path: its repro lands there again. A timed
//! kill is seeded too (its ack target and its phase within an operation)
//! but lands where the scheduler lets it, so a timed fire's repro repeats
//! the kill, not the instant, and may pass; the syscall result of the same
//! cell and leg, when the run has one, is the repro to trust.
//!
//! A race (cell 2) is timing all through: its repro reruns the same race,
//! not the same interleaving of its racers, and a race's syscall repro
//! kills racer r0 at the same call while the other racers' timing decides
//! what that kill leaves. Both are labelled; neither points to the other
//! as the one to trust. How often a repro did fire again is measured in
//! the run, per fire (`refire`, `pipeline::run::refire`), never assumed: a note
//! quotes no figure, and points to that measure.

use crate::plan::KillMode;

use super::{Report, Verdict};

impl Report {
    /// Notes each timed fire's repro as one that may not fire again, and
    /// points it to the syscall result of the same cell and leg, if the
    /// run has one. Derived from the results alone, so that a merged report
    /// gets the links its partitions could not see.
    pub fn annotate(&mut self) {
        let syscall: Vec<(String, String, String, Verdict)> = self
            .results
            .iter()
            .filter(|r| r.kill.is_syscall())
            .map(|r| (r.cell.clone(), r.leg.clone(), r.repro.clone(), r.verdict))
            .collect();
        for r in self.results.iter_mut().filter(|r| r.verdict.is_fire()) {
            if r.is_race() {
                r.notes.repro_note = Some(race_note(r.kill).into());
                r.notes.syscall_repro = None;
            } else if r.kill.is_timed() {
                let twin = syscall.iter().find(|(c, l, ..)| *c == r.cell && *l == r.leg);
                r.notes.syscall_repro = twin.map(|t| t.2.clone());
                r.notes.repro_note = Some(timed_note(twin.map(|t| t.3)));
            }
        }
    }
}

impl super::CellResult {
    /// Whether this result is a race's (cell 2): run without a kill, or
    /// swept over the paths of its racer r0 (only a race has several).
    pub fn is_race(&self) -> bool {
        !self.kill.kills() || !self.sweep.points_by_path.is_empty()
    }
}

/// What a race's repro is worth: the interleaving is the scheduler's.
/// A race with a kill swept racer r0's points (the syscall kill is the one
/// a race takes, `crate::cells::RaceShape`); one without ran free.
fn race_note(kill: KillMode) -> &'static str {
    if kill.kills() {
        "a race's kill point is racer r0's call, but the other racers' timing decides what the kill leaves: \
         this repro may not fire again (its refire rate says how often it did in this run)"
    } else {
        "a race's repro reruns the same race, not the same interleaving of its racers: it may not fire again \
         (its refire rate says how often it did in this run)"
    }
}

/// What a timed fire's repro is worth, and where a reliable one is.
fn timed_note(syscall: Option<Verdict>) -> String {
    let base = "a timed kill's repro repeats its ack target, not its instant: it may not fire again";
    match syscall {
        Some(Verdict::Fire) => format!("{base}; the syscall result of this cell and leg fired too, and its repro does"),
        Some(v) => format!("{base}; the syscall result of this cell and leg ended `{}`", v.as_str()),
        None => {
            format!("{base}; run `--kill syscall` on this cell and leg for a kill point that does not depend on timing")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{fire, report_of};
    use crate::report::{Format, render};

    #[test]
    fn a_timed_fire_is_labelled_in_every_format_and_points_to_its_syscall_twin() {
        let r = report_of(vec![
            fire(KillMode::Timed, "wal"),
            fire(KillMode::Syscall, "wal"),
            fire(KillMode::Timed, "delete"),
        ]);
        let (timed, twinless) = (&r.results[0], &r.results[2]);
        assert_eq!(timed.notes.syscall_repro.as_deref(), Some("crashcells run --kill syscall"));
        assert!(timed.notes.repro_note.as_deref().unwrap().contains("fired too, and its repro does"));
        assert!(r.results[1].notes.repro_note.is_none(), "a kill point's repro fires again");
        assert_eq!(twinless.notes.syscall_repro, None);
        assert!(twinless.notes.repro_note.as_deref().unwrap().contains("run `--kill syscall`"));
        for &format in Format::all() {
            let text = render(&r, format, false).unwrap();
            assert!(text.contains("may not fire again"), "{format:?}: {text}");
            assert!(text.contains("crashcells run --kill syscall"), "{format:?}");
        }
    }

    /// A race's repro, with a kill or without, is labelled as one that may
    /// not fire again, in every format, beside how often it refired in the
    /// run (measured, never a fixed figure); neither points to the other.
    #[test]
    fn a_races_repro_is_labelled_with_its_measured_refire_rate_in_every_format() {
        use crate::model::{PathPoints, Refire};
        let mut swept = fire(KillMode::Syscall, "default");
        swept.sweep.points_by_path = vec![PathPoints { path: "winning-claim".into(), planned: 4, landed: 4 }];
        swept.notes.refire = Some(Refire { runs: 5, fired: 2 });
        let mut free = fire(KillMode::None, "default");
        free.notes.refire = Some(Refire { runs: 5, fired: 5 });
        let r = report_of(vec![free, swept]);
        assert!(r.results[0].notes.repro_note.as_deref().unwrap().contains("not the same interleaving"));
        assert!(r.results[1].notes.repro_note.as_deref().unwrap().contains("the other racers' timing"));
        assert_eq!(r.results[0].notes.syscall_repro, None, "a race's syscall repro is no more reliable");
        for &format in Format::all() {
            let text = render(&r, format, false).unwrap();
            let said = match format {
                Format::Json => text.contains(r#""refire": {"#) && text.contains(r#""fired": 2"#),
                _ => text.contains("refired 5 of 5") && text.contains("refired 2 of 5"),
            };
            assert!(said && !text.contains("times in 10"), "{format:?}: {text}");
        }
    }
}
