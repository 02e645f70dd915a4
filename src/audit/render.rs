//! The audit's report as text: JSON as it is, and the human table (a row
//! per leg, the words of the rows that need them under each, the crash
//! columns' legend, and a summary with the SQLite in use). Its table aligns
//! as the run's does, with the report's words (`report::words`).

use std::fmt::Write;

use crashcells_protocol::{Decider, JournalMode, Synchronous};

use super::crash::{Column, Columns};
use super::{AuditReport, Row};
use crate::crashstate::level::distinguishable;
use crate::dbfiles::Family;
use crate::report::words::{padded, widths};

impl AuditReport {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("an audit always serializes");
        s.push('\n');
        s
    }

    /// One row per leg, the resolver's and the audit's words under the rows
    /// that need them, then a summary with the SQLite in use. Each column
    /// as wide as its longest word: the audit matrix's table is 112
    /// columns with its crash columns, within a terminal of 120.
    pub fn to_human(&self) -> String {
        let mut out = String::new();
        let crash = self.rows.iter().find(|r| !r.crash.is_empty()).map(|r| &r.crash);
        let mut header = HEADER.map(String::from).to_vec();
        // A matrix that puts libraries under the child shows each row's
        // SQLite, so that a leg and its `bundled-` twin read side by side.
        let libraries = self.rows.iter().any(|r| r.sqlite_library.is_some());
        if libraries {
            header.insert(1, "sqlite".into());
        }
        header.extend(crash.iter().flat_map(|c| c.0.iter().map(|(c, _)| c.heading.to_string())));
        let cells: Vec<Vec<String>> = self.rows.iter().map(|r| cells(r, crash, libraries)).collect();
        let widths = widths(std::iter::once(&header[..]).chain(cells.iter().map(Vec::as_slice)));
        line(&mut out, &header, &widths);
        for (r, row) in self.rows.iter().zip(&cells) {
            line(&mut out, row, &widths);
            notes(&mut out, r);
        }
        if let Some(c) = crash {
            out.push_str(&wrapped(&legend(c, &super::crash::cell_numbers()), WIDTH));
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

/// The width of a terminal the table is made for.
pub const WIDTH: usize = 120;

/// The table's columns; the crash columns follow when the audit swept them.
const HEADER: [&str; 6] = ["leg", "requested", "resolver", "ran", "file shows", "honored"];

/// The text under a table with crash columns (wrapped to [`WIDTH`]): what
/// they mean, and where each row is explained; `cells` are the numbers of
/// the cells the columns swept.
pub fn legend(columns: &Columns, cells: &[u32]) -> String {
    let headings: Vec<&str> = columns.0.iter().map(|(c, _)| c.heading).collect();
    let asks: Vec<&str> = columns.0.iter().map(|(c, _)| c.asks).collect();
    let asks = match asks.as_slice() {
        [rest @ .., last] if rest.len() > 1 => format!("{}, and {last}", rest.join(", ")),
        _ => asks.join(" and "),
    };
    format!(
        "{}: whether {} every acknowledged commit at every kill point of their sweeps under {asks} (keeps, LOSES); \
         `ran X kept Y`: the child reported level X, its recorded commits' calls kept Y; docs/DESIGN.md, \
         \"The audit's crash columns, row by row\", explains each leg",
        headings.join(", "),
        cells_keep(cells)
    )
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

/// `text` in lines of at most `width` columns, broken at spaces.
fn wrapped(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out + &line + "\n"
}

/// One line of the table: each cell padded to its column's width.
fn line(out: &mut String, cells: &[String], widths: &[usize]) {
    let padded: Vec<String> = cells.iter().zip(widths).map(|(c, &w)| padded(c, w, false)).collect();
    let _ = writeln!(out, "{}", padded.join(" ").trim_end());
}

/// A row's cells: the resolver's decision is the mode it applied (who
/// decided, and why, is the note under the row when it was not the leg's
/// config); then its word in each of the table's `crash` columns.
fn cells(r: &Row, crash: Option<&Columns>, libraries: bool) -> Vec<String> {
    let requested = format!(
        "{}/{}",
        r.requested_mode.map_or("-", JournalMode::as_str),
        r.requested_synchronous.as_deref().unwrap_or("-")
    );
    let resolver = r.resolver.as_ref().map_or("-".into(), |d| d.applied.to_string());
    let mut ran = format!("{}/{}", r.ran_mode, r.ran_synchronous.as_deref().unwrap_or("-"));
    if let Some(kept) = kept_otherwise(r) {
        ran.push_str(&format!(" kept {kept}"));
    }
    let honored = if r.honored { "yes" } else { "NO" };
    let mut cells = vec![r.leg.clone(), requested, resolver, ran, file_shows(r), honored.to_string()];
    if libraries {
        cells.insert(1, sqlite_cell(r));
    }
    let words = crash.iter().flat_map(|c| c.0.iter().map(|(c, _)| r.crash.get(c.key).map_or("", Column::word)));
    cells.extend(words.map(String::from));
    cells
}

/// The SQLite a row's child ran, and the library the leg asked for:
/// `3.54.1 (bundled)`, `3.40.1 (own)`.
fn sqlite_cell(r: &Row) -> String {
    format!("{} ({})", r.sqlite_version, r.sqlite_library.as_deref().unwrap_or("own"))
}

/// The level a leg's recorded commits kept, where their calls tell it from
/// the one the child reported (`crashstate::level::distinguishable`): the
/// `ran` column shows it beside the claim (`wal/full kept normal`), so
/// that the table stays within [`WIDTH`] where the two agree.
fn kept_otherwise(r: &Row) -> Option<&str> {
    let kept = r.kept_synchronous.as_deref()?;
    let mode = r.effective_mode.mode()?;
    let level = |s: &str| s.parse::<Synchronous>().ok().map(|l| distinguishable(l, mode));
    (level(kept) != r.ran_synchronous.as_deref().and_then(level)).then_some(kept)
}

/// The words a row needs under it: each crash column that lost a commit
/// (the rule and its repro), the resolver's reason, why not honored.
fn notes(out: &mut String, r: &Row) {
    for (what, c) in r.crash.0.iter().map(|(c, col)| (c.long, col)) {
        if c.keeps != Some(true) && !c.reason.is_empty() {
            let _ = writeln!(out, "    {what}: {}", c.reason);
            if let Some(repro) = &c.repro {
                let _ = writeln!(out, "    {what} repro: {repro}");
            }
        }
    }
    // A refusal's reason already carries the resolver's words.
    if let Some(d) = r.resolver.as_ref().filter(|d| r.honored && d.decided_by != Decider::Config) {
        let _ = writeln!(out, "    resolver: {}", d.reason);
    }
    if !r.honored {
        let _ = writeln!(out, "    not honored: {}", r.reason);
    }
    if let Some(w) = &r.judged_with {
        let _ = writeln!(out, "    crash columns {}", w.label().replace('`', ""));
    }
    if let Some(bug) = r.wal_reset_bug.as_deref().filter(|_| r.honored) {
        let _ = writeln!(out, "    WAL-reset bug: {bug}");
    }
}

/// The header family and the journal files, as one short cell: `wal,
/// -wal 406K`, `rollback, -journal 512B zeroed`, `rollback, no journal`.
fn file_shows(r: &Row) -> String {
    let family = match r.header {
        Family::Wal => "wal",
        Family::Rollback => "rollback",
        Family::Unknown => "no header",
    };
    let a = &r.artefacts;
    let mut files = Vec::new();
    if let Some(n) = a.wal {
        files.push(format!("-wal {}", size(n)));
    }
    match a.journal {
        Some(n) if a.journal_zeroed => files.push(format!("-journal {} zeroed", size(n))),
        Some(n) => files.push(format!("-journal {}", size(n))),
        None => {}
    }
    if files.is_empty() {
        files.push("no journal".into());
    }
    format!("{family}, {}", files.join(", "))
}

/// A file's size, short: bytes below 10 KiB, else whole KiB (`406K`); the
/// JSON has the bytes.
fn size(n: u64) -> String {
    if n < 10 * 1024 { format!("{n}B") } else { format!("{}K", n / 1024) }
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
             writes, and a failed write or sync (keeps, LOSES); `ran X kept Y`: the child reported level X, its \
             recorded commits' calls kept Y; docs/DESIGN.md, \"The audit's crash columns, row by row\", explains \
             each leg"
        );
        assert_eq!(cells_keep(&[1]), "cell 1 keeps");
        assert_eq!(cells_keep(&[1, 3, 6]), "cells 1, 3 and 6 keep");
    }

    #[test]
    fn the_legend_is_lines_of_the_tables_width() {
        let legend = legend(&Columns::not_honored(), &[1, 3]);
        let text = wrapped(&legend, WIDTH);
        assert!(text.lines().count() > 1 && text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert_eq!(text.split_whitespace().collect::<Vec<_>>(), legend.split_whitespace().collect::<Vec<_>>());
        assert_eq!((size(512), size(21_032), size(416_152)), ("512B".into(), "20K".into(), "406K".into()));
    }
}
