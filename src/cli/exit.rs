//! What a run ends with: its exit code (docs of `crashcells --help`), and
//! on stderr the line that says why when it is not the report's alone (an
//! interrupt, an empty share, nothing probed).

use super::output::note;
use crate::model::{self, ExitCode};

/// The line a run that probed nothing ends with, so that a gate that reads
/// only stderr still sees why it got no evidence.
fn nothing_ran(s: &model::Summary) -> String {
    format!(
        "nothing ran: every planned leg skipped ({} skip, {} stub), so this run is no evidence either way",
        s.skip, s.stub
    )
}

/// The report's exit code; an interrupted run says how much of it ran, and
/// a share of a partitioned run that holds no result is no failure.
pub(super) fn run_exit_code(report: &model::Report, share: usize) -> ExitCode {
    if let Some(sig) = report.signal {
        let name = nix::sys::signal::Signal::try_from(sig).map_or_else(|_| sig.to_string(), |s| s.as_str().to_string());
        let done = report.results.iter().filter(|r| r.verdict != model::Verdict::Interrupted).count();
        note(&format!("interrupted by {name}: partial report; {done} of {share} results finished"));
        return report.exit_code();
    }
    if share == 0 {
        note("this partition holds no result of the plan: nothing to run");
        return ExitCode::Pass;
    }
    let code = report.exit_code();
    if code == ExitCode::NothingRan {
        note(&nothing_ran(&report.summary));
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run --help` names each exit code by the number [`ExitCode`] gives it.
    #[test]
    fn the_help_names_each_code_by_its_number() {
        let help = super::super::RUN_EXAMPLES.split_whitespace().collect::<Vec<_>>().join(" ");
        let said = [
            (ExitCode::Pass, "nothing fired"),
            (ExitCode::Fire, "a cell fired"),
            (ExitCode::Error, "bad input"),
            (ExitCode::NothingRan, "nothing ran"),
        ];
        for (code, words) in said {
            assert!(help.contains(&format!("{} {words}", code.code())), "{code:?}: {help}");
        }
        assert!(help.contains("128 + signal"), "{help}");
    }
}
