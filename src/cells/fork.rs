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
//! least the window of acks (40) is reached, or at every syscall point of a
//! sweep of `sweep_ops` operations (20) whose rewinds cut to the start, the
//! middle and the end of the transcript ([`sweep_seed`]).

use crashcells_protocol::{APPEND_SESSION, Ack, Dump, ForkStep, Op};

use super::{Cell, MissingParam, Seen, Shape, Violations};
use crate::catalog::Params;

/// A transcript longer than this is shown by its ends.
const SHOWN: usize = 8;

pub struct ForkDeterminism;

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &["ambiguous-branch", "unexpected-ack", "not-the-chosen-prefix"];

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

    fn sweep_seed(&self, seed: u64, ops: u64) -> u64 {
        sweep_seed(seed, ops)
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    /// A rewind's atomicity is not about acknowledged commits surviving:
    /// the cells whose clause is that answer the audit's durability question.
    fn answers_durability(&self) -> bool {
        false
    }
}

/// Where a rewind cuts a live transcript of `len` messages: the shapes a
/// rewind takes, which a sweep must show whatever the seed (a store may
/// tear a rewind only where it keeps some messages, or only where it keeps
/// all it can).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// `k = 0`: nothing kept.
    Start,
    /// `0 < k < len - 2`.
    Middle,
    /// `k = len - 2`: the longest prefix the rule keeps (it always cuts two).
    End,
}

impl Cut {
    const ALL: [Cut; 3] = [Cut::Start, Cut::Middle, Cut::End];

    fn of(k: u64, len: u64) -> Cut {
        match k {
            0 => Cut::Start,
            k if k + 2 == len => Cut::End,
            _ => Cut::Middle,
        }
    }
}

/// The cuts of the rewinds among the first `ops` operations of `fork --seed
/// seed`, in order.
pub fn cuts(seed: u64, ops: u64) -> Vec<Cut> {
    let mut len = 0;
    let mut cuts = Vec::new();
    for i in 0..ops {
        match ForkStep::of(seed, i, len) {
            ForkStep::Append => len += 1,
            ForkStep::Rewind { k } => {
                cuts.push(Cut::of(k, len));
                len = k;
            }
        }
    }
    cuts
}

/// How far [`sweep_seed`] looks: the seeds that show every cut within 20
/// operations recur every 12 (seed = 2 mod 12: cuts end, start, end, end,
/// middle), so 64 always finds one.
const SEARCH: u64 = 64;

/// A sweep's workload seed: the first of `seed, seed + 1, ...` (at most
/// [`SEARCH`] of them) whose first `ops` operations rewind to the start,
/// the middle and the end, by the rule itself ([`cuts`]); where `ops` is
/// too short for all three, the first that shows the most. The rule keeps
/// nothing at every rewind for an odd seed, and needs five rewinds (20
/// operations) to show all three cuts from any seed, so a seed as drawn
/// often showed one.
pub fn sweep_seed(seed: u64, ops: u64) -> u64 {
    let shown = |s: u64| {
        let cuts = cuts(s, ops);
        Cut::ALL.iter().filter(|c| cuts.contains(c)).count()
    };
    let candidates = (0..SEARCH).map(|j| seed.wrapping_add(j));
    let mut best = (0, seed);
    for s in candidates {
        let n = shown(s);
        if n == Cut::ALL.len() {
            return s;
        }
        if n > best.0 {
            best = (n, s);
        }
    }
    best.1
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
    use crate::cells::declared;

    /// The cell's check, every kind it finds one it declares.
    fn check(dump: &Dump, acks: &[Ack], seed: u64) -> Violations {
        declared(KINDS, super::check(dump, acks, seed))
    }

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
    fn cuts_follow_the_rule_and_an_odd_seed_keeps_nothing_at_every_rewind() {
        assert_eq!(cuts(SEED, 8), [Cut::End, Cut::Start], "seed 8: keep 1 of 3, then 0 of 3");
        assert_eq!(cuts(2, 20), [Cut::End, Cut::Start, Cut::End, Cut::End, Cut::Middle]);
        assert!(cuts(9, 40).iter().all(|&c| c == Cut::Start));
    }

    /// A sweep of 20 operations shows every cut from any derived seed, and
    /// the seed it runs is found from the derived one alone; 4 operations
    /// (one rewind) show the one cut they can.
    #[test]
    fn a_sweep_seed_shows_every_cut_whatever_the_seed() {
        for seed in (0..500).chain([u64::MAX - 3, 0x569c_852b_7138_3361]) {
            let s = sweep_seed(seed, 20);
            assert_eq!(s, sweep_seed(seed, 20), "deterministic");
            let shown = cuts(s, 20);
            assert!(Cut::ALL.iter().all(|c| shown.contains(c)), "seed {seed} -> {s}: {shown:?}");
            assert_eq!(cuts(sweep_seed(seed, 4), 4).len(), 1);
        }
        assert_eq!(sweep_seed(2, 20), 2, "a seed that shows every cut is kept");
        assert_eq!(sweep_seed(1, 20), 2, "an odd seed keeps nothing: the next that shows all");
    }

    #[test]
    fn long_transcripts_are_shown_by_their_ends() {
        let t: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
        assert_eq!(show(&t), "m0 m1 m2 ... m17 m18 m19 (20)");
    }
}
