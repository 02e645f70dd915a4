//! `child-check`'s `rotate` checks, and `dump`'s: canonical bytes and two
//! passes that agree, on every store an operation that succeeded left
//! (`append`'s, `rotate`'s, the claim's). A store without rotation, or one
//! whose `rotate` fails, still has its `dump` checked on the others.

use crashcells_protocol::Op;

use super::checker::{Checker, ROTATIONS, State};
use super::clauses::{ack_sequence, canonical, expect_exit, rotate_state};
use crate::journal;
use crate::recovery::where_differ;

impl Checker<'_> {
    /// `rotate --stop-after 3`, its acks and the state it left.
    pub(super) fn rotate(&mut self) {
        let Some(s) = self.scratch("rotate", None) else { return };
        let acks = s.path("acks.ndjson");
        let args = s.op(Op::Rotate).acks(&acks).stop_after(ROTATIONS);
        let ran = self.run_op(&s, &args, "rotate");
        if let Ok((exit, _)) = &ran
            && self.unsupported(Op::Rotate, *exit, &["rotate", "rotate-state"])
        {
            return;
        }
        let ran = ran.and_then(|(e, t)| expect_exit(e, 0, &t, "rotate --stop-after 3"));
        if !self.note("rotate", ran) {
            return;
        }
        let journal = match journal::parse(&std::fs::read(&acks).unwrap_or_default()) {
            Ok(j) => j,
            Err(e) => {
                self.note("rotate", Err(e.to_string()));
                return;
            }
        };
        let first = self.dump(&s, "dump-1");
        let state = first
            .clone()
            .and_then(|t| ack_sequence(&journal, "rotate", ROTATIONS).and_then(|_| rotate_state(&t, &journal)));
        self.note("rotate-state", state);
        self.states.push(State { op: "rotate", scratch: s, first });
    }

    /// `dump-canonical` and `dump-deterministic` on every state kept: the
    /// first pass's bytes, then a second pass that must print the same.
    pub(super) fn dumps(&mut self) {
        let states = std::mem::take(&mut self.states);
        if states.is_empty() {
            return;
        }
        let names: Vec<&str> = states.iter().map(|s| s.op).collect();
        let on = format!("on the states of {}", names.join(", "));
        let canonical_all = states
            .iter()
            .try_for_each(|s| {
                s.first
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|t| canonical(t).map(drop))
                    .map_err(|e| format!("{} state: {e}", s.op))
            })
            .map(|()| format!("one line, canonical field order, sessions sorted by id, {on}"));
        self.note("dump-canonical", canonical_all);
        let same = states
            .iter()
            .try_for_each(|s| self.second_pass(s))
            .map(|()| format!("two passes print the same bytes, {on}"));
        self.note("dump-deterministic", same);
    }

    fn second_pass(&self, s: &State) -> Result<(), String> {
        let first = s.first.as_ref().map_err(|e| format!("{} state: {e}", s.op))?;
        let second = self.dump(&s.scratch, "dump-again").map_err(|e| format!("{} state: {e}", s.op))?;
        if *first == second {
            Ok(())
        } else {
            Err(format!("{} state: the two passes differ {}", s.op, where_differ(first, &second)))
        }
    }
}
