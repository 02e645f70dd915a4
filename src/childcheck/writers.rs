//! `child-check`'s checks of `co-append` (cell 6), run only when the child
//! lists it: each writer acks its appends in order, and the store shows
//! every writer's appends once, in order, at contiguous positions when it
//! reports them.
//!
//! Crash model: none. The writers run one after the other on one store
//! (their barrier not held), so that the check is about the protocol, not
//! the race: cell 6 runs them at once, and kills one.

use crashcells_protocol::{Op, Ready};

use super::checker::Checker;
use super::clauses::{ack_sequence, canonical, expect_exit, parse_dump};
use crate::cells::{End, Process, writers};
use crate::journal;
use crate::probe::Scratch;

/// The writers and how many appends each makes.
const WRITERS: [(&str, u64); 2] = [("r0", 3), ("r1", 2)];

/// The checks this file reports.
pub(super) const CHECKS: &[&str] = &["co-append", "co-append-state"];

/// The checks of `co-append`, or `not run` for a child that does not list it.
pub(super) fn check(c: &mut Checker<'_>, ready: &Ready) {
    c.when(ready, &[Op::CoAppend], CHECKS, Checker::co_append);
}

impl Checker<'_> {
    /// Each writer's `co-append --stop-after N` in turn on one store, then
    /// its dump judged by cell 6's judge.
    fn co_append(&mut self) {
        let Some(s) = self.scratch("co-append", None) else { return };
        let ran: Result<Vec<Process>, String> = WRITERS.iter().map(|&(w, n)| self.writer(&s, w, n)).collect();
        let detail =
            "writers r0 (3 appends) and r1 (2), one after the other, each acked its appends from 0".to_string();
        let Ok(processes) = self.note_result("co-append", ran, detail) else { return };
        let state = self.dump(&s, "co-append-dump").and_then(|text| {
            canonical(&text)?;
            let v = writers::check(&parse_dump(&text)?, &processes);
            match v.found.first() {
                None => Ok(format!("every append once, in its writer's order; {}", v.details.join("; "))),
                Some(f) => Err(f.text.clone()),
            }
        });
        self.note("co-append-state", state);
    }

    /// Writer `w`'s `n` appends, on a barrier nobody holds.
    fn writer(&self, s: &Scratch, w: &str, n: u64) -> Result<Process, String> {
        let barrier = s.path("barrier.lock");
        std::fs::write(&barrier, b"").map_err(|e| format!("{}: {e}", barrier.display()))?;
        let acks = s.path(&format!("acks-{w}.ndjson"));
        let args = s.op(Op::CoAppend).acks(&acks).writer(w).barrier(&barrier).stop_after(n);
        let label = format!("co-append-{w}");
        let (exit, tail) = self.run_op(s, &args, &label)?;
        expect_exit(exit, 0, &tail, &format!("co-append --writer {w} --stop-after"))?;
        let j = journal::parse(&std::fs::read(&acks).unwrap_or_default()).map_err(|e| e.to_string())?;
        ack_sequence(&j, Op::CoAppend.as_str(), n).map_err(|e| format!("{w}: {e}"))?;
        Ok(Process { name: w.to_string(), acks: j.acks, end: End::Exited(0) })
    }

    /// Notes `result` under `check` (with `detail` when it holds) and hands it back.
    fn note_result<T>(&mut self, check: &'static str, result: Result<T, String>, detail: String) -> Result<T, ()> {
        match result {
            Ok(value) => {
                self.note(check, Ok(detail));
                Ok(value)
            }
            Err(e) => {
                self.note(check, Err(e));
                Err(())
            }
        }
    }
}
