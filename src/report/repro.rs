//! The note a repro needs before a reader trusts it. A syscall kill point
//! is a place in the write path: its repro lands there again. A timed
//! kill is seeded too (its ack target and its phase within an operation)
//! but lands where the scheduler lets it, so a timed fire's repro repeats
//! the kill, not the instant, and may pass; the syscall result of the same
//! cell and leg, when the run has one, is the repro to trust.

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
            .filter(|r| r.kill == KillMode::Syscall)
            .map(|r| (r.cell.clone(), r.leg.clone(), r.repro.clone(), r.verdict))
            .collect();
        for r in self.results.iter_mut().filter(|r| r.kill == KillMode::Timed && r.verdict.is_fire()) {
            let twin = syscall.iter().find(|(c, l, ..)| *c == r.cell && *l == r.leg);
            r.syscall_repro = twin.map(|t| t.2.clone());
            r.repro_note = Some(timed_note(twin.map(|t| t.3)));
        }
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
    use crate::report::tests::{fire, report_of};
    use crate::report::{Format, render};

    #[test]
    fn a_timed_fire_is_labelled_in_every_format_and_points_to_its_syscall_twin() {
        let r = report_of(vec![
            fire(KillMode::Timed, "wal"),
            fire(KillMode::Syscall, "wal"),
            fire(KillMode::Timed, "delete"),
        ]);
        let (timed, twinless) = (&r.results[0], &r.results[2]);
        assert_eq!(timed.syscall_repro.as_deref(), Some("crashcells run --kill syscall"));
        assert!(timed.repro_note.as_deref().unwrap().contains("fired too, and its repro does"));
        assert!(r.results[1].repro_note.is_none(), "a kill point's repro fires again");
        assert_eq!(twinless.syscall_repro, None);
        assert!(twinless.repro_note.as_deref().unwrap().contains("run `--kill syscall`"));
        for format in [Format::Human, Format::Json, Format::Junit, Format::Markdown] {
            let text = render(&r, format, false).unwrap();
            assert!(text.contains("may not fire again"), "{format:?}: {text}");
            assert!(text.contains("crashcells run --kill syscall"), "{format:?}");
        }
    }
}
