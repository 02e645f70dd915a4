//! The human rendering: a line per result and a summary, colour only when
//! asked for (a terminal without `NO_COLOR`).

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
        let mode = r.effective_mode.as_deref().unwrap_or("-");
        let _ = write!(
            out,
            "{verdict} {:<20} {:<18} {:<9} {:<7} acked {:>5}  {:>6.2}s",
            r.cell,
            r.leg,
            mode,
            r.kill.as_str(),
            r.acked,
            r.duration_ms as f64 / 1000.0
        );
        if r.verdict != Verdict::Pass {
            let _ = write!(out, "  {}", r.reason);
        }
        out.push('\n');
        if matches!(r.verdict, Verdict::Fire | Verdict::Error) {
            if let Some(e) = &r.evidence {
                let _ = writeln!(out, "      evidence: {e}");
            }
            if let Some(kp) = r.kill_points.last().filter(|kp| kp.ordinal.is_some()) {
                let _ = writeln!(out, "      kill point: {}", super::describe_point(kp));
            }
            let _ = writeln!(out, "      repro: {}", r.repro);
        }
    }
    let s = &report.summary;
    let _ = writeln!(
        out,
        "{} pass, {} fire, {} skip, {} stub, {} error in {:.2}s (seed {}, matrix {}, SQLite {})",
        s.pass,
        s.fire,
        s.skip,
        s.stub,
        s.error,
        report.duration_ms as f64 / 1000.0,
        report.seed,
        report.matrix,
        report.sqlite_version
    );
    out
}
