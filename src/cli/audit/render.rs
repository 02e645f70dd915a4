//! The audit's report as text: JSON as it is, and the human table (a row
//! per leg, the words of the rows that need them under each, the crash
//! columns' legend, and a summary with the SQLite in use).

use std::fmt::Write;

use super::crash::{Column, Columns};
use super::{AuditReport, Row};
use crate::dbfiles::Family;
use crate::killmode::AuditColumn;

impl AuditReport {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("an audit always serializes");
        s.push('\n');
        s
    }

    /// One row per leg, the resolver's and the audit's words under the rows
    /// that need them, then a summary with the SQLite in use.
    pub fn to_human(&self) -> String {
        let mut out = String::new();
        let crash = self.rows.iter().find(|r| !r.crash.is_empty()).map(|r| &r.crash);
        let _ = write!(
            out,
            "{:<18} {:<15} {:<22} {:<15} {:<36} honored",
            "leg", "requested", "resolver", "ran", "file shows"
        );
        let _ = writeln!(out, "{}", crash.map_or_else(String::new, |c| format!("  {}", words(c, |c| c.heading))));
        for r in &self.rows {
            human_row(&mut out, r);
        }
        if let Some(c) = crash {
            out.push_str(&legend(c, &super::crash::cell_numbers()));
            out.push('\n');
        }
        let s = &self.summary;
        let _ = writeln!(
            out,
            "{} of {} legs honored (matrix {}, in {} on {}, SQLite {})",
            s.honored,
            s.legs,
            self.matrix,
            self.workdir,
            self.filesystem,
            self.sqlite_versions()
        );
        out
    }

    /// The SQLite versions and source ids the legs' children reported.
    fn sqlite_versions(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        for r in &self.rows {
            let v = format!("{} ({})", r.sqlite_version, r.sqlite_source_id.as_deref().unwrap_or("no source id"));
            if !seen.contains(&v) {
                seen.push(v);
            }
        }
        seen.join(", ")
    }
}

/// The line under a table with crash columns: what they mean, in one line,
/// and where each row is explained; `cells` are the numbers of the cells
/// the columns swept.
pub fn legend(columns: &Columns, cells: &[u32]) -> String {
    let headings: Vec<&str> = columns.0.iter().map(|(c, _)| c.heading).collect();
    let asks: Vec<&str> = columns.0.iter().map(|(c, _)| c.asks).collect();
    let asks = match asks.as_slice() {
        [rest @ .., last] if rest.len() > 1 => format!("{}, and {last}", rest.join(", ")),
        _ => asks.join(" and "),
    };
    format!(
        "{}: whether {} every acknowledged commit at every kill point of their sweeps under {asks} (keeps, LOSES); \
         docs/DESIGN.md, \"The audit's crash columns, row by row\", explains each leg",
        headings.join(", "),
        cells_keep(cells)
    )
}

/// One word per crash column, each padded to its column's width (the
/// last unpadded): the headings, or a row's words.
fn words(columns: &Columns, word: impl Fn(&AuditColumn) -> &str) -> String {
    let n = columns.0.len();
    let padded = columns.0.iter().enumerate().map(|(i, (c, _))| match i + 1 == n {
        true => word(c).to_string(),
        false => format!("{:<width$}", word(c), width = c.heading.len().max(5) + 1),
    });
    padded.collect::<Vec<_>>().join(" ")
}

/// `cell 1 keeps`, `cells 1 and 3 keep`, `cells 1, 3 and 6 keep`.
fn cells_keep(cells: &[u32]) -> String {
    let n: Vec<String> = cells.iter().map(u32::to_string).collect();
    match n.as_slice() {
        [one] => format!("cell {one} keeps"),
        [rest @ .., last] => format!("cells {} and {last} keep", rest.join(", ")),
        [] => "the workload cells keep".into(),
    }
}

fn human_row(out: &mut String, r: &Row) {
    let requested =
        format!("{}/{}", r.requested_mode.as_deref().unwrap_or("-"), r.requested_synchronous.as_deref().unwrap_or("-"));
    let resolver = r.resolver.as_ref().map_or("-".into(), |d| format!("{}: {}", d.decided_by, d.applied));
    let ran = format!("{}/{}", r.ran_mode, r.ran_synchronous.as_deref().unwrap_or("-"));
    let honored = if r.honored { "yes" } else { "NO" };
    // The crash columns follow `honored` when the audit swept them.
    let honored = match r.crash.is_empty() {
        false => format!("{honored:<7}  {}", words(&r.crash, |c| r.crash.get(c.key).map_or("", Column::word))),
        true => honored.to_string(),
    };
    let _ = writeln!(out, "{:<18} {requested:<15} {resolver:<22} {ran:<15} {:<36} {honored}", r.leg, file_shows(r));
    for (what, c) in r.crash.0.iter().map(|(c, col)| (c.long, col)) {
        if c.keeps != Some(true) && !c.reason.is_empty() {
            let _ = writeln!(out, "    {what}: {}", c.reason);
            if let Some(repro) = &c.repro {
                let _ = writeln!(out, "    {what} repro: {repro}");
            }
        }
    }
    // A refusal's reason already carries the resolver's words.
    if let Some(d) = r.resolver.as_ref().filter(|d| r.honored && d.decided_by != "config") {
        let _ = writeln!(out, "    resolver: {}", d.reason);
    }
    if !r.honored {
        let _ = writeln!(out, "    not honored: {}", r.reason);
    }
}

/// The header family and the journal files, as one short cell.
fn file_shows(r: &Row) -> String {
    let family = match r.header {
        Family::Wal => "wal header",
        Family::Rollback => "rollback header",
        Family::Unknown => "no header",
    };
    let a = &r.artefacts;
    let mut files = Vec::new();
    if let Some(n) = a.wal {
        files.push(format!("-wal {n}B"));
    }
    match a.journal {
        Some(n) if a.journal_zeroed => files.push(format!("-journal {n}B zeroed")),
        Some(n) => files.push(format!("-journal {n}B")),
        None => {}
    }
    if files.is_empty() {
        files.push("no journal".into());
    }
    format!("{family}, {}", files.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The legend names the cells the columns swept, however many: a cell
    /// added to the registry that answers durability is named with the rest.
    #[test]
    fn the_legend_names_the_swept_cells() {
        let legend = legend(&Columns::not_honored(), &[1, 3]);
        assert_eq!(
            legend,
            "process, power, torn, fault: whether cells 1 and 3 keep every acknowledged commit at every kill point \
             of their sweeps under a process crash (SIGKILL), a power loss, a power loss with torn and reordered \
             writes, and a failed write or sync (keeps, LOSES); docs/DESIGN.md, \"The audit's crash columns, row by \
             row\", explains each leg"
        );
        assert_eq!(cells_keep(&[1]), "cell 1 keeps");
        assert_eq!(cells_keep(&[1, 3, 6]), "cells 1, 3 and 6 keep");
    }
}
