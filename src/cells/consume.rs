//! Cell 2, consume-once.
//!
//! Clause: a parked handoff is claimed by exactly one of N racing processes.
//!
//! Crash model: none is needed for the clause itself; the race is real.
//! Each racer opens the store, writes its ready record, and blocks on a
//! shared lock of a barrier file the driver holds exclusively; dropping the
//! driver's lock releases all of them at once. Each exits 0 (WON) or 10
//! (LOST); any other end is an `error`, never a loss. Under syscall kills,
//! racer r0 is killed at the entry of its Nth file-mutating call on its
//! winning or its losing claim while the others wait or race: then at most
//! one racer wins, a WON has its claim in the store, r0's claim may or may
//! not have landed, and the handoff is still claimed exactly once.

use crashcells_protocol::{Dump, EXIT_WON, HANDOFF_SESSION as HANDOFF};

use super::{Cell, End, MissingParam, Process, RaceShape, Seen, Shape, Violations, need};
use crate::catalog::Params;

pub struct ConsumeOnce;

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &["winners", "claims", "won-without-claim", "state-mismatch"];

impl Cell for ConsumeOnce {
    fn id(&self) -> &'static str {
        "consume-once"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Ok(Shape::Race(RaceShape { racers: need(params.racers, "racers")? }))
    }

    fn check(&self, seen: &Seen) -> Violations {
        let killed = seen.processes.iter().any(|p| p.end == End::Killed);
        check(seen.dump, won(seen.processes), seen.processes.len(), killed)
    }

    /// A race reports how many racers won.
    fn acked(&self, processes: &[Process]) -> u64 {
        u64::from(won(processes))
    }

    /// One claim is about who holds the handoff, not about a commit
    /// surviving; the audit's crash columns sweep workloads only.
    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn answers_durability(&self) -> bool {
        false
    }
}

fn won(processes: &[Process]) -> u32 {
    processes.iter().filter(|p| p.end == End::Exited(EXIT_WON)).count() as u32
}

/// The claims the store shows: the winner's `claimed by` messages in the
/// handoff session, and the handoff's state.
fn claims(dump: &Dump) -> (usize, Option<String>) {
    let claims = dump.messages_of(HANDOFF).filter(|m| m.content.starts_with("claimed by")).count();
    (claims, dump.session(HANDOFF).and_then(|s| s.handoff_state.clone()))
}

/// Without a kill, exactly one racer wins and the store shows exactly one
/// claim. With racer r0 killed, at most one wins and a WON has its claim (it
/// committed before it exited); and when other racers claimed after or
/// beside it, the store still shows exactly one claim: r0's, if it landed
/// before the kill, else the winner's. A handoff that nobody holds after a
/// crash is lost. In every case the handoff's state agrees with the claims.
pub fn check(dump: &Dump, won: u32, racers: usize, killed: bool) -> Violations {
    let mut v = Violations::default();
    let (claims, state) = claims(dump);
    let shown = state.as_deref().unwrap_or("none");
    let kill = if killed { ", r0 killed" } else { "" };
    v.details
        .push(format!("{racers} racers{kill}: {won} WON; the store shows {claims} claim(s), handoff state {shown}"));
    match killed {
        false if won != 1 => v.fire("winners", format!("{won} of {racers} racers won the handoff (exactly one must)")),
        true if won > 1 => v.fire("winners", format!("{won} racers won the handoff (at most one may)")),
        _ => {}
    }
    if claims > 1 || (claims == 0 && (!killed || racers > 1)) {
        v.fire("claims", format!("the store shows the handoff claimed {claims} times"));
    }
    if won == 1 && claims == 0 && killed {
        v.fire("won-without-claim", "a racer reported WON but the store shows no claim");
    }
    let expected = if claims == 0 { "pending" } else { "running" };
    if state.as_deref() != Some(expected) {
        v.fire("state-mismatch", format!("the handoff's state is {shown} with {claims} claim(s), not {expected}"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::{DumpMessage, DumpSession};
    use crate::cells::declared;

    /// The cell's check, every kind it finds one it declares.
    fn check(dump: &Dump, won: u32, racers: usize, killed: bool) -> Violations {
        declared(KINDS, super::check(dump, won, racers, killed))
    }

    fn dump(claims: usize, state: &str) -> Dump {
        let session = DumpSession { handoff_state: Some(state.into()), ..DumpSession::new(HANDOFF, claims as i64) };
        let claim = |i| DumpMessage::new(HANDOFF, "system", &format!("claimed by r{i}"));
        Dump { sessions: vec![session], messages: (0..claims).map(claim).collect(), ..Dump::empty(1, "ok".into()) }
    }

    #[test]
    fn one_winner_and_one_claim_pass() {
        assert!(check(&dump(1, "running"), 1, 8, false).found.is_empty());
    }

    #[test]
    fn two_winners_or_two_claims_fire() {
        let v = check(&dump(2, "running"), 2, 8, false);
        assert_eq!(
            v.texts(),
            ["2 of 8 racers won the handoff (exactly one must)", "the store shows the handoff claimed 2 times"]
        );
    }

    #[test]
    fn a_lone_killed_racer_may_leave_the_handoff_pending_but_a_won_needs_its_claim() {
        assert!(check(&dump(0, "pending"), 0, 1, true).found.is_empty());
        assert!(check(&dump(1, "running"), 0, 8, true).found.is_empty(), "r0's claim landed before the kill");
        let v = check(&dump(0, "pending"), 1, 8, true);
        assert_eq!(
            v.texts(),
            ["the store shows the handoff claimed 0 times", "a racer reported WON but the store shows no claim"]
        );
    }

    #[test]
    fn a_claim_torn_by_the_kill_that_nobody_can_take_again_fires() {
        // split-claim: r0 set the state in one transaction and was killed
        // before the one that records its claim; the others all lost.
        let v = check(&dump(0, "running"), 0, 8, true);
        assert_eq!(
            v.texts(),
            [
                "the store shows the handoff claimed 0 times",
                "the handoff's state is running with 0 claim(s), not pending"
            ]
        );
    }

    #[test]
    fn a_state_that_disagrees_with_the_claims_fires() {
        let v = check(&dump(1, "pending"), 1, 8, false);
        assert_eq!(v.texts(), ["the handoff's state is pending with 1 claim(s), not running"]);
    }
}
