//! Reading a child's ack journal: NDJSON, one record per line, each put down
//! with a single `write(2)` after the operation returned.
//!
//! Crash model: the kill may land inside the write of the final record, so a
//! final line without its newline (or that does not parse) is torn and
//! ignored. A torn line anywhere else means the journal cannot be trusted, and
//! the trial is an `error`, never a pass or a fire.

use crashcells_protocol::{Ack, Ready, Record, speaks, spoken};

/// A parsed journal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Journal {
    pub ready: Option<Ready>,
    pub acks: Vec<Ack>,
    /// True if a torn final line was dropped.
    pub torn_tail: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    #[error("ack journal line {line} is torn or not a record: {message}")]
    TornMiddle { line: usize, message: String },
    #[error("ack journal line {line} is a second ready record")]
    SecondReady { line: usize },
    #[error("ack journal line {line} is an ack before the ready record")]
    AckBeforeReady { line: usize },
    #[error("ack journal line 1 is not a ready record: {found}")]
    NotReady { found: String },
    #[error("the child speaks protocol {found} but this driver speaks {}", spoken())]
    WrongProtocol { found: String },
    #[error("ack journal line 1 is a ready record that does not match its protocol: {message}")]
    BadReady { message: String },
}

/// Parses the whole journal.
pub fn parse(bytes: &[u8]) -> Result<Journal, JournalError> {
    let mut journal = Journal::default();
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (body, tail) = bytes.split_at(complete);
    journal.torn_tail = !tail.is_empty();
    let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    // The newline is part of the record's single write, so a line that has
    // one was written whole: if it does not parse, it is not torn by the kill
    // but broken, and nothing after it can be trusted either.
    for (index, line) in lines.into_iter().enumerate() {
        let line_number = index + 1;
        if line_number == 1 {
            first_line(line)?;
        }
        let record = serde_json::from_slice::<Record>(line)
            .map_err(|e| JournalError::TornMiddle { line: line_number, message: e.to_string() })?;
        journal.push(record, line_number)?;
    }
    Ok(journal)
}

/// Checks the first complete line for what a child of another protocol (or
/// no protocol at all) would put there, before the record is read as ours:
/// a version-2 ready record may not even have our fields, and its author
/// needs to hear "version", not "missing field".
fn first_line(line: &[u8]) -> Result<(), JournalError> {
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|_| JournalError::NotReady { found: snippet(line) })?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("ready") {
        return Err(JournalError::NotReady { found: snippet(line) });
    }
    match value.get("protocol") {
        Some(v) if v.as_u64().and_then(|v| u32::try_from(v).ok()).is_some_and(speaks) => {}
        Some(v) => return Err(JournalError::WrongProtocol { found: v.to_string() }),
        None => return Err(JournalError::WrongProtocol { found: "none (no `protocol` field)".into() }),
    }
    serde_json::from_slice::<Record>(line).map(drop).map_err(|e| JournalError::BadReady { message: e.to_string() })
}

/// The start of a line, quoted, for a message.
pub fn snippet(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let short: String = text.chars().take(60).collect();
    let more = if text.chars().count() > 60 { "..." } else { "" };
    format!("{:?}{more}", short.trim_end())
}

impl Journal {
    fn push(&mut self, record: Record, line: usize) -> Result<(), JournalError> {
        match record {
            Record::Ready(r) if self.ready.is_none() => self.ready = Some(r),
            Record::Ready(_) => return Err(JournalError::SecondReady { line }),
            Record::Ack(_) if self.ready.is_none() => return Err(JournalError::AckBeforeReady { line }),
            Record::Ack(a) => self.acks.push(a),
        }
        Ok(())
    }
}

/// Counts complete lines as a journal grows, reading only what is new.
#[derive(Debug, Default)]
pub struct Tail {
    offset: u64,
    pub lines: u64,
}

impl Tail {
    /// Reads what was appended since the last call and returns the count of
    /// complete lines so far.
    pub fn poll(&mut self, path: &std::path::Path) -> std::io::Result<u64> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.lines),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        self.offset += buf.len() as u64;
        self.lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READY: &str =
        r#"{"kind":"ready","protocol":1,"pid":7,"op":"append","sqlite_version":"3.54.1","journal_mode":"wal"}"#;

    fn ack(i: u64) -> String {
        format!(r#"{{"kind":"ack","op":"append","i":{i}}}"#)
    }

    #[test]
    fn empty_journal_has_no_ready() {
        let j = parse(b"").unwrap();
        assert_eq!(j.ready, None);
        assert!(j.acks.is_empty() && !j.torn_tail);
    }

    #[test]
    fn complete_journal_parses() {
        let text = format!("{READY}\n{}\n{}\n", ack(0), ack(1));
        let j = parse(text.as_bytes()).unwrap();
        assert_eq!(j.ready.unwrap().journal_mode, "wal");
        assert_eq!(j.acks.iter().map(|a| a.i).collect::<Vec<_>>(), [0, 1]);
        assert!(!j.torn_tail);
    }

    #[test]
    fn torn_final_line_is_ignored() {
        let full = format!("{READY}\n{}\n{}", ack(0), &ack(1)[..10]);
        let j = parse(full.as_bytes()).unwrap();
        assert_eq!(j.acks.len(), 1);
        assert!(j.torn_tail);
    }

    #[test]
    fn torn_middle_line_is_an_error() {
        let text = format!("{READY}\n{}\n{}\n", &ack(0)[..10], ack(1));
        let e = parse(text.as_bytes()).unwrap_err();
        assert!(matches!(e, JournalError::TornMiddle { line: 2, .. }), "{e}");
    }

    #[test]
    fn acks_need_a_ready_first() {
        let text = format!("{}\n", ack(0));
        assert!(matches!(parse(text.as_bytes()).unwrap_err(), JournalError::NotReady { .. }));
        let text = format!("{READY}\n{READY}\n");
        assert_eq!(parse(text.as_bytes()).unwrap_err(), JournalError::SecondReady { line: 2 });
    }

    #[test]
    fn a_first_line_of_another_protocol_says_so() {
        let e = parse(b"hello world\n").unwrap_err();
        assert_eq!(e.to_string(), r#"ack journal line 1 is not a ready record: "hello world""#);
        let e = parse(format!("{}\n", ack(0)).as_bytes()).unwrap_err();
        assert!(matches!(e, JournalError::NotReady { .. }), "{e}");
        let e = parse(b"{\"kind\":\"ready\",\"protocol\":3}\n").unwrap_err();
        assert_eq!(e.to_string(), "the child speaks protocol 3 but this driver speaks 1 and 2");
        let e = parse(b"{\"kind\":\"ready\",\"protocol\":1}\n").unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
    }

    #[test]
    fn tail_counts_only_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks.ndjson");
        std::fs::write(&path, format!("{READY}\n{}", &ack(0)[..5])).unwrap();
        let mut t = Tail::default();
        assert_eq!(t.poll(&path).unwrap(), 1);
        std::fs::write(&path, format!("{READY}\n{}\n{}\n", ack(0), ack(1))).unwrap();
        assert_eq!(t.poll(&path).unwrap(), 3);
    }
}
