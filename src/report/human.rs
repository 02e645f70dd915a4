//! The human rendering: one table with a header, a row per result in plan
//! order, the lines a fire or an error needs under its row (kill point,
//! findings, evidence, repro), and a summary line with errors first when
//! there are any. Colour only when asked for (a terminal without `NO_COLOR`).
//!
//! Column widths follow the longest value, so long leg names and sampled
//! points stay aligned. The `ran` column says how many trials or kill
//! points a result ran: `4 trials`, `71/71 points` (landed of planned; a
//! `--points 5` sample shows `5/5 points`), and a race's paths follow under
//! its row. The `path` column says which path judged the result (its
//! children forked, warm or exec'd; its states recorded or re-executed),
//! and the summary line the deadline the results ran under. A reason that
//! the rows of one leg share is said once, on a `leg NAME:` line before the
//! leg's first row, and those rows point to it. So is a leg judged with
//! another (`leg wal: judged with leg default: the same applied
//! configuration, wal/full, SQLite 3.54.1`): its rows are that leg's.

use std::fmt::Write;

use super::words::{LegReasons, duration, judged_legs, mode, padded, plural, ran, ran_nothing, widths};
use crate::model::{CellResult, Report, Verdict};

fn paint(text: &str, verdict: Verdict, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let code = match verdict {
        Verdict::Pass => "32",
        Verdict::Fire => "1;31",
        Verdict::Error => "35",
        Verdict::Known => "36",
        Verdict::Skip | Verdict::Stub | Verdict::Interrupted => "33",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// The table's columns, in order; the reason follows, unpadded.
const HEADER: [&str; 9] = ["verdict", "cell", "leg", "mode", "kill", "path", "ran", "acked", "time"];
/// Columns aligned to the right (numbers).
const RIGHT: [bool; 9] = [false, false, false, false, false, false, true, true, true];

fn cells(r: &CellResult) -> [String; 9] {
    let nothing = ran_nothing(r);
    [
        r.verdict.as_str().to_string(),
        r.cell.clone(),
        r.leg.clone(),
        mode(r),
        r.kill.as_str().to_string(),
        r.path(),
        ran(r),
        if nothing { "-".into() } else { r.acked.to_string() },
        if nothing { "-".into() } else { duration(r.duration_ms) },
    ]
}

pub fn render(report: &Report, color: bool) -> String {
    let shown = report.shown();
    let rows: Vec<[String; 9]> = shown.iter().map(|r| cells(r)).collect();
    let header = HEADER.map(String::from);
    let widths = widths(std::iter::once(&header[..]).chain(rows.iter().map(|r| &r[..])));
    let mut out = String::new();
    if !shown.is_empty() {
        line(&mut out, &header, &widths, "reason", None);
    }
    // A reason every row of a leg repeats is said once, before the leg's
    // first row, so that rows stay one screen wide.
    let legs = LegReasons::of(&shown);
    let mut noted = Vec::new();
    let mut judged = judged_legs(&shown);
    for (r, row) in shown.iter().zip(&rows) {
        // A leg judged with another says so once, before its first row.
        if let Some(i) = judged.iter().position(|(leg, _)| *leg == r.leg) {
            let (leg, label) = judged.remove(i);
            let _ = writeln!(out, "leg {leg}: {}", label.replace('`', ""));
        }
        if let Some(note) = legs.note_before(r, &mut noted, str::to_string) {
            let _ = writeln!(out, "{note}");
        }
        line(&mut out, row, &widths, &legs.row_reason(r), Some((r.verdict, color)));
        // The `ran` column has landed of planned; a race's paths, or points
        // that did not land, need their line.
        let worth_a_line = !r.sweep.points_by_path.is_empty() || r.sweep.points_landed != r.sweep.points_planned;
        if let Some(points) = r.points_line().filter(|_| worth_a_line) {
            let _ = writeln!(out, "    kill points landed: {points}");
        }
        if r.verdict.is_decisive() {
            decisive(&mut out, r);
        } else if r.verdict == Verdict::Known {
            known(&mut out, r);
        }
    }
    summary(&mut out, report);
    out
}

/// The lines under a known fire: its issue, its fingerprint, and where to
/// start if it is looked at again (its evidence and repro).
fn known(out: &mut String, r: &CellResult) {
    const IN: &str = "    ";
    if let Some(k) = &r.finding.known {
        let note = k.note.as_deref().map_or(String::new(), |n| format!(": {n}"));
        let _ = writeln!(out, "{IN}known: issue {}{note}", k.issue);
    }
    if let Some(fp) = &r.finding.fingerprint {
        let _ = writeln!(out, "{IN}fingerprint: {fp}");
    }
    where_to_start(out, r);
}

/// One row: padded columns, then the reason.
fn line(out: &mut String, row: &[String; 9], widths: &[usize], reason: &str, paint_as: Option<(Verdict, bool)>) {
    let mut cols = Vec::new();
    for (i, (c, &w)) in row.iter().zip(widths).enumerate() {
        let padded = padded(c, w, RIGHT[i]);
        cols.push(match (i, paint_as) {
            (0, Some((v, color))) => paint(&padded, v, color),
            _ => padded,
        });
    }
    let text = format!("{}  {reason}", cols.join("  "));
    let _ = writeln!(out, "{}", text.trim_end());
}

/// The lines under a fire or an error: everything needed to start on it.
fn decisive(out: &mut String, r: &CellResult) {
    const IN: &str = "    ";
    if let Some(fp) = &r.finding.fingerprint {
        let _ = writeln!(out, "{IN}fingerprint: {fp}");
    }
    if let Some(k) = r.deciding_kill() {
        let _ = writeln!(out, "{IN}kill point: {}", k.describe());
    }
    for d in &r.details {
        let _ = writeln!(out, "{IN}details: {}", super::words::shown_detail(d));
    }
    where_to_start(out, r);
    if let Some(s) = &r.notes.syscall_repro {
        let _ = writeln!(out, "{IN}syscall repro: {s}");
    }
}

/// Where a fire (known or not) or an error is picked up again: the path
/// that judged it and its deadline, its evidence, or why none was kept, and
/// its repro with how often it refired and the repro's note.
fn where_to_start(out: &mut String, r: &CellResult) {
    const IN: &str = "    ";
    if let Some(path) = r.path_phrase() {
        let _ = writeln!(out, "{IN}path: {path}");
    }
    if let Some(d) = r.deadline() {
        let _ = writeln!(out, "{IN}deadline: {d} per wait");
    }
    match (&r.kept.evidence, &r.kept.evidence_error) {
        (_, Some(why)) => {
            let _ = writeln!(out, "{IN}evidence: NOT KEPT: {why}");
        }
        (Some(e), None) => {
            let _ = writeln!(out, "{IN}evidence: {e}");
        }
        (None, None) => {}
    }
    if let Some(t) = &r.kept.timeline {
        let _ = writeln!(out, "{IN}timeline: {t}");
    }
    let _ = writeln!(out, "{IN}repro: {}", r.repro);
    if let Some(refire) = r.notes.refire {
        let _ = writeln!(out, "{IN}{} (the repro, rerun in this run)", refire.phrase());
    }
    if let Some(note) = &r.notes.repro_note {
        let _ = writeln!(out, "{IN}note: {note}");
    }
}

/// How a report's `containment` starts when a pid namespace was in force.
const NAMESPACE: &str = "a pid namespace";

fn summary(out: &mut String, report: &Report) {
    let s = &report.summary;
    let _ = write!(
        out,
        "{}: {} in {:.2}s (seed {}, matrix {}, SQLite {}",
        plural(s.total(), "result"),
        s.counts(),
        report.duration_ms as f64 / 1000.0,
        report.seed,
        report.matrix,
        report.sqlite_version
    );
    if let Some(p) = report.partition {
        let _ = write!(out, ", partition {p}");
    }
    if let Some(l) = &report.launcher {
        let _ = write!(out, ", operations through the child's {l}");
    }
    if let Some(d) = report.deadlines() {
        let _ = write!(out, ", deadline {d}");
    }
    // The build that judged: its version and commit.
    let _ = write!(out, ", crashcells {}", report.crashcells_version);
    out.push_str(")\n");
    let _ = writeln!(out, "store: {}", report.store());
    // The namespace is the norm; the fallback is news (what a SIGKILL of
    // the driver would leave running).
    if let Some(c) = report.containment.as_deref().filter(|c| !c.starts_with(NAMESPACE)) {
        let _ = writeln!(out, "containment: {c}");
    }
    for e in &report.escaped {
        let _ = writeln!(out, "escaped: {e}");
    }
    for o in &report.outside {
        let _ = writeln!(out, "outside its folder: {o}");
    }
    for line in super::words::not_durable(report) {
        let _ = writeln!(out, "power loss: {line}");
    }
    known_findings(out, report);
    if report.new_only {
        let _ = writeln!(out, "new only: {}", report.new_only_line());
    }
    if report.interrupted {
        let missing = report.share().map(|p| p.saturating_sub(report.results.len()));
        match missing {
            Some(n) if n > 0 => {
                let _ = writeln!(out, "interrupted: a partial report; {} did not run", plural(n, "planned result"));
            }
            _ => out.push_str("interrupted: a partial report; results not listed did not run\n"),
        }
    }
}

/// The known findings that did not fire: each one gone on a line of its
/// own (the gate failed on it), those that ran without firing noted after
/// them (not in a new-only report: no news), then the file in one line,
/// which counts those that did not run here (another matrix's findings: a
/// line each would bury the report).
fn known_findings(out: &mut String, report: &Report) {
    for k in report.gone() {
        let _ = writeln!(out, "GONE: {}", k.sentence().unwrap_or_default());
    }
    for k in report.known_shown().into_iter().filter(|k| k.status == crate::model::KnownStatus::NotFired) {
        let _ = writeln!(out, "note: {}", k.sentence().unwrap_or_default());
    }
    if let Some(said) = report.known_line() {
        let _ = writeln!(out, "known findings: {}", said.replace('`', ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::TrialIndex;
    use crate::plan::KillMode;

    #[test]
    fn one_of_anything_is_singular_in_the_table_and_its_lines() {
        use crate::kill::KillPoint;
        use crate::model::tests::{fire, report_of};
        let mut r = fire(KillMode::Syscall, "wal");
        (r.sweep.points_planned, r.sweep.points_landed) = (Some(1), Some(1));
        let (file, offset, len) = (Some("store.db".into()), Some(0), Some(1));
        r.kill_points = vec![KillPoint {
            trial: TrialIndex::nth(1),
            after_acks: 1,
            ordinal: Some(1),
            file,
            offset,
            len,
            ..KillPoint::default()
        }];
        let text = render(&report_of(vec![r]), false);
        assert!(text.contains(" 1/1 point ") && !text.contains("points"), "{text}");
        assert!(
            text.contains("kill point: trial 1, after 1 ack, at syscall #1 (store.db, offset 0, 1 byte)"),
            "{text}"
        );
    }

    #[test]
    fn a_result_that_ran_nothing_shows_no_point_and_no_mode() {
        use crate::model::tests::{fire, report_of};
        let mut race = fire(KillMode::Power, "default");
        race.verdict = Verdict::Skip;
        (race.effective_mode, race.synchronous, race.acked, race.trials) = (None, None, 0, 1);
        race.reason = "power-loss states are not modelled for races".into();
        let text = render(&report_of(vec![race]), false);
        let row = text.lines().nth(1).unwrap();
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(words[..9], ["skip", "c", "default", "-", "power", "-", "-", "-", "-"], "{text}");
    }

    #[test]
    fn a_known_fire_says_where_to_start_as_a_fire_does_and_when_no_evidence_was_kept() {
        use crate::model::known::Known;
        use crate::model::tests::{fire, report_of};
        let mut r = fire(KillMode::Syscall, "wal");
        (r.verdict, r.finding.known) = (Verdict::Known, Some(Known { issue: "#31".into(), note: None }));
        let text = render(&report_of(vec![r]), false);
        assert!(text.contains("    known: issue #31\n"), "{text}");
        assert!(text.contains("    evidence: NOT KEPT: could not keep /e: Read-only file system\n"), "{text}");
        assert!(text.contains("    repro: crashcells run --kill syscall\n"), "{text}");
    }

    /// A reason shared by a leg's rows is said once, before the leg's first
    /// row; a row with a reason of its own keeps it.
    #[test]
    fn a_reason_shared_by_a_legs_rows_is_said_once() {
        use crate::model::tests::{fire, report_of};
        let why = "ran delete: WAL-reset gate: SQLite 3.40.1 is affected, so WAL is refused and DELETE applied";
        let row = |leg: &str, verdict, reason: &str| {
            let mut r = fire(KillMode::Syscall, leg);
            (r.verdict, r.reason) = (verdict, reason.to_string());
            r
        };
        let results = vec![
            row("default", Verdict::Pass, why),
            row("wal", Verdict::Pass, why),
            row("default", Verdict::Pass, why),
            row("default", Verdict::Fire, "a hole at position 1"),
        ];
        let text = render(&report_of(results), false);
        // Once for the default leg, once on the wal leg's only row.
        assert_eq!(text.matches(why).count(), 2, "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], format!("leg default: {why}"), "{text}");
        assert_eq!(text.matches("(leg default's reason, above)").count(), 2, "{text}");
        assert!(text.contains("a hole at position 1"), "{text}");
        // One row of a leg: nothing repeated, the reason stays on its row.
        assert!(!text.contains("leg wal:") && lines[3].ends_with(why), "{text}");
    }

    /// A shared reason whose rows are all skips names the cells it skips
    /// (#53): cell 2's two rows skipped for `park` read "cell 2 skipped on
    /// leg default: …", not "leg default: …", as if the leg were about
    /// `park`; skips of two cells name both.
    #[test]
    fn a_shared_skip_names_the_cells_it_skips() {
        use crate::model::tests::{fire, report_of};
        let park = "the child does not implement `park`";
        let row = |number: u32, leg: &str, reason: &str| {
            let mut r = fire(KillMode::Syscall, leg);
            (r.number, r.verdict, r.reason) = (number, Verdict::Skip, reason.to_string());
            r
        };
        let text = render(&report_of(vec![row(2, "default", park), row(2, "default", park)]), false);
        assert_eq!(text.lines().nth(1), Some(format!("cell 2 skipped on leg default: {park}").as_str()), "{text}");
        assert!(!text.contains("\nleg default:"), "{text}");
        let gate = "requested wal, child ran delete";
        let text = render(&report_of(vec![row(3, "wal", gate), row(1, "wal", gate)]), false);
        assert!(text.contains(&format!("\ncells 1, 3 skipped on leg wal: {gate}\n")), "{text}");
    }

    /// The report names the store that ran: a gate that checked the
    /// built-in reference store, not the team's, says so.
    #[test]
    fn the_report_names_the_store_that_ran() {
        use crate::model::tests::{fire, report_of};
        let mut report = report_of(vec![fire(KillMode::Syscall, "wal")]);
        report.child = "reference".into();
        assert!(render(&report, false).contains("\nstore: the built-in reference store\n"));
        report.child = "python3 store.py".into();
        assert!(render(&report, false).contains("\nstore: `python3 store.py`\n"));
    }
}
