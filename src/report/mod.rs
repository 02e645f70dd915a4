//! The renderers of the result model ([`crate::model`]): human, JSON,
//! JUnit and Markdown for a run's report, the words they share, and each
//! kept fire's `timeline.html`. They read the model and never change it;
//! nothing in the pipeline calls them: the run's dispatcher hands each
//! event to the ones that want it.

pub mod human;
pub mod junit;
pub mod markdown;
mod render;
pub mod timeline;
pub mod words;

pub use render::{Format, render};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::{fire, report_of};
    use crate::model::{Children, Report, States, Verdict};
    use crate::plan::KillMode;

    #[test]
    fn evidence_that_could_not_be_kept_is_said_in_every_format() {
        let r = report_of(vec![fire(KillMode::Syscall, "wal")]);
        for &format in Format::all() {
            let text = render(&r, format, false).unwrap();
            assert!(text.contains("Read-only file system"), "{format:?}: {text}");
        }
        assert!(render(&r, Format::Human, false).unwrap().contains("evidence: NOT KEPT: could not keep /e"));
        assert!(r.to_json().contains(r#""evidence_error": "could not keep /e: Read-only file system""#));
    }

    /// Every result, a pass too, says in every format which path judged
    /// it and the deadline it ran under.
    #[test]
    fn the_path_and_the_deadline_are_said_in_every_format() {
        let mut pass = fire(KillMode::Syscall, "wal");
        pass.verdict = Verdict::Pass;
        (pass.judged.children, pass.judged.states, pass.judged.deadline_ms) =
            (Some(Children::Warm), Some(States::Recorded), Some(41_730));
        let r = report_of(vec![pass]);
        for &format in Format::all() {
            let text = render(&r, format, false).unwrap();
            let said = match format {
                Format::Json => text.contains(r#""children": "warm""#) && text.contains(r#""deadline_ms": 41730"#),
                Format::Human | Format::Markdown => text.contains("warm/recorded") && text.contains("41.7s"),
                Format::Junit => {
                    text.contains("path: children from the child&apos;s warm pool") && text.contains("41.7s")
                }
            };
            assert!(said, "{format:?}: {text}");
        }
    }

    #[test]
    fn an_interrupted_result_is_its_own_count_and_a_report_exits_as_its_run() {
        let mut cut = fire(KillMode::Timed, "wal");
        cut.verdict = Verdict::Interrupted;
        let mut r = report_of(vec![cut]);
        assert_eq!((r.summary.interrupted, r.summary.error, r.summary.total()), (1, 0, 1));
        assert_eq!(r.summary.counts(), "0 fire, 0 error, 1 interrupted, 0 pass, 0 skip, 0 stub");
        (r.interrupted, r.signal) = (true, Some(libc::SIGTERM));
        assert_eq!(r.exit_code().code(), 143);
        let human = render(&r, Format::Human, false).unwrap();
        assert!(human.contains("1 result: 0 fire"), "singular: {human}");
    }

    #[test]
    fn a_report_without_the_newer_fields_still_reads() {
        let old = r#"{"schema":"crashcells.report.v1","crashcells_version":"0.1.0","sqlite_version":"3.54.1",
            "seed":1,"matrix":"default","duration_ms":5,"results":[],
            "summary":{"pass":0,"fire":0,"skip":0,"stub":0,"error":0}}"#;
        let r = Report::from_json("old.json", old).unwrap();
        assert_eq!((r.os.as_str(), r.run_id.as_str()), ("", ""));
        assert!(markdown::render(&r).contains("| OS | not recorded |"));
    }
}
