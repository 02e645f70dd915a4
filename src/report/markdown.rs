//! The Markdown rendering, for posting a run on a tracking issue: a heading
//! with the verdict counts (errors first when there are any), the
//! environment (with the commit and a link to the CI run when the run
//! recorded them), the known findings when the run was judged against a
//! file of them (`--known`: each one's issue and what became of it, a gone
//! one first), a table of every result (with the kill points that landed
//! and the path that judged it: children forked, warm or exec'd, states
//! recorded or re-executed),
//! then a section per fire and per error (a known fire has its row and its
//! issue, not a section: it is filed already): a heading that names it
//! ([`section_heading`]: a fire's fingerprint) and a collapsed `<details>` whose `<summary>` has
//! the essentials (cell, leg, kill, reason) and whose body has its clause,
//! leg, kill point, what was acked against what was recovered, the
//! integrity check, the path and the deadline, the evidence folder and the
//! command that reruns it with how often it refired in the run.
//!
//! GitHub refuses a comment longer than 65,536 characters, and a run of the
//! audit matrix can fire dozens of times: the rendering stays under
//! [`LIMIT`] by leaving out whole sections from the end (their rows stay in
//! the table) and saying how many it left out and where the whole report is.
//! GitHub-flavoured: table cells are escaped so that a reason cannot break
//! the table, and the text inside HTML elements is escaped as HTML. A
//! reason the rows of one leg share is said once, above the table.

use std::fmt::Write;

use super::words::{LegReasons, duration, judged_legs, plural, ran, ran_nothing};
use crate::model::{CellResult, Report, Verdict};

/// The most characters a rendering has: below GitHub's 65,536 for an issue
/// comment, with room for a line that a poster puts before it.
pub const LIMIT: usize = 64_000;

/// The rendering of `report` within [`LIMIT`], for a report that is in no
/// file (`run --format markdown`): a note that leaves sections out points to
/// the evidence folders.
pub fn render(report: &Report) -> String {
    render_within(report, &[], LIMIT)
}

/// The rendering of `report` within `limit` characters. `sources` are the
/// files that hold the whole report (the JSON that `report --from` read),
/// which a note that leaves sections out names.
pub fn render_within(report: &Report, sources: &[String], limit: usize) -> String {
    let mut head = String::new();
    heading(&mut head, report);
    known_findings(&mut head, report);
    let shown = report.shown();
    let decisive: Vec<&CellResult> = shown.iter().copied().filter(|r| r.verdict.is_decisive()).collect();
    let sections: Vec<String> = decisive.iter().map(|r| section(r)).collect();
    // No empty heading: a new-only post with no new fire lists none, and a
    // run with no result (interrupted at once, an empty share) says so.
    let every_row = match (shown.is_empty(), report.new_only) {
        (true, true) => String::new(),
        (true, false) => "### Results\n\nNo result finished.\n\n".to_string(),
        (false, _) => table(&shown),
    };
    let whole = format!("{head}{every_row}{}", sections.concat());
    if chars(&whole) <= limit {
        return whole;
    }
    // Whole sections from the end, until the rest and the note fit; a
    // table too long for even that keeps only the fires' and errors' rows.
    let short_table = table(&decisive) + &rows_note(shown.len() - decisive.len());
    for rows in [every_row, short_table] {
        let base = chars(&head) + chars(&rows);
        let mut kept_chars = 0;
        let sizes: Vec<usize> = sections.iter().map(|s| chars(s)).collect();
        let mut best = None;
        for kept in 0..=sections.len() {
            let note = left_out_note(&decisive[kept..], sources);
            if base + kept_chars + chars(&note) <= limit {
                best = Some((kept, note));
            }
            if let Some(size) = sizes.get(kept) {
                kept_chars += size;
            }
        }
        if let Some((kept, note)) = best {
            return format!("{head}{rows}{}{note}", sections[..kept].concat());
        }
    }
    cut(&format!("{head}{}", table(&decisive)), limit, sources)
}

/// Characters as GitHub counts them for its limit.
fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The last resort for a table of fires longer than the limit by itself:
/// the text cut at a line, and a note.
fn cut(text: &str, limit: usize, sources: &[String]) -> String {
    let note =
        format!("\n**Cut here** to stay under GitHub's 65,536-character limit. {}\n", whole_report(sources, &[]));
    let room = limit.saturating_sub(chars(&note));
    let end = text.char_indices().nth(room).map_or(text.len(), |(i, _)| i);
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!("{}{note}", &text[..end])
}

/// The line under a table that shows only the fires and errors.
fn rows_note(left_out: usize) -> String {
    if left_out == 0 {
        return String::new();
    }
    let n = plural(left_out, "other result");
    format!("{n} (passed, skipped, stubs or interrupted) left out of this table to keep it short.\n\n")
}

/// Says how many sections were left out, and where the whole report is.
fn left_out_note(left_out: &[&CellResult], sources: &[String]) -> String {
    if left_out.is_empty() {
        return String::new();
    }
    let fires = left_out.iter().filter(|r| r.verdict == Verdict::Fire).count();
    let errors = left_out.len() - fires;
    let counted = match (fires, errors) {
        (_, 0) => plural(fires, "fire"),
        (0, _) => plural(errors, "error"),
        _ => format!("{} and {}", plural(fires, "fire"), plural(errors, "error")),
    };
    format!(
        "### {counted} left out\n\nTheir rows are in the table above; their sections are left out to keep this \
         under GitHub's 65,536-character limit for a comment. {}\n",
        whole_report(sources, left_out)
    )
}

/// Where the whole report is: the files it was read from, and the evidence
/// folders of the results left out (each holds the result as `result.json`).
fn whole_report(sources: &[String], left_out: &[&CellResult]) -> String {
    let mut folders: Vec<&str> = Vec::new();
    for e in left_out.iter().filter_map(|r| r.kept.evidence.as_deref()) {
        let run = std::path::Path::new(e).parent().and_then(|p| p.to_str()).unwrap_or(e);
        if !folders.contains(&run) {
            folders.push(run);
        }
    }
    let quoted = |v: &[&str]| v.iter().map(|s| format!("`{}`", line(s))).collect::<Vec<_>>().join(", ");
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
    let mut s = match sources.is_empty() {
        true => "The whole report: rerun with `--format json --out FILE` to keep it in one file".to_string(),
        false => format!("The whole report is in {} (`crashcells report --from` renders it)", quoted(&sources)),
    };
    if !folders.is_empty() {
        let _ = write!(s, "; the evidence of each result, with its `result.json`, is under {}", quoted(&folders));
    }
    s.push('.');
    s
}

fn heading(out: &mut String, report: &Report) {
    let _ = writeln!(out, "## crashcells: {}\n", report.summary.counts());
    if report.new_only {
        let _ = writeln!(out, "**New only**: {}; the counts above are the whole run's.\n", report.new_only_line());
    }
    if report.interrupted {
        let _ = writeln!(out, "**The run was interrupted**: results that had not finished are missing.\n");
    }
    for l in super::words::not_durable(report) {
        let _ = writeln!(out, "**Power loss**: {}\n", line(&l));
    }
    let modes = report.journal_modes();
    let mut rows = vec![
        ("crashcells", report.crashcells_version.clone()),
        ("SQLite", report.sqlite_version.clone()),
        ("OS", if report.os.is_empty() { "not recorded".into() } else { report.os.clone() }),
        ("journal modes", if modes.is_empty() { "none ran".into() } else { modes.join(", ") }),
        ("matrix", format!("`{}`", report.matrix)),
        ("seed", format!("`{}`", report.seed)),
        ("store", report.store()),
    ];
    if let Some(p) = report.partition {
        rows.push(("partition", format!("`{p}`")));
    }
    let mutants = report.mutants();
    if !mutants.is_empty() {
        let names: Vec<String> = mutants.iter().map(|m| format!("`{m}`")).collect();
        rows.push(("mutant", names.join(", ")));
    }
    rows.push(("run", format!("`{}` in {}", report.run_id, duration(report.duration_ms))));
    if let Some(d) = report.deadlines() {
        rows.push(("deadline", format!("{d} per wait (`--deadline`, scaled by the child's start)")));
    }
    if let Some(ci) = &report.ci {
        if !ci.commit.is_empty() {
            let commit = match ci.commit_url() {
                Some(url) => format!("[`{}`]({url})", ci.commit),
                None => format!("`{}`", ci.commit),
            };
            rows.push(("commit", commit));
        }
        if !ci.run_url.is_empty() {
            rows.push(("CI run", ci.run_url.clone()));
        }
    }
    let _ = writeln!(out, "| environment | |\n|---|---|");
    for (k, v) in rows {
        let _ = writeln!(out, "| {k} | {} |", cell_text(&v));
    }
    out.push('\n');
}

/// The known findings and what became of each, gone ones first (they
/// failed the run), when the run was judged against a file of them: the
/// file's line (the whole run's, in a new-only post too), then each one
/// shown (a new-only post shows those gone).
fn known_findings(out: &mut String, report: &Report) {
    use crate::model::KnownStatus::*;
    let Some(file) = &report.known_file else { return };
    let said = report.known_line().unwrap_or_default();
    let mut entries = report.known_shown();
    if entries.is_empty() {
        let _ = writeln!(out, "Known findings: {}.\n", line(&said));
        return;
    }
    let _ = writeln!(out, "### Known findings (`{}`)\n", line(file));
    let _ = writeln!(out, "{}.\n", line(&said));
    for k in report.gone() {
        let _ = writeln!(out, "**Gone:** {}\n", line(&k.sentence().unwrap_or_default()));
    }
    let _ = writeln!(out, "| fingerprint | issue | status | |\n|---|---|---|---|");
    entries.sort_by_key(|k| k.status != Gone);
    for k in entries {
        let (status, text) = match k.status {
            Fired => ("fired", k.finding.note.clone().unwrap_or_default()),
            Gone => ("**gone**", format!("did not fire: the file is wrong ({})", k.why)),
            NotFired => ("not fired", k.why.clone()),
            NotRun => ("not run", k.why.clone()),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {status} | {} |",
            k.finding.fingerprint,
            cell_text(&k.finding.issue),
            cell_text(&text)
        );
    }
    out.push('\n');
}

/// The table of `results`, one row each.
fn table(results: &[&CellResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### Results\n");
    if results.is_empty() {
        return out;
    }
    // A reason every row of a leg repeats is said once, above the table
    // (a note cannot sit between a table's rows).
    let legs = LegReasons::of(results);
    let judged = judged_legs(results);
    for (leg, label) in &judged {
        let _ = writeln!(out, "- Leg `{leg}`: {}", line(label));
    }
    for note in legs.lines(|leg| format!("`{leg}`")) {
        // A list item starts as a sentence does, as the judged legs' do.
        let mut chars = note.chars();
        let note: String = chars.next().map(|c| c.to_ascii_uppercase()).into_iter().chain(chars).collect();
        let _ = writeln!(out, "- {}", line(&note));
    }
    if !legs.is_empty() || !judged.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "| verdict | cell | leg | mode | kill | path | ran | acked | time | reason |");
    let _ = writeln!(out, "|---|---|---|---|---|---|--:|--:|--:|---|");
    for r in results {
        let verdict = match r.verdict {
            Verdict::Fire | Verdict::Error => format!("**{}**", r.verdict.as_str()),
            _ => r.verdict.as_str().to_string(),
        };
        let reason = match (&r.finding.known, r.verdict) {
            (Some(k), Verdict::Known) => format!("issue {}: {}", k.issue, r.reason),
            _ => legs.row_reason(r).into_owned(),
        };
        // A stub, or a skip before any trial, ran nothing: its counts would only be noise.
        let counted = |v: String| if ran_nothing(r) { "-".to_string() } else { v };
        // `ran` says landed of planned kill points for a sweep.
        let _ = writeln!(
            out,
            "| {verdict} | {} `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.number,
            r.cell,
            cell_text(&r.leg),
            r.effective_mode.as_ref().map_or("-".into(), ToString::to_string),
            r.kill.as_str(),
            r.path(),
            ran(r),
            counted(r.acked.to_string()),
            counted(duration(r.duration_ms)),
            cell_text(&reason)
        );
    }
    out.push('\n');
    out
}

/// The heading of a fire's or an error's section: what it is, in one line:
/// a fire's fingerprint (what makes two fires "the same finding" across
/// runs, so that a tracking issue's reader sees a repeat at a glance) and
/// its leg; an error's cell, leg and kill.
pub fn section_heading(r: &CellResult) -> String {
    match &r.finding.fingerprint {
        Some(fp) => format!("{}: `{fp}` on leg `{}`", r.verdict.as_str(), r.leg),
        None => format!("{}: `{}` on leg `{}` ({})", r.verdict.as_str(), r.cell, r.leg, r.kill.phrase()),
    }
}

/// The most characters of a reason in a `<summary>`: one line on a wide
/// screen; the whole reason is in the body.
const SUMMARY_REASON: usize = 160;

/// The `<summary>` of a section: verdict, cell, leg, kill and reason, as
/// HTML (Markdown is not rendered inside it).
fn summary_line(r: &CellResult) -> String {
    let reason = match r.reason.char_indices().nth(SUMMARY_REASON) {
        Some((i, _)) => format!("{}…", &r.reason[..i]),
        None => r.reason.clone(),
    };
    format!(
        "<b>{}</b> · <code>{}</code> · leg <code>{}</code> · {} · {}",
        r.verdict.as_str(),
        html(&r.cell),
        html(&r.leg),
        html(r.kill.phrase()),
        html(&reason)
    )
}

/// The section of one fire or error: its heading, and its evidence in a
/// collapsed `<details>` (the blank lines around the body let GitHub render
/// the Markdown inside).
fn section(r: &CellResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### {}\n", section_heading(r));
    let _ = writeln!(out, "<details>\n<summary>{}</summary>\n", summary_line(r));
    let _ = writeln!(out, "> **Clause {}:** {}\n", r.number, line(&r.clause));
    let _ = writeln!(out, "- **Reason:** {}", line(&r.reason));
    if let Some(fp) = &r.finding.fingerprint {
        let _ = writeln!(out, "- **Fingerprint:** `{fp}`");
    }
    let _ = writeln!(out, "- **Leg:** `{}`: {}", r.leg, r.mode_line());
    let _ = writeln!(out, "- **Kill point:** {}", kill_point(r));
    if let Some(points) = r.points_line() {
        let _ = writeln!(out, "- **Kill points landed:** {points}");
    }
    if let Some(path) = r.path_phrase() {
        let _ = writeln!(out, "- **Path:** {}", line(&path));
    }
    if let Some(d) = r.deadline() {
        let _ = writeln!(out, "- **Deadline:** {d} per wait");
    }
    if let Some(m) = &r.mutant {
        let _ = writeln!(out, "- **Mutant:** `{m}`");
    }
    let findings: Vec<std::borrow::Cow<str>> = r.details.iter().map(|d| super::words::shown_detail(d)).collect();
    if findings.is_empty() {
        let _ = writeln!(out, "- **Acked vs recovered:** not compared (no recovery ran)");
    } else {
        let _ = writeln!(out, "- **Acked vs recovered:** {}", line(&findings.join("; ")));
    }
    let _ = writeln!(out, "- **Integrity check:** {}", r.integrity.as_deref().unwrap_or("not run"));
    match &r.kept.evidence {
        _ if r.kept.evidence_error.is_some() => {
            let why = r.kept.evidence_error.as_deref().unwrap_or_default();
            let _ = writeln!(out, "- **Evidence:** **not kept**: {}", line(why));
        }
        Some(e) => {
            let _ = writeln!(
                out,
                "- **Evidence:** `{e}` (database with its `-wal`/`-journal` as the trial left them, ack journal, \
                 child stderr, `result.json`)"
            );
        }
        None => {
            let _ = writeln!(out, "- **Evidence:** none kept");
        }
    }
    if let Some(t) = &r.kept.timeline {
        let _ = writeln!(out, "- **Timeline:** `{t}` (the calls, the acks and the crash on one page, for a browser)");
    }
    let _ = writeln!(out, "\nReproduce:\n\n```sh\n{}\n```\n", r.repro);
    if let Some(refire) = r.notes.refire {
        let _ = writeln!(out, "The repro, rerun in this run: {}.\n", refire.phrase());
    }
    if let Some(note) = &r.notes.repro_note {
        let _ = writeln!(out, "> **Note:** {}\n", line(note));
    }
    if let Some(s) = &r.notes.syscall_repro {
        let _ = writeln!(out, "The syscall result of this cell and leg:\n\n```sh\n{s}\n```\n");
    }
    out.push_str("</details>\n\n");
    out
}

fn kill_point(r: &CellResult) -> String {
    let Some(k) = r.deciding_kill() else {
        return match r.verdict {
            _ if !r.kill.kills() => format!("none: a race without a kill (kill mode `{}`)", r.kill.as_str()),
            _ if r.ended_before_kill.is_some() || r.verdict == Verdict::Error => {
                "not reached: the trial ended before its kill point".into()
            }
            _ => "none: this cell's trials end without a kill".into(),
        };
    };
    let earlier = r.kill_points.len() - 1;
    match earlier {
        0 => k.describe(),
        1 => format!("{} (1 earlier trial passed)", k.describe()),
        n => format!("{} ({n} earlier trials passed)", k.describe()),
    }
}

/// Text on one line, safe in Markdown prose: no line breaks, no HTML.
fn line(s: &str) -> String {
    s.replace(['\r', '\n'], " ").replace('<', "&lt;")
}

/// Text inside an HTML element, where Markdown is not read: escaped as HTML.
fn html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace(['\r', '\n'], " ")
}

/// Text safe in a table cell: one line, and a `|` cannot end the cell.
fn cell_text(s: &str) -> String {
    line(s).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kill::TrialIndex;
    use crate::plan::KillMode;

    use crate::kill::KillPoint;
    use crate::model::CiRun;
    use crate::model::tests::{fire, report_of};

    /// A fire as an audit run of a mutant has it: a long reason, the
    /// details of what was acked and recovered, a kill point, evidence and
    /// repros of their real length.
    fn audit_fire(i: usize) -> CellResult {
        let mut r = fire(KillMode::Timed, &format!("wal-sync-off-{i}"));
        r.cell = "prefix-durability".into();
        r.clause = "acknowledged appends survive a hard crash; the transcript is a contiguous prefix".into();
        r.reason = format!("trial {i}: the transcript is not a contiguous prefix: a hole at position 1 (found m2) <&>");
        r.details = vec![
            "acked m0..m295 (296 appends); recovered 291 appends".into(),
            "first missing acked index: m1".into(),
            "also: acked append m1 was lost (acked 296, recovered 291)".into(),
        ];
        r.kill_points = vec![KillPoint { trial: TrialIndex::nth(0), after_acks: 296, ..KillPoint::default() }];
        r.kept.evidence = Some(format!("target/crashcells/evidence/1796019514-2912/prefix-durability-leg-{i}-timed"));
        r.kept.evidence_error = None;
        r.repro = format!(
            "crashcells run --cell prefix-durability --matrix audit --leg wal-sync-off-{i} --kill timed --seed 7 \
             --trial 0 --mutant drop-append"
        );
        r.notes.syscall_repro =
            Some(r.repro.replace("--kill timed", "--kill syscall").replace("--trial 0", "--point 95"));
        r
    }

    fn in_ci(mut r: Report) -> Report {
        r.ci = Some(CiRun {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            repository: "team/store".into(),
            run_url: "https://github.example/team/store/actions/runs/42".into(),
        });
        r
    }

    /// A reason every row of a leg shares is said once above the table;
    /// a fire's section keeps its whole reason.
    #[test]
    fn a_reason_shared_by_a_legs_rows_is_said_once() {
        let why = "requested wal, child ran delete: WAL-reset gate (decided by wal-reset-gate)";
        let results: Vec<CellResult> = (0..3)
            .map(|_| {
                let mut r = fire(KillMode::Timed, "wal");
                (r.verdict, r.reason) = (Verdict::Skip, why.to_string());
                r
            })
            .collect();
        let text = table(&results.iter().collect::<Vec<_>>());
        assert_eq!(text.matches(why).count(), 1, "{text}");
        // Every row sharing it is a skip of cell 1: the note names the cell.
        assert!(text.contains(&format!("- Cell 1 skipped on leg `wal`: {why}\n")), "{text}");
        assert_eq!(text.matches("(leg wal's reason, above)").count(), 3, "{text}");
    }

    #[test]
    fn sixty_fires_fit_in_a_comment_with_the_commit_the_run_and_what_was_left_out() {
        let r = in_ci(report_of((0..60).map(audit_fire).collect()));
        let text = render_within(&r, &["part-1.json".into(), "part-2.json".into()], LIMIT);
        assert!(chars(&text) < 65_536, "{} characters", chars(&text));
        assert!(text.contains("[`0123456789abcdef0123456789abcdef01234567`](https://github.example/team/store/commit/0123456789abcdef0123456789abcdef01234567)"), "{text}");
        assert!(text.contains("| CI run | https://github.example/team/store/actions/runs/42 |"));
        let shown = text.matches("<details>").count();
        assert!(shown > 10 && shown < 60, "{shown} sections");
        assert_eq!(text.matches("</details>").count(), shown, "whole sections only");
        assert!(text.contains(&format!("### {} fires left out", 60 - shown)), "{text}");
        assert!(text.contains("The whole report is in `part-1.json`, `part-2.json`"));
        assert!(text.contains("under `target/crashcells/evidence/1796019514-2912`"));
        assert_eq!(text.matches("| **fire** |").count(), 60, "every result keeps its row");
        // The summary is HTML, escaped; the body is Markdown.
        assert!(text.contains("<summary><b>fire</b> · <code>prefix-durability</code> · leg <code>wal-sync-off-0</code> · timed kill · trial 0: the transcript is not a contiguous prefix: a hole at position 1 (found m2) &lt;&amp;&gt;</summary>\n\n> **Clause 1:**"), "{text}");
    }

    #[test]
    fn a_short_report_leaves_nothing_out_and_a_huge_one_still_fits() {
        let text = render(&report_of((0..3).map(audit_fire).collect()));
        assert_eq!(text.matches("<details>").count(), 3);
        assert!(!text.contains("left out") && !text.contains("CI run"), "{text}");
        let huge = report_of((0..2000).map(audit_fire).collect());
        let text = render(&huge);
        assert!(chars(&text) <= LIMIT, "{}", chars(&text));
        assert!(text.contains("Cut here"), "{}", &text[text.len() - 500..]);
        let mut many_passes: Vec<CellResult> = (0..700).map(audit_fire).collect();
        many_passes.iter_mut().skip(1).for_each(|r| r.verdict = Verdict::Pass);
        let text = render(&report_of(many_passes));
        assert!(chars(&text) <= LIMIT && text.contains("699 other results (passed"), "{}", chars(&text));
        assert_eq!(text.matches("<details>").count(), 1, "the one fire stays whole");
    }

    #[test]
    fn table_cells_cannot_break_the_table() {
        assert_eq!(cell_text("a | b\nc <d>"), "a \\| b c &lt;d>");
    }
}
