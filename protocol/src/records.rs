//! The records a child writes to its ack journal (docs/PROTOCOL.md §3), and
//! the writer that puts each one down with a single `write(2)`.
//!
//! Crash model: the child can be killed between any two instructions,
//! including inside the `write` of a record. One `write(2)` per line on an
//! `O_APPEND` file means a kill leaves at most the final line torn; an ack is
//! written only after the operation it acknowledges returned, so an ack on
//! disk is a promise the store must keep.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::{JournalMode, Synchronous};
use crate::op::Op;

/// One line of the ack journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Record {
    Ready(Ready),
    Ack(Ack),
}

/// What a version-2 child lists in its `operations` when its `dump` takes
/// several `--db PATH` and prints one canonical line for each, in order
/// (docs/PROTOCOL.md §2). The driver then recovers many crash states in one
/// process; without it, one process per state.
pub const DUMP_BATCH: &str = "dump-batch";

/// What a version-2 child lists in its `operations` when its `catch-up`
/// takes `--db PATH --transport PATH` more than once, paired in order, and
/// finishes every store's obligations (docs/PROTOCOL.md §2). The driver
/// then runs one recovery step per batch of crash states; without it, one
/// per state.
pub const CATCH_UP_BATCH: &str = "catch-up-batch";

/// What a version-2 child lists in its `operations` when `CMD ARGS
/// fork-server` starts a server that forks one process per operation
/// (docs/PROTOCOL.md §9); also the word that starts it.
pub const FORK_SERVER: &str = "fork-server";

/// What a version-2 child lists in its `operations` when `CMD ARGS
/// warm-pool` starts a process that does its imports, then waits for one
/// operation and runs it (docs/PROTOCOL.md §10): for runtimes that cannot
/// fork. Also the word that starts each such process.
pub const WARM_POOL: &str = "warm-pool";

/// What a version-2 child lists in its `operations` when its `rotate` takes
/// `--shapes on` and then rotates by [`crate::Rotation::of`]'s rule with
/// shapes: rotations that carry messages and rotations that do not, first
/// rotations of a session and rotations of a continuation (docs/PROTOCOL.md
/// §2, `rotate`). The driver passes the flag only to a child that lists it.
pub const ROTATE_SHAPES: &str = "rotate-shapes";

/// Written once, after the store is open and before the first operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub protocol: u32,
    pub pid: u32,
    pub op: String,
    pub sqlite_version: String,
    #[serde(default)]
    pub sqlite_source_id: Option<String>,
    /// `PRAGMA journal_mode` as the child's own connection reports it.
    pub journal_mode: String,
    /// `PRAGMA synchronous` as the child's own connection reports it.
    #[serde(default)]
    pub synchronous: Option<String>,
    /// The resolver's decision, where the store has a resolver.
    #[serde(default)]
    pub resolver: Option<Decision>,
    /// Protocol 2: the operations the child implements, by name. A cell
    /// that needs one the child lacks is skipped, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<Vec<String>>,
    /// An absolute folder outside the one it was given where the store
    /// keeps files of its own, allowed there (docs/PROTOCOL.md §3); absent:
    /// every file it creates is in the folder of `--db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<String>,
}

impl Ready {
    /// Whether the child implements `op`: a version-1 child implements the
    /// five operations of version 1; a later one, those it lists.
    pub fn implements(&self, op: Op) -> bool {
        match &self.operations {
            Some(ops) => ops.iter().any(|o| o == op.as_str()),
            None => self.protocol == 1 && Op::VERSION_1.contains(&op),
        }
    }

    /// Whether the child's `dump` takes several `--db` ([`DUMP_BATCH`]).
    pub fn dumps_in_batches(&self) -> bool {
        self.lists(DUMP_BATCH)
    }

    /// Whether the child's `catch-up` takes several stores ([`CATCH_UP_BATCH`]).
    pub fn catches_up_in_batches(&self) -> bool {
        self.lists(CATCH_UP_BATCH)
    }

    /// Whether the child's `rotate` takes `--shapes on` ([`ROTATE_SHAPES`]).
    pub fn rotates_in_shapes(&self) -> bool {
        self.lists(ROTATE_SHAPES)
    }

    fn lists(&self, word: &str) -> bool {
        self.operations.as_ref().is_some_and(|ops| ops.iter().any(|o| o == word))
    }
}

/// Written after an operation returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    pub op: String,
    /// The operation's ordinal within this child run, from 0.
    pub i: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
    /// A `fork` rewind's cut: the live transcript kept its first `k` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
    /// A delivered obligation's idempotency key (`deliver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// How many messages a rotation of `rotate --shapes on` carried into its
    /// continuation; absent without `--shapes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<u64>,
}

impl Ack {
    /// The ack of operation `i` of `op`, with no other fields.
    pub fn of(op: &str, i: u64) -> Ack {
        Ack { op: op.to_string(), i, parent: None, child: None, k: None, key: None, carried: None }
    }

    /// The ack of rotation `i` from `parent` to `child`.
    pub fn rotate(i: u64, parent: &str, child: &str) -> Ack {
        Ack { parent: Some(parent.to_string()), child: Some(child.to_string()), ..Ack::of("rotate", i) }
    }

    /// The ack of rotation `r` of `rotate --shapes on`: its parent, its
    /// continuation and what it carried.
    pub fn rotation(i: u64, r: &crate::Rotation) -> Ack {
        Ack { carried: Some(r.carried), ..Ack::rotate(i, &r.parent, &r.child) }
    }

    /// The ack of `fork` operation `i`, a rewind that kept `k` messages.
    pub fn rewind(i: u64, k: u64) -> Ack {
        Ack { k: Some(k), ..Ack::of("rewind", i) }
    }

    /// The ack of obligation `i`, delivered under `key`.
    pub fn deliver(i: u64, key: &str) -> Ack {
        Ack { key: Some(key.to_string()), ..Ack::of("deliver", i) }
    }
}

/// Who made a resolver's decision, in a form a report can match on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decider {
    /// The config asked for this mode and it was applied.
    Config,
    /// Nothing was asked; the resolver's default applies.
    Default,
    /// WAL was wanted but the library has the WAL-reset bug.
    WalResetGate,
    /// The file is already in WAL and stays there.
    AlreadyWal,
    /// The store imposes its mode whatever is asked (a library that sets
    /// `journal_mode` itself on open or on first use): the config is read,
    /// but nothing in it can change the mode.
    Store,
    /// Another store's resolver gave a reason of its own. Without it, a
    /// decider we do not know would make the whole record unreadable.
    #[serde(other)]
    Other,
}

impl Decider {
    /// The name as the ready record spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Config => "config",
            Decider::Default => "default",
            Decider::WalResetGate => "wal-reset-gate",
            Decider::AlreadyWal => "already-wal",
            Decider::Store => "store",
            Decider::Other => "other",
        }
    }
}

/// A resolver's decision as the ready record carries it: what was
/// requested, what is applied, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub requested: Option<JournalMode>,
    pub applied: JournalMode,
    pub synchronous: Option<Synchronous>,
    pub decided_by: Decider,
    pub reason: String,
}

/// An append-only NDJSON journal written one `write(2)` per record.
pub struct AckWriter {
    file: File,
}

impl AckWriter {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { file })
    }

    /// Writes one record as one line with one `write(2)`. A short write is an
    /// error rather than a second call: a second call could be split from the
    /// first by the kill and leave a torn line that is not the final one.
    pub fn record(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let n = self.file.write(&line)?;
        if n != line.len() {
            return Err(std::io::Error::other(format!("short write of an ack: {n} of {} bytes", line.len())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_single_lines() {
        let cases = [
            (Ack::rotate(3, "p3", "c3"), r#"{"kind":"ack","op":"rotate","i":3,"parent":"p3","child":"c3"}"#),
            (Ack::of("append", 0), r#"{"kind":"ack","op":"append","i":0}"#),
            (Ack::rewind(7, 2), r#"{"kind":"ack","op":"rewind","i":7,"k":2}"#),
            (Ack::deliver(1, "o1"), r#"{"kind":"ack","op":"deliver","i":1,"key":"o1"}"#),
            (
                Ack::rotation(1, &crate::Rotation::of(1, true)),
                r#"{"kind":"ack","op":"rotate","i":1,"parent":"c0","child":"c1","carried":2}"#,
            ),
        ];
        for (ack, want) in cases {
            let record = Record::Ack(ack);
            let text = serde_json::to_string(&record).unwrap();
            assert_eq!(text, want);
            assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), record);
        }
    }

    #[test]
    fn writer_appends_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acks.ndjson");
        let mut w = AckWriter::create(&path).unwrap();
        for i in 0..3 {
            w.record(&Record::Ack(Ack::of("append", i))).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with('\n'));
    }

    fn ready(protocol: u32, operations: Option<&[&str]>) -> Ready {
        let text = format!(
            r#"{{"protocol":{protocol},"pid":1,"op":"append","sqlite_version":"3.54.1","journal_mode":"wal"{}}}"#,
            operations.map_or(String::new(), |o| format!(r#","operations":{}"#, serde_json::to_string(o).unwrap()))
        );
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn a_version_1_child_implements_the_five_and_a_later_one_what_it_lists() {
        let v1 = ready(1, None);
        assert!(Op::VERSION_1.iter().all(|&op| v1.implements(op)));
        let v2 = ready(2, Some(&["append", "dump", "fork"]));
        assert!(v2.implements(Op::Append) && v2.implements(Op::Dump));
        assert!(!v2.implements(Op::Rotate));
        assert!(!ready(2, None).implements(Op::Append), "version 2 lists what it implements");
    }

    #[test]
    fn only_a_child_that_lists_dump_batch_dumps_in_batches() {
        assert!(ready(2, Some(&["append", "dump", DUMP_BATCH])).dumps_in_batches());
        assert!(!ready(2, Some(&["append", "dump"])).dumps_in_batches());
        assert!(!ready(1, None).dumps_in_batches(), "a version-1 child dumps one state per process");
    }

    #[test]
    fn only_a_child_that_lists_rotate_shapes_is_given_them() {
        assert!(ready(2, Some(&["append", "rotate", "dump", ROTATE_SHAPES])).rotates_in_shapes());
        assert!(!ready(2, Some(&["append", "rotate", "dump"])).rotates_in_shapes());
        assert!(!ready(1, None).rotates_in_shapes(), "a version-1 child rotates as version 1 does");
    }

    #[test]
    fn decider_names_are_the_serialized_ones() {
        let all = [
            Decider::Config,
            Decider::Default,
            Decider::WalResetGate,
            Decider::AlreadyWal,
            Decider::Store,
            Decider::Other,
        ];
        for d in all {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }

    #[test]
    fn a_store_that_imposes_its_mode_is_read_as_store() {
        let text = r#"{"requested":"delete","applied":"wal","synchronous":null,"decided_by":"store","reason":"setup sets WAL"}"#;
        let d: Decision = serde_json::from_str(text).unwrap();
        assert_eq!(
            (d.requested, d.applied, d.decided_by),
            (Some(JournalMode::Delete), JournalMode::Wal, Decider::Store)
        );
    }

    #[test]
    fn another_stores_decider_is_read_as_other() {
        let text = r#"{"requested":null,"applied":"delete","synchronous":null,"decided_by":"policy","reason":"ours"}"#;
        let d: Decision = serde_json::from_str(text).unwrap();
        assert_eq!((d.decided_by, d.reason.as_str()), (Decider::Other, "ours"));
    }
}
