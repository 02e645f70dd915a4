//! Cell 4, fork determinism.
//!
//! Clause: after a fork on edit or rewind, recovery yields exactly the
//! chosen prefix: the live transcript of `main` is the replay of the acked
//! operations (every acked rewind applied, every acked append present,
//! nothing from before an acked rewind's cut visible), or that replay with
//! the operation in flight at the kill applied whole; never anything else.
//!
//! Crash model: the child runs `fork --seed S`: operation `i` appends `m<i>`,
//! or, every fourth, rewinds the live transcript to its first `k` messages
//! (`ForkStep::of`, a function of the seed, `i` and the live length, so the
//! driver knows the operation in flight without being told). Each operation
//! is one transaction, acked after it committed; the child is killed once at
//! least the window of acks (40) is reached, or at a syscall point of its
//! first rewind.

use crashcells_protocol::{APPEND_SESSION, Ack, Dump, ForkStep, Op};

use super::{Cell, MissingParam, Seen, Shape, Violations};
use crate::catalog::Params;

/// A transcript longer than this is shown by its ends.
const SHOWN: usize = 8;

pub struct ForkDeterminism;

impl Cell for ForkDeterminism {
    fn id(&self) -> &'static str {
        "fork-determinism"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Shape::workload(Op::Fork, params, None)
    }

    fn check(&self, seen: &Seen) -> Violations {
        check(seen.dump, &seen.acks().cloned().collect::<Vec<_>>(), seen.seed)
    }

    /// A rewind's atomicity is not about acknowledged commits surviving:
    /// cells 1 and 3 answer the audit's durability question.
    fn answers_durability(&self) -> bool {
        false
    }
}

/// Applies operation `i` to a transcript.
fn apply(transcript: &mut Vec<String>, i: u64, step: ForkStep) {
    match step {
        ForkStep::Append => transcript.push(format!("m{i}")),
        ForkStep::Rewind { k } => transcript.truncate(k as usize),
    }
}

fn describe_step(i: u64, step: ForkStep) -> String {
    match step {
        ForkStep::Append => format!("operation {i}, append m{i}"),
        ForkStep::Rewind { k } => format!("operation {i}, rewind to {k}"),
    }
}

/// A transcript for a reader: its messages (its ends, when long) and length.
pub fn show<S: AsRef<str>>(t: &[S]) -> String {
    let words = |s: &[S]| s.iter().map(|m| m.as_ref()).collect::<Vec<_>>().join(" ");
    let n = t.len();
    match n {
        0 => "(empty)".into(),
        _ if n <= SHOWN => format!("{} ({n})", words(t)),
        _ => format!("{} ... {} ({n})", words(&t[..3]), words(&t[n - 3..])),
    }
}

/// Whether ack `n` is operation `n` as the workload's rule has it.
fn agrees(ack: &Ack, n: u64, step: ForkStep) -> Result<(), String> {
    let fine = ack.i == n
        && match step {
            ForkStep::Append => ack.op == "append",
            ForkStep::Rewind { k } => ack.op == "rewind" && ack.k == Some(k),
        };
    if fine {
        Ok(())
    } else {
        let k = ack.k.map_or(String::new(), |k| format!(" to {k}"));
        Err(format!("ack {n} says {} {}{k}, but the seeded workload's {}", ack.op, ack.i, describe_step(n, step)))
    }
}

/// The transcript the acked operations give, replayed in order, and how
/// many of them were rewinds; `Err` names an ack that is not the operation
/// the seeded rule gives.
pub fn replay(seed: u64, acks: &[Ack]) -> Result<(Vec<String>, u32), String> {
    let mut transcript: Vec<String> = Vec::new();
    let mut rewinds = 0;
    for (n, ack) in (0..).zip(acks) {
        let step = ForkStep::of(seed, n, transcript.len() as u64);
        agrees(ack, n, step)?;
        rewinds += u32::from(step != ForkStep::Append);
        apply(&mut transcript, n, step);
    }
    Ok((transcript, rewinds))
}

/// The contents of the live transcript of `main`.
pub fn live(dump: &Dump) -> Result<Vec<&str>, String> {
    let messages = dump.live_transcript(APPEND_SESSION).map_err(|e| e.to_string())?;
    Ok(messages.iter().map(|m| m.content.as_str()).collect())
}

pub fn check(dump: &Dump, acks: &[Ack], seed: u64) -> Violations {
    let mut v = Violations::default();
    let live = match live(dump) {
        Ok(live) => live,
        Err(why) => {
            v.fire("ambiguous-branch", why);
            return v;
        }
    };
    let (acked, rewinds) = match replay(seed, acks) {
        Ok(replayed) => replayed,
        Err(why) => {
            v.fire("unexpected-ack", why);
            return v;
        }
    };
    let n = acks.len() as u64;
    let next = ForkStep::of(seed, n, acked.len() as u64);
    let mut applied = acked.clone();
    apply(&mut applied, n, next);
    v.details.push(format!(
        "seed {seed}: acked {n} operations ({rewinds} rewinds), giving {}; in flight: {}, giving {}; recovered {}",
        show(&acked),
        describe_step(n, next),
        show(&applied),
        show(&live)
    ));
    if live != acked && live != applied {
        v.fire("not-the-chosen-prefix", format!(
            "the live transcript of {APPEND_SESSION} is {}, neither the acked operations' {} nor {} with {} applied",
            show(&live),
            show(&acked),
            show(&applied),
            describe_step(n, next)
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::{DumpMessage, DumpSession};

    /// Seed 8: operation 3 rewinds 3 messages to 1 (k = (8 + 3) mod 2).
    const SEED: u64 = 8;

    fn dump(contents: &[&str]) -> Dump {
        Dump {
            sessions: vec![DumpSession::new("main", contents.len() as i64)],
            messages: contents.iter().map(|c| DumpMessage::new("main", "user", c)).collect(),
            ..Dump::empty(2, "ok".into())
        }
    }

    fn acks(n: u64) -> Vec<Ack> {
        (0..n).map(|i| if i == 3 { Ack::rewind(3, 1) } else { Ack::of("append", i) }).collect()
    }

    #[test]
    fn the_acked_replay_or_the_one_in_flight_applied_pass() {
        assert!(check(&dump(&["m0", "m1", "m2"]), &acks(3), SEED).found.is_empty(), "rewind 3 not applied");
        assert!(check(&dump(&["m0"]), &acks(3), SEED).found.is_empty(), "rewind 3 applied whole");
        assert!(check(&dump(&["m0", "m4"]), &acks(4), SEED).found.is_empty(), "append 4 applied");
        assert!(check(&Dump::empty(2, "ok".into()), &acks(0), SEED).found.is_empty(), "killed before any");
    }

    #[test]
    fn a_torn_rewind_fires() {
        let mut d = dump(&["m0", "m1", "m2"]);
        d.messages[2].active = false;
        let v = check(&d, &acks(3), SEED);
        assert_eq!(
            v.texts(),
            ["the live transcript of main is m0 m1 (2), neither the acked operations' m0 m1 m2 (3) nor m0 (1) \
              with operation 3, rewind to 1 applied"]
        );
    }

    #[test]
    fn a_lost_rewind_or_a_lost_append_fires() {
        assert!(!check(&dump(&["m0", "m1", "m2"]), &acks(4), SEED).found.is_empty(), "acked rewind undone");
        assert!(!check(&dump(&["m0"]), &acks(5), SEED).found.is_empty(), "acked append m4 lost");
    }

    #[test]
    fn a_branch_is_followed_to_the_live_head() {
        let mut d = dump(&["m0", "m1", "m2"]);
        d.sessions.push(DumpSession { branch_of: Some("main".into()), ..DumpSession::new("main.3", 1) });
        d.messages.push(DumpMessage::new("main.3", "user", "m0"));
        assert!(check(&d, &acks(4), SEED).found.is_empty());
        d.sessions.push(DumpSession { branch_of: Some("main".into()), ..DumpSession::new("main.x", 0) });
        assert!(check(&d, &acks(4), SEED).texts()[0].contains("ambiguous"));
    }

    #[test]
    fn an_ack_the_rule_does_not_give_fires() {
        let mut a = acks(4);
        a[3] = Ack::rewind(3, 0);
        let v = check(&dump(&[]), &a, SEED);
        assert_eq!(v.texts(), ["ack 3 says rewind 3 to 0, but the seeded workload's operation 3, rewind to 1"]);
    }

    #[test]
    fn long_transcripts_are_shown_by_their_ends() {
        let t: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        assert_eq!(show(&t), "m0 m1 m2 ... m17 m18 m19 (20)");
    }
}
