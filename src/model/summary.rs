//! The counts of a run's verdicts, their order in every summary line, and
//! the exit code they give `run` and `report`.

use serde::{Deserialize, Serialize};

use super::{CellResult, ExitCode, Verdict};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub pass: usize,
    pub fire: usize,
    pub skip: usize,
    pub stub: usize,
    pub error: usize,
    /// Results cut short by an interrupt; absent in reports written before.
    #[serde(default)]
    pub interrupted: usize,
    /// Fires a known-findings file lists (`--known`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub known: usize,
    /// Known findings that are gone: listed, and a whole sweep where they
    /// point did not fire them. Not results: the file's entries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gone: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    pub fn of(results: &[CellResult]) -> Summary {
        let mut s = Summary::default();
        for r in results {
            *match r.verdict {
                Verdict::Pass => &mut s.pass,
                Verdict::Fire => &mut s.fire,
                Verdict::Skip => &mut s.skip,
                Verdict::Stub => &mut s.stub,
                Verdict::Error => &mut s.error,
                Verdict::Interrupted => &mut s.interrupted,
                Verdict::Known => &mut s.known,
            } += 1;
        }
        s
    }

    /// Every result counted.
    pub fn total(&self) -> usize {
        self.pass + self.fire + self.skip + self.stub + self.error + self.interrupted + self.known
    }

    /// The exit code of `run`: an error if any result errored (part of the
    /// run did not run, whatever else fired: a gate that expects a fire must
    /// not take an incomplete run for one); else a fire if anything fired
    /// that is not known, or a known finding is gone (the file is wrong: a
    /// strict expected failure); else nothing ran if every leg skipped and
    /// no fire was known; else a pass (a run whose every fire is known passes).
    pub fn exit_code(&self) -> ExitCode {
        if self.error > 0 {
            ExitCode::Error
        } else if self.fire > 0 || self.gone > 0 {
            ExitCode::Fire
        } else if self.pass == 0 && self.known == 0 {
            ExitCode::NothingRan
        } else {
            ExitCode::Pass
        }
    }

    /// The counts as `N verdict` phrases, most urgent first: errors first
    /// whenever there are any (a result that could not run must not hide
    /// behind a fire or a row of passes), then fires; known fires, known
    /// findings gone and interrupted results only when there are any:
    /// `1 fire, 0 error, 2 known, 1 gone, 7 pass, 0 skip, 1 stub`.
    pub fn counts(&self) -> String {
        use Verdict::*;
        let mut order = vec![Fire, Error, Known, Interrupted, Pass, Skip, Stub];
        if self.error > 0 {
            order.retain(|&v| v != Error);
            order.insert(0, Error);
        }
        order.retain(|&v| (v != Interrupted || self.interrupted > 0) && (v != Known || self.known > 0));
        let mut phrases: Vec<String> = order.into_iter().map(|v| format!("{} {}", self.count(v), v.as_str())).collect();
        if self.gone > 0 {
            // Beside the known fires: both are about the file of known findings.
            let at = phrases.iter().position(|p| p.ends_with(" known")).map_or(2, |i| i + 1);
            phrases.insert(at.min(phrases.len()), format!("{} gone", self.gone));
        }
        phrases.join(", ")
    }

    pub fn count(&self, v: Verdict) -> usize {
        match v {
            Verdict::Pass => self.pass,
            Verdict::Fire => self.fire,
            Verdict::Skip => self.skip,
            Verdict::Stub => self.stub,
            Verdict::Error => self.error,
            Verdict::Interrupted => self.interrupted,
            Verdict::Known => self.known,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_come_first_in_the_counts_and_decide_the_exit_code() {
        let clean = Summary { pass: 3, fire: 1, ..Summary::default() };
        assert_eq!(clean.counts(), "1 fire, 0 error, 3 pass, 0 skip, 0 stub");
        assert_eq!(clean.exit_code(), ExitCode::Fire);
        let errored = Summary { pass: 3, fire: 1, error: 6, ..Summary::default() };
        assert_eq!(errored.counts(), "6 error, 1 fire, 3 pass, 0 skip, 0 stub");
        assert_eq!(errored.exit_code(), ExitCode::Error, "a run that did not all run is not a clean finding");
    }

    #[test]
    fn known_fires_pass_and_a_known_finding_gone_fails() {
        let known = Summary { pass: 3, known: 2, ..Summary::default() };
        assert_eq!(
            (known.counts().as_str(), known.exit_code()),
            ("0 fire, 0 error, 2 known, 3 pass, 0 skip, 0 stub", ExitCode::Pass)
        );
        let only_known = Summary { known: 1, skip: 4, ..Summary::default() };
        assert_eq!(only_known.exit_code(), ExitCode::Pass, "a known fire ran: not `nothing ran`");
        let gone = Summary { gone: 1, ..known.clone() };
        assert_eq!(
            (gone.counts().as_str(), gone.exit_code()),
            ("0 fire, 0 error, 2 known, 1 gone, 3 pass, 0 skip, 0 stub", ExitCode::Fire)
        );
        let errored = Summary { error: 1, ..gone };
        assert_eq!(errored.exit_code(), ExitCode::Error, "an error still outranks");
        assert_eq!(
            Summary { gone: 1, ..Summary::default() }.counts(),
            "0 fire, 0 error, 1 gone, 0 pass, 0 skip, 0 stub"
        );
    }
}
