//! `dump`'s canonical state (docs/PROTOCOL.md §4): the logical content of a
//! store after recovery, with no row ids or timestamps, so that any store can
//! print the same shape and two recovery passes can be compared byte for byte.
//!
//! Fields added after version 1 (a message's `position` and `active`, a session's
//! `branch_of`, the top-level `outbox`) are omitted when they hold their
//! default, so a store that never forks or delivers prints exactly the bytes
//! it printed before.

use serde::{Deserialize, Serialize};

/// The store's logical state, as `dump` prints it. Field order is the
/// canonical order; serializing with `serde_json::to_string` gives the
/// canonical bytes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Dump {
    pub protocol: u32,
    /// The rows of `PRAGMA integrity_check` joined with `"; "` (`"ok"` when
    /// healthy), or `corrupt: <message>` for a file SQLite refuses to read.
    pub integrity: String,
    pub sessions: Vec<DumpSession>,
    pub messages: Vec<DumpMessage>,
    /// The store's delivery obligations (`deliver`), sorted by key; omitted
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outbox: Vec<DumpObligation>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DumpSession {
    pub id: String,
    pub parent_session_id: Option<String>,
    pub ended: bool,
    pub end_reason: Option<String>,
    pub message_count: i64,
    pub handoff_state: Option<String>,
    /// The session this one was branched from by a rewind (it holds a copy
    /// of the kept prefix and continues it); omitted when not a branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_of: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DumpMessage {
    pub session_id: String,
    pub role: String,
    pub content: String,
    /// The message's place in its session as the store itself records it
    /// (a sequence or index column): what the store orders by, so that two
    /// messages at one place, or a place skipped, show. Optional (a store
    /// that orders by row id alone has none to show); omitted when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    /// False for a message a rewind soft-deleted; omitted when true.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub active: bool,
}

/// One delivery obligation of the store's outbox.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DumpObligation {
    /// The idempotency key: `o0`, `o1`, ...
    pub key: String,
    /// `recorded`, `attempting` or `delivered`.
    pub state: String,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl DumpSession {
    /// A session with no parent, not ended, no handoff, not a branch.
    pub fn new(id: &str, message_count: i64) -> DumpSession {
        DumpSession {
            id: id.to_string(),
            parent_session_id: None,
            ended: false,
            end_reason: None,
            message_count,
            handoff_state: None,
            branch_of: None,
        }
    }
}

impl DumpMessage {
    /// An active message.
    pub fn new(session_id: &str, role: &str, content: &str) -> DumpMessage {
        DumpMessage {
            session_id: session_id.into(),
            role: role.into(),
            content: content.into(),
            position: None,
            active: true,
        }
    }
}

/// Why a session's live transcript cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    #[error("sessions {0} and {1} both say they branch from {2}: the live branch is ambiguous")]
    TwoBranches(String, String, String),
    #[error("the branches from {0} form a cycle")]
    Cycle(String),
}

impl Dump {
    /// An empty store: what a database without the store's schema recovers as.
    pub fn empty(protocol: u32, integrity: String) -> Dump {
        Dump { protocol, integrity, sessions: vec![], messages: vec![], outbox: vec![] }
    }

    /// The canonical line: compact JSON in field order, ending in `\n`.
    pub fn to_canonical_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a dump always serializes");
        line.push('\n');
        line
    }

    /// The messages of session `id`, in commit order.
    pub fn messages_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a DumpMessage> + 'a {
        self.messages.iter().filter(move |m| m.session_id == id)
    }

    pub fn session(&self, id: &str) -> Option<&DumpSession> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The live head of `id`: follow `branch_of` links from `id` (the
    /// session that names it, then the one that names that, ...) to the
    /// session no other branches from. `id` itself when nothing branches.
    pub fn head<'a>(&'a self, id: &'a str) -> Result<&'a str, LiveError> {
        let mut at = id;
        let mut seen = vec![id];
        loop {
            let mut from = self.sessions.iter().filter(|s| s.branch_of.as_deref() == Some(at));
            let Some(next) = from.next() else { return Ok(at) };
            if let Some(twin) = from.next() {
                return Err(LiveError::TwoBranches(next.id.clone(), twin.id.clone(), at.to_string()));
            }
            if seen.contains(&next.id.as_str()) {
                return Err(LiveError::Cycle(id.to_string()));
            }
            at = &next.id;
            seen.push(at);
        }
    }

    /// The live transcript of `id` (docs/PROTOCOL.md §4): the messages of
    /// its head that are active, in dump order.
    pub fn live_transcript<'a>(&'a self, id: &'a str) -> Result<Vec<&'a DumpMessage>, LiveError> {
        let head = self.head(id)?;
        Ok(self.messages_of(head).filter(|m| m.active).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_line_is_compact_and_in_field_order() {
        let d = Dump {
            protocol: 1,
            integrity: "ok".into(),
            sessions: vec![DumpSession::new("a", 1)],
            messages: vec![DumpMessage::new("a", "user", "é/\"")],
            outbox: vec![],
        };
        assert_eq!(
            d.to_canonical_line(),
            "{\"protocol\":1,\"integrity\":\"ok\",\"sessions\":[{\"id\":\"a\",\"parent_session_id\":null,\
             \"ended\":false,\"end_reason\":null,\"message_count\":1,\"handoff_state\":null}],\
             \"messages\":[{\"session_id\":\"a\",\"role\":\"user\",\"content\":\"é/\\\"\"}]}\n"
        );
    }

    fn transcript(d: &Dump, id: &str) -> Vec<String> {
        d.live_transcript(id).unwrap().iter().map(|m| m.content.clone()).collect()
    }

    #[test]
    fn fields_added_after_version_1_appear_only_when_not_their_default() {
        let mut d = Dump::empty(2, "ok".into());
        d.sessions = vec![
            DumpSession::new("main", 2),
            DumpSession { branch_of: Some("main".into()), ..DumpSession::new("main.3", 1) },
        ];
        d.messages = vec![
            DumpMessage::new("main", "user", "m0"),
            DumpMessage { position: Some(1), active: false, ..DumpMessage::new("main", "user", "m1") },
        ];
        d.outbox = vec![DumpObligation { key: "o0".into(), state: "delivered".into() }];
        let line = d.to_canonical_line();
        assert!(line.contains(r#""handoff_state":null},{"id":"main.3""#), "{line}");
        assert!(line.contains(r#""handoff_state":null,"branch_of":"main"}"#), "{line}");
        assert!(
            line.contains(r#""content":"m0"},{"#) && line.contains(r#""content":"m1","position":1,"active":false}"#),
            "{line}"
        );
        assert!(line.ends_with("],\"outbox\":[{\"key\":\"o0\",\"state\":\"delivered\"}]}\n"), "{line}");
        assert_eq!(serde_json::from_str::<Dump>(&line).unwrap(), d);
        assert!(!Dump::empty(1, "ok".into()).to_canonical_line().contains("outbox"));
    }

    #[test]
    fn the_live_transcript_follows_branches_and_skips_inactive_messages() {
        let mut d = Dump::empty(2, "ok".into());
        assert!(transcript(&d, "main").is_empty(), "no session, no transcript");
        d.sessions = vec![
            DumpSession::new("main", 3),
            DumpSession { branch_of: Some("main".into()), ..DumpSession::new("b3", 1) },
            DumpSession { branch_of: Some("b3".into()), ..DumpSession::new("b7", 2) },
        ];
        d.messages = vec![
            DumpMessage::new("main", "user", "m0"),
            DumpMessage::new("b7", "user", "m0"),
            DumpMessage { active: false, ..DumpMessage::new("b7", "user", "m4") },
            DumpMessage::new("b7", "user", "m8"),
        ];
        assert_eq!(d.head("main").unwrap(), "b7");
        assert_eq!(transcript(&d, "main"), ["m0", "m8"]);
        d.sessions.push(DumpSession { branch_of: Some("b3".into()), ..DumpSession::new("b9", 0) });
        assert!(matches!(d.head("main"), Err(LiveError::TwoBranches(..))));
        d.sessions.pop();
        d.sessions[0].branch_of = Some("b7".into());
        assert_eq!(d.head("main"), Err(LiveError::Cycle("main".into())));
    }
}
