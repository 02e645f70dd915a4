//! The ack journal as a timeline shows it: each line for a reader, the
//! operation each ack ends by the workload's rule (PROTOCOL.md §2: an
//! `append` i writes `m<i>`, a `rotate` k ends its parent and creates its
//! continuation), which lines a long journal lists (its middle is left out,
//! never the acks around the kill, which is what the finding is about), and
//! the contents the acks promise, to set against what was recovered.

use std::ops::Range;

use serde_json::{Map, Value};

/// A long journal lists its first lines, the lines around its last ack
/// (where a kill without a trace landed) and its last lines.
const HEAD: usize = 40;
const BEFORE_KILL: usize = 60;
const AFTER_KILL: usize = 10;
const TAIL: usize = 10;

/// One journal line's fields, if it is a JSON object.
fn fields(line: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(line) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

fn field(m: &Map<String, Value>, k: &str) -> String {
    m.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).unwrap_or_default()
}

/// One ack-journal line for a reader: `ready (...)`, or the ack's
/// operation and fields.
pub fn text(line: &str) -> String {
    let Some(m) = fields(line) else {
        return line.chars().take(120).collect();
    };
    if field(&m, "kind") == "ready" {
        return format!("ready: op {}, journal_mode {}", field(&m, "op"), field(&m, "journal_mode"));
    }
    let rest: Vec<String> = m
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "kind" | "op"))
        .map(|(k, _)| format!("{k}={}", field(&m, k)))
        .collect();
    format!("{} {} {}", field(&m, "kind"), field(&m, "op"), rest.join(" "))
}

/// What the operation a line acknowledges did, by the workload's rule; the
/// ready line ends the store's opening.
pub fn operation(line: &str) -> String {
    let Some(m) = fields(line) else { return "?".into() };
    if field(&m, "kind") == "ready" {
        return "opening the store".into();
    }
    let (op, i) = (field(&m, "op"), field(&m, "i"));
    match op.as_str() {
        "append" => format!("append {i}: m{i}"),
        "rotate" => {
            let carried = m.get("carried").map(|c| format!(", {c} carried")).unwrap_or_default();
            format!("rotation {i}: {} ended, {} created{carried}", field(&m, "parent"), field(&m, "child"))
        }
        _ if i.is_empty() => op,
        _ => format!("{op} {i}"),
    }
}

/// The operation a run was in when it was cut: the one after its last ack
/// (`opening the store` before its ready line).
pub fn in_flight(lines: &[&str]) -> String {
    let Some(last) = lines.last().and_then(|l| fields(l)) else { return "opening the store (no ready line)".into() };
    let op = field(&last, "op");
    if field(&last, "kind") == "ready" {
        return format!("{op} 0 (in flight: no ack)");
    }
    match field(&last, "i").parse::<u64>() {
        Ok(i) if op == "append" => format!("append {}: m{} (in flight: no ack)", i + 1, i + 1),
        Ok(i) if op == "rotate" => format!("rotation {} (in flight: no ack)", i + 1),
        Ok(i) => format!("{op} {} (in flight: no ack)", i + 1),
        Err(_) => format!("{op} (in flight: no ack)"),
    }
}

/// Whether a line is an ack (not the ready line, not a torn tail).
pub fn is_ack(line: &str) -> bool {
    fields(line).is_some_and(|m| field(&m, "kind") == "ack")
}

/// The index of the journal's last ack line, if it holds one.
pub fn last_ack(lines: &[&str]) -> Option<usize> {
    lines.iter().rposition(|l| is_ack(l))
}

/// The lines a journal of `n` lines lists, as ranges in order: all of them
/// if there are few; else its head, the lines around `kill` (the line the
/// kill came after) and its tail, each range apart from the next.
pub fn shown(n: usize, kill: Option<usize>) -> Vec<Range<usize>> {
    if n <= HEAD + BEFORE_KILL + AFTER_KILL + TAIL {
        return std::iter::once(0..n).collect();
    }
    let mut ranges: Vec<Range<usize>> = std::iter::once(0..HEAD).collect();
    if let Some(k) = kill {
        ranges.push(k.saturating_sub(BEFORE_KILL - 1)..(k + 1 + AFTER_KILL).min(n));
    }
    ranges.push(n - TAIL..n);
    // Ranges that touch or overlap are one.
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The messages the journal's appends promise, in ack order (`m<i>` for an
/// ack of `append` i); empty for a workload of other operations.
pub fn appended(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| fields(l))
        .filter(|m| field(m, "kind") == "ack" && field(m, "op") == "append")
        .map(|m| format!("m{}", field(&m, "i")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const READY: &str = r#"{"kind":"ready","op":"rotate","journal_mode":"wal"}"#;
    const ROTATED: &str = r#"{"kind":"ack","op":"rotate","i":3,"parent":"p3","child":"c3"}"#;

    #[test]
    fn each_ack_names_what_its_operation_did() {
        assert_eq!(operation(READY), "opening the store");
        assert_eq!(operation(ROTATED), "rotation 3: p3 ended, c3 created");
        assert_eq!(operation(r#"{"kind":"ack","op":"append","i":7}"#), "append 7: m7");
        assert_eq!(in_flight(&[READY, ROTATED]), "rotation 4 (in flight: no ack)");
        assert_eq!(in_flight(&[READY]), "rotate 0 (in flight: no ack)");
        assert_eq!(text(ROTATED), "ack rotate child=c3 i=3 parent=p3");
    }

    #[test]
    fn a_long_journal_keeps_the_lines_around_its_kill_and_leaves_out_the_middle() {
        assert_eq!(shown(50, Some(49)), std::iter::once(0..50).collect::<Vec<_>>(), "a short one whole");
        let ranges = shown(400, Some(396));
        assert_eq!(ranges, [0..HEAD, 396 + 1 - BEFORE_KILL..400], "the kill's lines run into the tail");
        assert!(ranges.iter().any(|r| r.contains(&396) && r.contains(&395)), "the acks around the kill");
        let ranges = shown(1000, Some(500));
        assert_eq!(ranges.len(), 3, "{ranges:?}");
        assert!(ranges[1].contains(&500) && ranges[1].contains(&(500 + AFTER_KILL)), "{ranges:?}");
        assert_eq!(shown(1000, None), [0..HEAD, 1000 - TAIL..1000]);
    }

    #[test]
    fn the_last_ack_is_the_last_line_that_is_one() {
        let torn = r#"{"kind":"ack","op":"app"#;
        let acked = r#"{"kind":"ack","op":"append","i":0}"#;
        assert_eq!(last_ack(&[READY, acked, torn]), Some(1), "a torn tail is no ack");
        assert_eq!(last_ack(&[READY]), None);
        assert_eq!(appended(&[READY, acked, torn]), ["m0"]);
    }
}
