//! `dump`'s canonical state (docs/PROTOCOL.md §4): the logical content of a
//! store after recovery, with no row ids or timestamps, so that any store can
//! print the same shape and two recovery passes can be compared byte for byte.

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
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DumpSession {
    pub id: String,
    pub parent_session_id: Option<String>,
    pub ended: bool,
    pub end_reason: Option<String>,
    pub message_count: i64,
    pub handoff_state: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DumpMessage {
    pub session_id: String,
    pub role: String,
    pub content: String,
}

impl Dump {
    /// An empty store: what a database without the store's schema recovers as.
    pub fn empty(protocol: u32, integrity: String) -> Dump {
        Dump { protocol, integrity, sessions: vec![], messages: vec![] }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_line_is_compact_and_in_field_order() {
        let d = Dump {
            protocol: 1,
            integrity: "ok".into(),
            sessions: vec![DumpSession {
                id: "a".into(),
                parent_session_id: None,
                ended: false,
                end_reason: None,
                message_count: 1,
                handoff_state: None,
            }],
            messages: vec![DumpMessage { session_id: "a".into(), role: "user".into(), content: "é/\"".into() }],
        };
        assert_eq!(
            d.to_canonical_line(),
            "{\"protocol\":1,\"integrity\":\"ok\",\"sessions\":[{\"id\":\"a\",\"parent_session_id\":null,\
             \"ended\":false,\"end_reason\":null,\"message_count\":1,\"handoff_state\":null}],\
             \"messages\":[{\"session_id\":\"a\",\"role\":\"user\",\"content\":\"é/\\\"\"}]}\n"
        );
    }
}
