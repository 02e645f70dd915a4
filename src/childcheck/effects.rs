//! `child-check`'s checks of the operations of cells 4 and 5, run only
//! when the child lists them in its ready record: `fork` (its acks follow
//! the seeded rule, its live transcript is their replay, its dump is
//! canonical with the fields added in version 2), `deliver` (each obligation
//! sent once and shown delivered) and `catch-up` (an obligation left
//! attempting is sent only if the transport does not have it).
//!
//! Crash model: none is needed. The state a crash leaves between a send and
//! its mark is made without a kill: `deliver` is given a transport it cannot
//! write (a folder), so its first send fails after the obligation was marked
//! attempting; `catch-up` then meets that obligation once with the transport
//! holding it (it arrived) and once without (it did not).
//!
//! What `catch-up` then does with that obligation is the store's recovery,
//! judged by cell 5's own judge: a double delivery or a loss there is the
//! store's finding (cell 5 fires on it under a kill), not the adapter's
//! fault; a `deliver` or `catch-up` that does not run as the protocol says
//! is a fault.

use crashcells_protocol::transport::{self, Delivery};
use crashcells_protocol::{Op, OpArgs, Ready};

use super::checker::{Checker, Failed};
use super::clauses::{ack_sequence, canonical, expect_exit, parse_dump};
use crate::cells::{Cell, fork, outbox};
use crate::harness::Exit;
use crate::journal::{self, Journal};
use crate::probe::Scratch;

/// Operations of the `fork` run: two rewinds.
const FORK_OPS: u64 = 9;
/// The seed of the `fork` run.
const FORK_SEED: u64 = 10;
/// Obligations of the `deliver` run.
const OBLIGATIONS: u64 = 3;

/// The checks this file reports.
pub(super) const CHECKS: &[&str] =
    &["fork", "fork-state", "deliver", "deliver-state", "catch-up-arrived", "catch-up-missing"];

/// The checks of the operations `ready` lists among `fork`, `deliver` and
/// `catch-up`; each other one is `not run`, saying which operation it lacks.
pub(super) fn check(c: &mut Checker<'_>, ready: &Ready) {
    c.when(ready, &[Op::Fork], &["fork", "fork-state"], Checker::fork);
    c.when(ready, &[Op::Deliver], &["deliver", "deliver-state"], Checker::deliver);
    let catch_ups = ["catch-up-arrived", "catch-up-missing"];
    c.when(ready, &[Op::Deliver, Op::CatchUp], &catch_ups, Checker::catch_up);
}

impl Checker<'_> {
    /// Runs `args` in `s` to its end (exit 0) and reads its ack journal.
    fn run_journaled(&self, s: &Scratch, args: &OpArgs, label: &str) -> Result<Journal, String> {
        let (exit, tail) = self.run_op(s, args, label)?;
        expect_exit(exit, 0, &tail, &format!("{label} --stop-after"))?;
        journal::parse(&std::fs::read(s.path("acks.ndjson")).unwrap_or_default()).map_err(|e| e.to_string())
    }

    /// `fork --seed 8 --stop-after 9`: acks by the rule, the live transcript
    /// their replay, the dump canonical.
    fn fork(&mut self) {
        let Some(s) = self.scratch("fork", None) else { return };
        let args = s.op(Op::Fork).acks(&s.path("acks.ndjson")).seed(FORK_SEED).stop_after(FORK_OPS);
        let ran = self.run_journaled(&s, &args, "fork").and_then(|j| match j.acks.len() as u64 {
            FORK_OPS => Ok((fork::replay(FORK_SEED, &j.acks)?.0, j.acks)),
            n => Err(format!("fork --stop-after {FORK_OPS} acked {n} operations")),
        });
        let detail = |_: &_| format!("{FORK_OPS} operations acked as the seeded rule gives them");
        let Ok((want, _)) = self.note_ok("fork", ran, detail) else { return };
        let state = self.dump(&s, "fork-dump").and_then(|text| {
            canonical(&text)?;
            let dump = parse_dump(&text)?;
            let live = fork::live(&dump)?;
            if live == want {
                Ok(format!("live transcript {}, canonical", fork::show(&live)))
            } else {
                Err(format!("the live transcript is {}, the acks' replay {}", fork::show(&live), fork::show(&want)))
            }
        });
        self.note("fork-state", state);
    }

    /// Notes `result` under `check` (its detail from `ok` when it holds)
    /// and hands it back.
    fn note_ok<T>(
        &mut self,
        check: &'static str,
        result: Result<T, String>,
        ok: impl Fn(&T) -> String,
    ) -> Result<T, ()> {
        match result {
            Ok(value) => {
                self.note(check, Ok(ok(&value)));
                Ok(value)
            }
            Err(why) => {
                self.note(check, Err(why));
                Err(())
            }
        }
    }

    /// `deliver --stop-after 3`: each obligation acked with its key, sent
    /// once, shown delivered; the dump canonical.
    fn deliver(&mut self) {
        let Some(s) = self.scratch("deliver", None) else { return };
        let wire = s.path("transport.ndjson");
        let args = s.op(Op::Deliver).acks(&s.path("acks.ndjson")).transport(&wire).stop_after(OBLIGATIONS);
        let ran = self.run_journaled(&s, &args, "deliver").and_then(|j| {
            ack_sequence(&j, "deliver", OBLIGATIONS)?;
            Ok(j.acks)
        });
        let Ok(acks) = self.note_ok("deliver", ran, |_| format!("{OBLIGATIONS} obligations acked")) else { return };
        let state = self.dump(&s, "deliver-dump").and_then(|text| {
            canonical(&text)?;
            let sent = transport::read(&wire).map_err(|e| e.to_string())?;
            let v = outbox::check(&parse_dump(&text)?, &acks, &sent);
            let keys: Vec<_> = (0..OBLIGATIONS).map(|j| format!("o{j}")).collect();
            if !v.found.is_empty() {
                Err(v.texts().join("; "))
            } else if acks.iter().map(|a| a.key.clone().unwrap_or_default()).collect::<Vec<_>>() != keys {
                Err(format!("the acks name {:?}, not {keys:?}", acks.iter().map(|a| &a.key).collect::<Vec<_>>()))
            } else {
                Ok(v.details.join("; "))
            }
        });
        self.note("deliver-state", state);
    }

    /// `catch-up` meets an obligation left attempting: with the transport
    /// holding it, it must not send it again; without, it must send it once.
    fn catch_up(&mut self) {
        for (check, arrived) in [("catch-up-arrived", true), ("catch-up-missing", false)] {
            match self.catch_up_once(arrived) {
                Ok(detail) => drop(self.note(check, Ok(detail))),
                Err(Failed::Fault(why)) => drop(self.note(check, Err(why))),
                Err(Failed::Finding(what)) => self.store_finding(check, outbox::OutboxExactlyOnce.id(), what),
            }
        }
    }

    fn catch_up_once(&mut self, arrived: bool) -> Result<String, Failed> {
        let label = if arrived { "catch-up-arrived" } else { "catch-up-missing" };
        let s = self.scratch(label, None).ok_or("no scratch folder")?;
        // A folder is a transport no send can write: the first send fails
        // after o0 was marked attempting, which is where a kill between the
        // send and its mark leaves it too.
        let folder = s.path("unwritable");
        std::fs::create_dir(&folder).map_err(|e| e.to_string())?;
        let args = s.op(Op::Deliver).acks(&s.path("acks.ndjson")).transport(&folder).stop_after(1);
        match self.run_op(&s, &args, "deliver")? {
            (Exit::Code(c), _) if c != 0 => {}
            (exit, _) => return Err(format!("deliver ended with {exit} though its send could not be written").into()),
        }
        let wire = s.path("transport.ndjson");
        if arrived {
            let line = Delivery { key: "o0".into(), payload: "effect of o0".into() };
            transport::send(&wire, &line).map_err(|e| e.to_string())?;
        }
        let (exit, tail) = self.run_op(&s, &s.op(Op::CatchUp).transport(&wire), "catch-up")?;
        expect_exit(exit, 0, &tail, "catch-up")?;
        let sent = transport::read(&wire).map_err(|e| e.to_string())?;
        let dump = parse_dump(&self.dump(&s, "catch-up-dump")?)?;
        if dump.outbox.iter().all(|o| o.key != "o0") {
            return Err("deliver's failed send left no obligation o0 in the store".into());
        }
        let v = outbox::check(&dump, &[], &sent);
        if !v.found.is_empty() {
            return Err(Failed::Finding(v.texts().join("; ")));
        }
        Ok(if arrived {
            "o0 left attempting, already in the transport: not sent again".into()
        } else {
            "o0 left attempting, not in the transport: sent once".into()
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fork_run_reaches_two_rewinds() {
        use crashcells_protocol::ForkStep;
        let mut len = 0u64;
        let mut rewinds = 0;
        for i in 0..super::FORK_OPS {
            match ForkStep::of(super::FORK_SEED, i, len) {
                ForkStep::Append => len += 1,
                ForkStep::Rewind { k } => {
                    len = k;
                    rewinds += 1;
                }
            }
        }
        assert_eq!(rewinds, 2);
    }
}
