//! The human rendering: a line per result (and, for a syscall result, the
//! kill points that landed), a summary with errors first when there are
//! any, colour only when asked for (a terminal without `NO_COLOR`).

use std::fmt::Write;

use super::{Report, Verdict};

fn paint(text: &str, verdict: Verdict, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let code = match verdict {
        Verdict::Pass => "32",
        Verdict::Fire => "1;31",
        Verdict::Error => "35",
        Verdict::Skip | Verdict::Stub => "33",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

pub fn render(report: &Report, color: bool) -> String {
    let mut out = String::new();
    for r in &report.results {
        let verdict = paint(&format!("{:<5}", r.verdict.as_str()), r.verdict, color);
        // The mode and level the trials ran at: `wal/full`, `delete/off`.
        let mode =
            format!("{}/{}", r.effective_mode.as_deref().unwrap_or("-"), r.synchronous.as_deref().unwrap_or("-"));
        let _ = write!(
            out,
            "{verdict} {:<20} {:<18} {:<15} {:<7} acked {:>5}  {:>6.2}s",
            r.cell,
            r.leg,
            mode,
            r.kill.as_str(),
            r.acked,
            r.duration_ms as f64 / 1000.0
        );
        if !r.reason.is_empty() {
            let _ = write!(out, "  {}", r.reason);
        }
        out.push('\n');
        if let Some(points) = r.points_line() {
            let _ = writeln!(out, "      kill points landed: {points}");
        }
        if matches!(r.verdict, Verdict::Fire | Verdict::Error) {
            if let Some(k) = r.deciding_kill() {
                let _ = writeln!(out, "      kill point: {}", k.describe());
            }
            if let Some(e) = &r.evidence {
                let _ = writeln!(out, "      evidence: {e}");
            }
            let _ = writeln!(out, "      repro: {}", r.repro);
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{} in {:.2}s (seed {}, matrix {}, SQLite {})",
        s.counts([Verdict::Pass, Verdict::Fire, Verdict::Skip, Verdict::Stub, Verdict::Error]),
        report.duration_ms as f64 / 1000.0,
        report.seed,
        report.matrix,
        report.sqlite_version
    );
    if report.interrupted {
        out.push_str("interrupted: this is a partial report; results not listed did not run\n");
    }
    out
}
