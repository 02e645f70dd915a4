//! The first check: `append --stop-after 5` and what it shows: the ready
//! record, the protocol, the acks, the state it left, and the journal's own
//! faults named by the check they break.

use crashcells_protocol::{Op, Ready};

use super::checker::{APPENDS, Checker, State};
use super::clauses::{ack_sequence, append_state, expect_exit, ready_fields};
use crate::journal::{self, JournalError};
use crate::probe::{End, no_ready};

impl Checker<'_> {
    /// `append --stop-after 5`: the ready record, the acks, the state.
    pub(super) fn append(&mut self) -> Option<Ready> {
        let s = self.scratch("append", None)?;
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Append).acks(&acks).stop_after(APPENDS);
        let ran = self.run_op(&s, &args, "append");
        let bytes = std::fs::read(&acks).unwrap_or_default();
        let journal = match journal::parse(&bytes) {
            Ok(j) => j,
            Err(e) => {
                self.journal_error(e);
                return None;
            }
        };
        let Some(ready) = journal.ready.clone() else {
            let stdout = std::fs::read(s.path("append.stdout")).unwrap_or_default();
            let (end, tail) =
                ran.clone().map_or((End::Deadline(self.deadline), String::new()), |(e, t)| (End::Exited(e), t));
            self.note("ready", Err(no_ready(&bytes, &stdout, end, &tail)));
            return None;
        };
        self.note("ready", Ok(format!("first line is a ready record for `{}`", ready.op)));
        self.note("protocol-version", Ok(format!("protocol {}", ready.protocol)));
        self.note("ready-fields", ready_fields(&ready, "append"));
        let stopped = ran.and_then(|(exit, tail)| expect_exit(exit, 0, &tail, "append --stop-after 5"));
        let finished = self.note("stop-after", stopped);
        self.note("acks", ack_sequence(&journal, "append", APPENDS));
        let first = self.dump(&s, "append-dump");
        self.note("append-state", first.clone().and_then(|t| append_state(&t, &journal.acks)));
        if finished {
            self.states.push(State { op: "append", scratch: s, first });
        }
        Some(ready)
    }

    fn journal_error(&mut self, e: JournalError) {
        let check = match e {
            JournalError::WrongProtocol { .. } => "protocol-version",
            JournalError::NotReady { .. } => "ready",
            JournalError::BadReady { .. } => "ready-fields",
            _ => "acks",
        };
        self.note(check, Err(e.to_string()));
    }
}
