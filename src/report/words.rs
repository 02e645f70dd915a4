//! The words every rendering of a report shares (human, Markdown, and the
//! renderers of other commands: the audit's table, child-check's summary):
//! counts said in the singular or plural, what a result ran, its mode and
//! level, a duration, a table's column widths and padding. One place, so that
//! no renderer borrows another's helpers and two renderings of one result
//! say it alike.

use crate::model::{CellResult, Report, Verdict};

/// What a result ran: its trials or races, or its kill points as landed of
/// planned (a sweep says how many of the points it planned it killed at);
/// a stub ran nothing.
pub fn ran(r: &CellResult) -> String {
    if ran_nothing(r) {
        return "-".into();
    }
    match (r.verdict, r.kill, r.sweep.points_planned, r.sweep.points_landed) {
        (_, kill, Some(planned), Some(landed)) if kill.sweeps_points() => {
            format!("{landed}/{}", plural(planned as usize, "point"))
        }
        (_, kill, ..) => plural(r.trials as usize, kill.mode().trial),
    }
}

/// Whether a result ran no trial at all: a stub, or a skip decided before
/// any child of it ran (a race under `--kill power`, an operation the child
/// does not implement): no mode was seen and nothing was acked, and a count
/// of its one placeholder trial would say what did not happen.
pub fn ran_nothing(r: &CellResult) -> bool {
    let untouched = r.effective_mode.is_none() && r.kill_points.is_empty() && r.acked == 0;
    r.verdict == Verdict::Stub || (r.verdict == Verdict::Skip && untouched && r.sweep.points_planned.is_none())
}

/// The mode and level a result's trials ran at (`wal/full`, `delete/-`
/// where the level was not reported), or `-` when no trial reported a mode.
pub fn mode(r: &CellResult) -> String {
    match &r.effective_mode {
        Some(m) => format!("{m}/{}", r.synchronous.as_deref().unwrap_or("-")),
        None => "-".into(),
    }
}

/// A detail as a person reads it: a per-point list (`states per kill
/// point (built/distinct): #1 3/3, … #615 595/595`, thousands of
/// characters) becomes its count and a pointer to the JSON report, which
/// keeps the whole list; any other detail is shown as it is.
pub fn shown_detail(d: &str) -> std::borrow::Cow<'_, str> {
    const LONGEST: usize = 300;
    match d.split_once(": ") {
        Some((label, list)) if d.chars().count() > LONGEST && list.matches(", ").count() >= 10 => {
            let n = list.split(", ").count();
            format!("{label}: {n} entries (the whole list is in the JSON report's details)").into()
        }
        _ => d.into(),
    }
}

/// The reasons said once per leg: a reason that two or more shown rows of
/// one leg share word for word (every default-leg row repeating "…so WAL is
/// refused and DELETE applied (decided by wal-reset-gate)") is the leg's,
/// said once in a note, and those rows point to it. The most frequent shared
/// reason of a leg wins, the first seen on a tie; JSON and JUnit keep every
/// row's reason (machines read them). A note whose rows are all skips names
/// the cells it skips ([`skip_line`]): "leg default: the child does not
/// implement `park`" read as if the whole leg were about `park` (#53).
#[derive(Debug, Default)]
pub struct LegReasons(std::collections::BTreeMap<String, LegNote>);

/// A leg's shared reason, and the cells it skips when every row that
/// shares it is a skip.
#[derive(Debug)]
struct LegNote {
    why: String,
    skipped: Option<Vec<u32>>,
}

impl LegReasons {
    pub fn of(rows: &[&CellResult]) -> Self {
        let mut counts: Vec<(&str, &str, usize)> = Vec::new();
        for r in rows.iter().filter(|r| !r.reason.is_empty()) {
            match counts.iter_mut().find(|(l, why, _)| *l == r.leg && *why == r.reason) {
                Some(c) => c.2 += 1,
                None => counts.push((&r.leg, &r.reason, 1)),
            }
        }
        let mut legs = std::collections::BTreeMap::<String, (String, usize)>::new();
        for (leg, why, n) in counts.into_iter().filter(|c| c.2 >= 2) {
            let best = legs.entry(leg.to_string()).or_insert_with(|| (why.to_string(), n));
            if n > best.1 {
                *best = (why.to_string(), n);
            }
        }
        let notes = legs.into_iter().map(|(leg, (why, _))| {
            let sharing: Vec<&&CellResult> = rows.iter().filter(|r| r.leg == leg && r.reason == why).collect();
            let skipped = sharing.iter().all(|r| r.verdict == Verdict::Skip).then(|| {
                let mut cells: Vec<u32> = sharing.iter().map(|r| r.number).collect();
                cells.sort_unstable();
                cells.dedup();
                cells
            });
            (leg, LegNote { why, skipped })
        });
        Self(notes.collect())
    }

    /// The note's line for the leg of `r`, if `r` is the first row of its
    /// leg to say it (the note goes before that row); `leg` writes the
    /// leg's name as the format shows a name.
    pub fn note_before(&self, r: &CellResult, seen: &mut Vec<String>, leg: fn(&str) -> String) -> Option<String> {
        let note = self.0.get(&r.leg)?;
        (!seen.contains(&r.leg)).then(|| {
            seen.push(r.leg.clone());
            note.line(&leg(&r.leg))
        })
    }

    /// The reason a row shows: a pointer to its leg's note when it is the
    /// leg's reason, its own otherwise.
    pub fn row_reason<'a>(&self, r: &'a CellResult) -> std::borrow::Cow<'a, str> {
        match self.0.get(&r.leg) {
            Some(note) if note.why == r.reason => format!("(leg {}'s reason, above)", r.leg).into(),
            _ => r.reason.as_str().into(),
        }
    }

    /// Each leg's note, as a line, the leg's name as `leg` writes it.
    pub fn lines(&self, leg: fn(&str) -> String) -> impl Iterator<Item = String> + '_ {
        self.0.iter().map(move |(name, note)| note.line(&leg(name)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl LegNote {
    /// `cell 2 skipped on leg default: why`, or `leg default: why` where
    /// the rows that share the reason are not all skips.
    fn line(&self, leg: &str) -> String {
        match &self.skipped {
            Some(cells) => skip_line(cells, leg, &self.why),
            None => format!("leg {leg}: {}", self.why),
        }
    }
}

/// A skip said with what it skips: `cell 2 skipped on leg default: the
/// child does not implement `park``; several cells are listed
/// (`cells 1, 3 skipped on leg wal: …`).
pub fn skip_line(cells: &[u32], leg: &str, why: &str) -> String {
    let listed: Vec<String> = cells.iter().map(u32::to_string).collect();
    let noun = if cells.len() == 1 { "cell" } else { "cells" };
    format!("{noun} {} skipped on leg {leg}: {why}", listed.join(", "))
}

/// The legs whose shown rows were judged with another leg (a leg is
/// judged with one leg or none: [`crate::applied`]), each once in the
/// order they come, with the label its rows carry.
pub fn judged_legs(rows: &[&CellResult]) -> Vec<(String, String)> {
    let mut legs: Vec<(String, String)> = Vec::new();
    for r in rows {
        if let Some(w) = &r.judged_with
            && !legs.iter().any(|(l, _)| *l == r.leg)
        {
            legs.push((r.leg.clone(), w.label()));
        }
    }
    legs
}

/// `1 result`, `2 results`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// A duration as the tables show it, without a space, so that a narrow
/// column does not wrap: `1.50s`.
pub fn duration(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

/// Each column of a table as wide as its longest cell, in characters (a
/// header is a row like the others): the human report's table and the
/// audit's align the same way.
pub fn widths<'a>(rows: impl IntoIterator<Item = &'a [String]>) -> Vec<usize> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let n = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(n),
                None => widths.push(n),
            }
        }
    }
    widths
}

/// A table's cell padded to `width` characters, aligned right for a number.
pub fn padded(cell: &str, width: usize, right: bool) -> String {
    if right { format!("{cell:>width$}") } else { format!("{cell:<width$}") }
}

/// The legs of `report` whose recorded commits were not durable against a
/// power loss, once each in plan order, each as the line every format says.
pub fn not_durable(report: &Report) -> Vec<String> {
    let mut legs: Vec<&str> = Vec::new();
    let mut lines = Vec::new();
    for r in report.results.iter().filter(|r| r.not_durable.is_some()) {
        if !legs.contains(&r.leg.as_str()) {
            legs.push(&r.leg);
            lines.push(not_durable_line(r));
        }
    }
    lines
}

/// A leg's power-loss line, from one of its results: what its calls showed
/// (`leg delete (delete/full): acknowledged commits are not durable on
/// power loss: unlink of the journal at #92 ...`).
pub fn not_durable_line(r: &CellResult) -> String {
    let why = r.not_durable.as_deref().unwrap_or_default();
    format!("leg {} ({}): acknowledged commits are not durable on power loss: {why}", r.leg, mode(r))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_per_point_list_is_shown_as_its_count() {
        let list: Vec<String> = (1..=615).map(|i| format!("#{i} {i}/{i}")).collect();
        let d = format!("states per kill point (built/distinct): {}", list.join(", "));
        assert_eq!(
            super::shown_detail(&d),
            "states per kill point (built/distinct): 615 entries (the whole list is in the JSON report's details)"
        );
        let short = "recovered 3 of 4 acked messages: m0, m1, m2";
        assert_eq!(super::shown_detail(short), short);
    }

    use super::*;

    #[test]
    fn a_column_is_as_wide_as_its_longest_cell_in_characters() {
        let rows = [vec!["verdict".to_string(), "ran".into()], vec!["pass".into(), "71/71 points".into()]];
        assert_eq!(widths(rows.iter().map(Vec::as_slice)), [7, 12]);
        assert_eq!(widths([&["é".to_string()][..]]), [1], "characters, not bytes");
        assert_eq!((padded("4", 3, true), padded("ab", 3, false)), ("  4".to_string(), "ab ".to_string()));
    }

    #[test]
    fn counts_are_singular_or_plural() {
        assert_eq!(plural(1, "result"), "1 result");
        assert_eq!(plural(0, "result"), "0 results");
        assert_eq!(plural(12, "point"), "12 points");
    }

    #[test]
    fn a_duration_has_two_decimals_and_no_space() {
        assert_eq!((duration(1500), duration(0)), ("1.50s".to_string(), "0.00s".to_string()));
    }
}
