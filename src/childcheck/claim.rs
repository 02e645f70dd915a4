//! `child-check`'s claim checks: `park`, a claimant held at the barrier
//! (it must write its ready record and wait, the handoff still pending),
//! released to win, a second claimant that loses, and one claim in the store.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use crashcells_protocol::{EXIT_LOST, EXIT_WON, Op};

use super::checker::{Checker, State};
use super::clauses::{expect_exit, parse_dump};
use crashcells_protocol::HANDOFF_SESSION as HANDOFF;

use crate::cells::consume;
use crate::harness::{Exit, Running};
use crate::probe::{Scratch, wait_first_line};

impl Checker<'_> {
    /// `park`, one claimant held at the barrier then released (WON), one
    /// more (LOST), and the store shows one claim.
    pub(super) fn claim(&mut self) {
        let Some(s) = self.scratch("claim", None) else { return };
        let parked = self.run_op(&s, &s.op(Op::Park).session(HANDOFF), "park");
        let race = ["park", "claim-barrier", "claim-exit-codes", "claim-state"];
        if let Ok((exit, _)) = &parked
            && self.unsupported(Op::Park, *exit, &race)
        {
            return;
        }
        if !self.note("park", parked.and_then(|(e, t)| expect_exit(e, 0, &t, "park"))) {
            return;
        }
        let barrier = s.path("barrier.lock");
        let held = match File::create(&barrier).and_then(|f| f.lock().map(|()| f)) {
            Ok(f) => f,
            Err(e) => {
                self.note("claim-barrier", Err(format!("barrier {}: {e}", barrier.display())));
                return;
            }
        };
        let first = self.first_claim(&s, held);
        let second = first.and_then(|()| self.claimant(&s, "r1", None));
        let second = second.and_then(|(e, t)| expect_exit(e, EXIT_LOST, &t, "a second claimant (LOST)"));
        if !self.note("claim-exit-codes", second.map(|_| "WON exits 0, LOST exits 10".into())) {
            return;
        }
        let first = self.dump(&s, "claim-dump");
        let state = first.clone().and_then(|t| parse_dump(&t)).and_then(|d| {
            let v = consume::check(&d, 1, 2, false);
            if v.found.is_empty() { Ok(v.details.join("; ")) } else { Err(v.texts().join("; ")) }
        });
        self.note("claim-state", state);
        self.states.push(State { op: "claim", scratch: s, first });
    }

    /// The first claimant waits at the held barrier (the handoff stays
    /// pending while it waits), then wins once released.
    fn first_claim(&mut self, s: &Scratch, held: File) -> Result<(), String> {
        let (exit, tail) = self.claimant(s, "r0", Some(held))?;
        expect_exit(exit, EXIT_WON, &tail, "the first claimant (WON)").map(drop)
    }

    /// Runs claimant `name`; with `held`, checks it waits at the barrier
    /// before dropping the lock.
    fn claimant(&mut self, s: &Scratch, name: &str, held: Option<File>) -> Result<(Exit, String), String> {
        let acks = s.path(&format!("acks-{name}.ndjson"));
        let args = s.op(Op::Claim).acks(&acks).session(HANDOFF).barrier(&s.path("barrier.lock")).claimant(name);
        let mut running =
            s.spawn(self.child, &args, name, self.deadline, &self.interrupt).map_err(|e| format!("claim: {e}"))?;
        if let Some(lock) = held {
            let waited = self.waits_at_barrier(s, &mut running, &acks);
            self.note("claim-barrier", waited);
            drop(lock);
        }
        let exit = running.wait_until(Instant::now() + self.deadline, &self.interrupt);
        let tail = running.stderr_tail();
        exit.map(|e| (e, tail)).map_err(|_| format!("claimant {name} did not end within {:?}", self.deadline))
    }

    fn waits_at_barrier(&self, s: &Scratch, running: &mut Running, acks: &Path) -> Result<String, String> {
        if let Some(exit) = wait_first_line(running, acks, self.deadline, &self.interrupt) {
            return Err(format!("the claimant ended ({exit}) before it wrote its ready record"));
        }
        // The driver releases the barrier only once every racer is ready: a
        // claimant that writes its ready record after taking the lock never
        // gets to race in cell 2.
        if !std::fs::read(acks).is_ok_and(|b| b.contains(&b'\n')) {
            return Err(format!(
                "no ready record within {:?} while the barrier was held: write it before waiting at the barrier",
                self.deadline
            ));
        }
        let dump = self.dump(s, "barrier-dump").and_then(|t| parse_dump(&t))?;
        let state = dump.sessions.iter().find(|x| x.id == HANDOFF).and_then(|x| x.handoff_state.clone());
        if let Some(exit) = running.try_exit() {
            return Err(format!("the claimant ended ({exit}) while the driver still held the barrier"));
        }
        match state.as_deref() {
            Some("pending") => Ok("the claimant waited at the barrier; the handoff stayed pending".into()),
            other => Err(format!("the handoff is {other:?} while the barrier is still held (expected \"pending\")")),
        }
    }
}
