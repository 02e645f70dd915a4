//! The Markdown rendering, for posting a run on a tracking issue: a heading
//! with the verdict counts (errors first when there are any) and the
//! environment, a table of every result (with the kill points that landed),
//! then a section per fire and per error with its clause, leg, kill point,
//! what was acked against what was recovered, the integrity check, the
//! evidence folder and the command that reruns it. GitHub-flavoured: table
//! cells are escaped so that a reason cannot break the table.

use std::fmt::Write;

use crate::plan::KillMode;

use super::{CellResult, Report, Verdict};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    heading(&mut out, report);
    table(&mut out, report);
    for r in report.results.iter().filter(|r| r.verdict.is_decisive()) {
        section(&mut out, r);
    }
    out
}

fn heading(out: &mut String, report: &Report) {
    let _ = writeln!(out, "## crashcells: {}\n", report.summary.counts());
    if report.interrupted {
        let _ = writeln!(out, "**The run was interrupted**: results that had not finished are missing.\n");
    }
    let modes = report.journal_modes();
    let mut rows = vec![
        ("crashcells", report.crashcells_version.clone()),
        ("SQLite", report.sqlite_version.clone()),
        ("OS", if report.os.is_empty() { "not recorded".into() } else { report.os.clone() }),
        ("journal modes", if modes.is_empty() { "none ran".into() } else { modes.join(", ") }),
        ("matrix", format!("`{}`", report.matrix)),
        ("seed", format!("`{}`", report.seed)),
        ("store", report.child.clone()),
    ];
    if let Some(p) = report.partition {
        rows.push(("partition", format!("`{p}`")));
    }
    let mutants = report.mutants();
    if !mutants.is_empty() {
        let names: Vec<String> = mutants.iter().map(|m| format!("`{m}`")).collect();
        rows.push(("mutant", names.join(", ")));
    }
    rows.push(("run", format!("`{}` in {}", report.run_id, seconds(report.duration_ms))));
    let _ = writeln!(out, "| environment | |\n|---|---|");
    for (k, v) in rows {
        let _ = writeln!(out, "| {k} | {} |", cell_text(&v));
    }
    out.push('\n');
}

fn table(out: &mut String, report: &Report) {
    let _ = writeln!(out, "### Results\n");
    let _ = writeln!(out, "| verdict | cell | leg | mode | kill | ran | acked | time | reason |");
    let _ = writeln!(out, "|---|---|---|---|---|--:|--:|--:|---|");
    for r in &report.results {
        let verdict = match r.verdict {
            Verdict::Fire | Verdict::Error => format!("**{}**", r.verdict.as_str()),
            _ => r.verdict.as_str().to_string(),
        };
        // A stub ran no trial: its counts would only be noise.
        let ran = |v: String| if r.trials == 0 { "-".to_string() } else { v };
        // `ran` says landed of planned kill points for a sweep.
        let _ = writeln!(
            out,
            "| {verdict} | {} `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.number,
            r.cell,
            cell_text(&r.leg),
            r.effective_mode.as_deref().unwrap_or("-"),
            r.kill.as_str(),
            super::human::ran(r),
            ran(r.acked.to_string()),
            ran(seconds(r.duration_ms)),
            cell_text(&r.reason)
        );
    }
    out.push('\n');
}

/// The section of one fire or error.
fn section(out: &mut String, r: &CellResult) {
    let _ = writeln!(out, "### {}: `{}` on leg `{}` ({})\n", r.verdict.as_str(), r.cell, r.leg, r.kill.phrase());
    let _ = writeln!(out, "> **Clause {}:** {}\n", r.number, line(&r.clause));
    let _ = writeln!(out, "- **Reason:** {}", line(&r.reason));
    let _ = writeln!(out, "- **Leg:** `{}`: {}", r.leg, r.mode_line());
    let _ = writeln!(out, "- **Kill point:** {}", kill_point(r));
    if let Some(points) = r.points_line() {
        let _ = writeln!(out, "- **Kill points landed:** {points}");
    }
    if let Some(m) = &r.mutant {
        let _ = writeln!(out, "- **Mutant:** `{m}`");
    }
    let findings: Vec<&str> = r.details.iter().map(String::as_str).collect();
    if findings.is_empty() {
        let _ = writeln!(out, "- **Acked vs recovered:** not compared (no recovery ran)");
    } else {
        let _ = writeln!(out, "- **Acked vs recovered:** {}", line(&findings.join("; ")));
    }
    let _ = writeln!(out, "- **Integrity check:** {}", r.integrity.as_deref().unwrap_or("not run"));
    match &r.evidence {
        _ if r.evidence_error.is_some() => {
            let why = r.evidence_error.as_deref().unwrap_or_default();
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
    let _ = writeln!(out, "\nReproduce:\n\n```sh\n{}\n```\n", r.repro);
    if let Some(note) = &r.repro_note {
        let _ = writeln!(out, "> **Note:** {}\n", line(note));
    }
    if let Some(s) = &r.syscall_repro {
        let _ = writeln!(out, "The syscall result of this cell and leg:\n\n```sh\n{s}\n```\n");
    }
}

fn kill_point(r: &CellResult) -> String {
    let Some(k) = r.deciding_kill() else {
        return match r.verdict {
            _ if r.kill == KillMode::None => "none: a race without a kill (kill mode `none`)".into(),
            Verdict::Error => "not reached: the trial ended before its kill point".into(),
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

/// Seconds without a space, so that a narrow table column does not wrap.
fn seconds(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

/// Text on one line, safe in Markdown prose: no line breaks, no HTML.
fn line(s: &str) -> String {
    s.replace(['\r', '\n'], " ").replace('<', "&lt;")
}

/// Text safe in a table cell: one line, and a `|` cannot end the cell.
fn cell_text(s: &str) -> String {
    line(s).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_cells_cannot_break_the_table() {
        assert_eq!(cell_text("a | b\nc <d>"), "a \\| b c &lt;d>");
    }
}
