//! `child-check`'s clauses on what an operation left: its exit, its ready
//! record, its acks, the state it left, and `dump`'s canonical bytes.

use crashcells_protocol::{Ack, Dump, JournalMode, Ready, speaks, spoken};

use super::checker::APPENDS;
use crate::cells::{prefix, rotation};
use crate::harness::Exit;
use crate::journal::Journal;
use crate::recovery::where_differ;

pub(super) fn expect_exit(exit: Exit, want: i32, tail: &str, what: &str) -> Result<String, String> {
    if exit == Exit::Code(want) {
        Ok(format!("{what} ended with exit code {want}"))
    } else {
        Err(format!("{what} ended with {exit}, expected exit code {want}: {tail}"))
    }
}

pub(super) fn ready_fields(r: &Ready, op: &str) -> Result<String, String> {
    if r.op != op {
        return Err(format!("ready record says op `{}` for `{op}`", r.op));
    }
    if r.sqlite_version.trim().is_empty() {
        return Err("ready record has an empty sqlite_version".into());
    }
    if r.journal_mode.parse::<JournalMode>().is_err() {
        return Err(format!("ready record's journal_mode `{}` is not a journal mode", r.journal_mode));
    }
    Ok(format!("SQLite {}, journal_mode {}", r.sqlite_version, r.journal_mode))
}

/// Exactly `n` acks of `op`, numbered 0..n, all lines whole.
pub(super) fn ack_sequence(j: &Journal, op: &str, n: u64) -> Result<String, String> {
    if j.torn_tail {
        return Err("the ack journal ends in a line without a newline (nothing was killed)".into());
    }
    let got: Vec<u64> = j.acks.iter().map(|a| a.i).collect();
    if got != (0..n).collect::<Vec<_>>() {
        return Err(format!("expected {n} acks numbered 0..{n}, found {got:?}"));
    }
    if let Some(a) = j.acks.iter().find(|a| a.op != op) {
        return Err(format!("ack {} says op `{}` for `{op}`", a.i, a.op));
    }
    if op == "rotate" && j.acks.iter().any(|a| a.parent.is_none() || a.child.is_none()) {
        return Err("a rotate ack lacks its parent or child".into());
    }
    Ok(format!("{n} acks of `{op}`, numbered 0..{n}"))
}

pub(super) fn append_state(text: &str, acks: &[Ack]) -> Result<String, String> {
    let dump = parse_dump(text)?;
    let v = prefix::check(&dump, acks);
    if !v.found.is_empty() {
        return Err(v.texts().join("; "));
    }
    let n = dump.messages.len() as u64;
    if n != APPENDS {
        return Err(format!("append --stop-after {APPENDS} left {n} messages"));
    }
    Ok(v.details.join("; "))
}

pub(super) fn rotate_state(text: &str, j: &Journal) -> Result<String, String> {
    let v = rotation::check(&parse_dump(text)?, &j.acks);
    if v.found.is_empty() { Ok(v.details.join("; ")) } else { Err(v.texts().join("; ")) }
}

pub(super) fn parse_dump(text: &str) -> Result<Dump, String> {
    serde_json::from_str(text.trim_end()).map_err(|e| format!("dump printed no dump: {e}"))
}

/// One line, exactly our serialization (field order, no spaces), sessions
/// sorted by id.
pub(super) fn canonical(text: &str) -> Result<String, String> {
    let dump = parse_dump(text)?;
    if !speaks(dump.protocol) {
        return Err(format!("dump says protocol {} but this driver speaks {}", dump.protocol, spoken()));
    }
    let want = serde_json::to_string(&dump).map_err(|e| e.to_string())? + "\n";
    if text != want {
        return Err(format!("not canonical: printed and canonical differ {}", where_differ(text, &want)));
    }
    if !dump.sessions.is_sorted_by(|a, b| a.id <= b.id) {
        return Err("sessions are not sorted by id".into());
    }
    Ok("one line, canonical field order, sessions sorted by id".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = r#"{"protocol":1,"integrity":"ok","sessions":[{"id":"a","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],"messages":[]}"#;

    #[test]
    fn canonical_accepts_our_bytes_and_names_the_first_difference() {
        assert!(canonical(&format!("{DUMP}\n")).is_ok());
        let spaced = DUMP.replace(r#""integrity":"ok""#, r#""integrity": "ok""#);
        let e = canonical(&format!("{spaced}\n")).unwrap_err();
        assert!(e.starts_with("not canonical: printed and canonical differ at byte 26"), "{e}");
        assert!(canonical(DUMP).is_err(), "the line must end with a newline");
    }

    #[test]
    fn unsorted_sessions_are_not_canonical() {
        let two = DUMP.replace("}],", r#"},{"id":"0","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],"#);
        assert_eq!(canonical(&format!("{two}\n")).unwrap_err(), "sessions are not sorted by id");
    }
}
