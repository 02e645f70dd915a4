//! `child-check`'s checks of `co-append` (cell 6), run only when the child
//! lists it: each writer acks its appends in order, and the store shows
//! every writer's appends once, in order, at contiguous positions when it
//! reports them.
//!
//! Crash model: none. The writers run one after the other on one store
//! (their barrier not held), so that the check is about the protocol, not
//! the race: cell 6 runs them at once, and kills one.
//!
//! Ids that collide between writers (a store numbering its rows with a
//! counter of its own process) show here in one of two ways, each named as
//! a collision: the second writer fails on a unique key the first one's
//! rows hold, or its rows silently replace the first one's acked ones.

use crashcells_protocol::{APPEND_SESSION as MAIN, Dump, Op, Ready};

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
        let ran: Result<Vec<Process>, String> =
            WRITERS.iter().map(|&(w, n)| self.writer(&s, w, n).map_err(|e| key_collision(w, e))).collect();
        let detail =
            "writers r0 (3 appends) and r1 (2), one after the other, each acked its appends from 0".to_string();
        let Ok(processes) = self.note_result("co-append", ran, detail) else { return };
        let state = self.dump(&s, "co-append-dump").and_then(|text| {
            canonical(&text)?;
            let dump = parse_dump(&text)?;
            let v = writers::check(&dump, &processes);
            match v.found.first() {
                None => Ok(format!("every append once, in its writer's order; {}", v.details.join("; "))),
                Some(f) => Err(replaced(&dump, &processes).unwrap_or_else(|| f.text.clone())),
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

/// What sdk/API.md asks of ids, quoted where child-check finds them colliding.
const UNIQUE_PER_WRITER: &str = "ids must be unique per writer (sdk/API.md: the store's `writer` and `index`)";

/// A later writer's failure on a unique key, named as the writers' ids
/// colliding: the first writer ran alone before it, so the row it hit is
/// the first writer's. Any other failure is `e` as it was.
fn key_collision(w: &str, e: String) -> String {
    let first = WRITERS[0].0;
    let unique = ["UNIQUE constraint", "PRIMARY KEY", "duplicate key", "unique constraint"];
    if w == first || !unique.iter().any(|u| e.contains(u)) {
        return e;
    }
    format!("the writers' ids collide: {w}'s append failed on a key {first}'s appends hold; {UNIQUE_PER_WRITER}: {e}")
}

/// The second writer's appends recovered whole while the first writer lost
/// exactly its appends at the same indexes: the second writer's rows took
/// the first one's ids (an upsert), named as the collision it is.
fn replaced(dump: &Dump, processes: &[Process]) -> Option<String> {
    let [(first, _), (second, _)] = WRITERS;
    let acked = |w: &str| processes.iter().find(|p| p.name == w).map_or(0, |p| p.acks.len());
    let has =
        |w: &str, i: usize| dump.messages.iter().any(|m| m.session_id == MAIN && m.content == format!("{w}-m{i}"));
    let n = acked(second);
    let first_lost: Vec<usize> = (0..acked(first)).filter(|&i| !has(first, i)).collect();
    let shadowed =
        n > 0 && first_lost == (0..n.min(acked(first))).collect::<Vec<_>>() && (0..n).all(|i| has(second, i));
    shadowed.then(|| {
        format!(
            "the writers' ids collide: {second}'s {n} appends replaced {first}'s acked {first}-m0..{first}-m{}; {UNIQUE_PER_WRITER}",
            first_lost.len() - 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::End;
    use crashcells_protocol::DumpMessage;

    fn process(name: &str, acked: u64) -> Process {
        let acks = (0..acked).map(|i| crashcells_protocol::Ack::of("co-append", i)).collect();
        Process { name: name.into(), acks, end: End::Exited(0) }
    }

    fn dump(contents: &[&str]) -> Dump {
        let messages = contents
            .iter()
            .map(|c| DumpMessage {
                session_id: MAIN.into(),
                role: "user".into(),
                content: c.to_string(),
                position: None,
                active: true,
            })
            .collect();
        Dump { protocol: 2, integrity: "ok".into(), sessions: vec![], messages, outbox: vec![] }
    }

    #[test]
    fn a_second_writer_failing_on_a_unique_key_is_named_a_collision_and_other_failures_are_not() {
        let e = "exit code 3: UNIQUE constraint failed: messages.id".to_string();
        assert!(key_collision("r1", e.clone()).starts_with("the writers' ids collide: r1's append failed"));
        assert_eq!(key_collision("r0", e.clone()), e);
        assert_eq!(key_collision("r1", "exit code 3: disk I/O error".into()), "exit code 3: disk I/O error");
    }

    #[test]
    fn rows_replaced_at_the_same_indexes_are_a_collision_and_a_plain_loss_is_not() {
        let ps = [process("r0", 3), process("r1", 2)];
        let upserted = replaced(&dump(&["r0-m2", "r1-m0", "r1-m1"]), &ps).unwrap();
        assert!(upserted.contains("r1's 2 appends replaced r0's acked r0-m0..r0-m1"), "{upserted}");
        assert_eq!(replaced(&dump(&["r0-m0", "r0-m1", "r1-m0", "r1-m1"]), &ps), None);
        assert_eq!(replaced(&dump(&["r0-m0", "r0-m1", "r0-m2", "r1-m0", "r1-m1"]), &ps), None);
    }
}
