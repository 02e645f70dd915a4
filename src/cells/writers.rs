//! Cell 6, concurrent appends: several writers on one session.
//!
//! Clause: every acknowledged append of every writer survives exactly once;
//! each writer's messages keep its order; the session's positions (the
//! store's own order, docs/PROTOCOL.md §4) are unique and contiguous;
//! `message_count` counts them; recovery is deterministic; integrity ok.
//!
//! Crash model: writers `r0`, `r1`, ... each run `co-append` on session
//! `main`, appending `<writer>-m0, <writer>-m1, ...`, one transaction each,
//! and ack each after its commit. Writer r0 is killed (a timed kill among
//! the others, or at each of its syscall points before the others go on);
//! the others run to their end. Under the reads-first schedule r0 is held
//! at its first write while the others read their next position, so a
//! store that reads it outside its write transaction shows a duplicate
//! whatever the machine's load.

use std::collections::HashMap;

use crashcells_protocol::{APPEND_SESSION as MAIN, Dump, DumpMessage};

use super::{Cell, MissingParam, Process, Seen, Shape, Violations, WritersShape, need, plural, positions};
use crate::catalog::Params;

pub struct ConcurrentAppends;

/// A recovered message of `main` that is no writer's append.
const NOT_AN_APPEND: &str = "not-an-append";
/// An acknowledged append that is not in the store.
const LOST_ACK: &str = "lost-ack";
/// One writer's append in the store twice.
const DUPLICATE: &str = "duplicate";
/// A writer's appends out of the order it made them.
const OUT_OF_ORDER: &str = "out-of-order";
/// A writer's append missing below one of its later appends.
const HOLE: &str = "hole";
/// `message_count` not the number of messages recovered.
const COUNT_MISMATCH: &str = "count-mismatch";

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &[
    NOT_AN_APPEND,
    LOST_ACK,
    DUPLICATE,
    OUT_OF_ORDER,
    HOLE,
    COUNT_MISMATCH,
    positions::DUPLICATE,
    positions::HOLE,
    positions::ORDER,
    positions::MISSING,
];

impl Cell for ConcurrentAppends {
    fn id(&self) -> &'static str {
        "concurrent-appends"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Ok(Shape::Writers(WritersShape {
            writers: need(params.racers, "racers")?,
            appends: need(params.appends, "appends")?,
            window: need(params.window, "window")?,
            sweep_appends: need(params.sweep_ops, "sweep_ops")?,
        }))
    }

    fn check(&self, seen: &Seen) -> Violations {
        check(seen.dump, seen.processes)
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    /// Its clause is about concurrent writers, under process crashes;
    /// whether a journal mode keeps an acknowledged commit is cell 1's
    /// question, which the audit's crash columns ask.
    fn answers_durability(&self) -> bool {
        false
    }
}

/// Each writer's recovered indices, in commit order; `Err` names a message
/// of `main` that is no writer's append.
fn by_writer<'a>(messages: &[&'a DumpMessage], names: &[&str]) -> Result<HashMap<&'a str, Vec<u64>>, String> {
    let mut got: HashMap<&str, Vec<u64>> = HashMap::new();
    for m in messages {
        let parsed = m.content.rsplit_once("-m").and_then(|(w, i)| Some((w, i.parse::<u64>().ok()?)));
        match parsed {
            Some((w, i)) if names.contains(&w) => got.entry(w).or_default().push(i),
            _ => return Err(m.content.clone()),
        }
    }
    Ok(got)
}

pub fn check(dump: &Dump, processes: &[Process]) -> Violations {
    let mut v = Violations::default();
    let messages: Vec<&DumpMessage> = dump.messages_of(MAIN).collect();
    let names: Vec<&str> = processes.iter().map(|p| p.name.as_str()).collect();
    let got = match by_writer(&messages, &names) {
        Ok(got) => got,
        Err(content) => {
            v.fire(NOT_AN_APPEND, format!("recovered a message of `{MAIN}` that is no writer's append: {content:?}"));
            return v;
        }
    };
    for p in processes {
        writer(p, got.get(p.name.as_str()).map_or(&[][..], Vec::as_slice), &mut v);
    }
    let count = dump.session(MAIN).map_or(0, |s| s.message_count);
    if count != messages.len() as i64 {
        v.fire(COUNT_MISMATCH, format!("message_count is {count} but {} messages were recovered", messages.len()));
    }
    positions::check(MAIN, &messages, &mut v);
    v
}

/// One writer's appends: `recovered` (its indices in commit order) against
/// its acks.
fn writer(p: &Process, recovered: &[u64], v: &mut Violations) {
    let w = &p.name;
    let acked = p.acks.iter().map(|a| a.i + 1).max().unwrap_or(0);
    let n = |k: u64| format!("{k} {}", plural(k as usize, "append", "appends"));
    v.details.push(format!("{w}: acked {}; recovered {}", n(acked), n(recovered.len() as u64)));
    if let Some(at) = (1..recovered.len()).find(|&k| recovered[..k].contains(&recovered[k])) {
        v.fire(DUPLICATE, format!("{w}'s append {w}-m{} is in the store twice", recovered[at]));
    } else if let Some(at) = (1..recovered.len()).find(|&k| recovered[k] < recovered[k - 1]) {
        let (a, b) = (recovered[at - 1], recovered[at]);
        v.fire(OUT_OF_ORDER, format!("{w}'s appends are out of order: {w}-m{b} committed after {w}-m{a}"));
    } else if let Some(at) = (0..recovered.len()).find(|&k| recovered[k] != k as u64) {
        v.fire(HOLE, format!("{w}'s appends have a hole: {w}-m{at} is missing below {w}-m{}", recovered[at]));
    }
    if let Some(i) = p.acks.iter().map(|a| a.i).find(|i| !recovered.contains(i)) {
        v.fire(LOST_ACK, format!("acked append {w}-m{i} was lost ({w} acked {}, recovered {})", acked, recovered.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::{End, declared};
    use crashcells_protocol::{Ack, DumpSession};

    fn check(dump: &Dump, processes: &[Process]) -> Violations {
        declared(KINDS, super::check(dump, processes))
    }

    /// `main` holding `contents` in commit order, at `positions` if given.
    fn dump(contents: &[&str], positions: Option<&[i64]>) -> Dump {
        let mut messages: Vec<DumpMessage> = contents.iter().map(|c| DumpMessage::new(MAIN, "user", c)).collect();
        if let Some(ps) = positions {
            messages.iter_mut().zip(ps).for_each(|(m, &p)| m.position = Some(p));
        }
        Dump {
            sessions: vec![DumpSession::new(MAIN, contents.len() as i64)],
            messages,
            ..Dump::empty(2, "ok".into())
        }
    }

    fn writer(name: &str, acked: u64, end: End) -> Process {
        Process { name: name.into(), acks: (0..acked).map(|i| Ack::of("co-append", i)).collect(), end }
    }

    fn two(a: u64, b: u64) -> Vec<Process> {
        vec![writer("r0", a, End::Killed), writer("r1", b, End::Exited(0))]
    }

    fn kinds(v: &Violations) -> Vec<&str> {
        v.found.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn interleaved_writers_each_in_order_pass_with_an_unacked_append_more() {
        let d = dump(&["r0-m0", "r1-m0", "r1-m1", "r0-m1", "r0-m2"], Some(&[0, 1, 2, 3, 4]));
        let v = check(&d, &two(2, 2));
        assert!(v.found.is_empty(), "{:?}", v.texts());
        assert_eq!(v.details[0], "r0: acked 2 appends; recovered 3 appends");
    }

    #[test]
    fn a_lost_ack_a_duplicate_a_hole_and_disorder_fire() {
        assert_eq!(kinds(&check(&dump(&["r1-m0", "r1-m1"], None), &two(1, 2))), [LOST_ACK]);
        assert_eq!(kinds(&check(&dump(&["r0-m0", "r0-m0", "r1-m0"], None), &two(1, 1))), [DUPLICATE]);
        assert_eq!(kinds(&check(&dump(&["r0-m1", "r1-m0"], None), &two(0, 1))), [HOLE]);
        assert_eq!(kinds(&check(&dump(&["r0-m1", "r0-m0", "r1-m0"], None), &two(2, 1))), [OUT_OF_ORDER]);
    }

    /// What the mutant leaves: every append once, in order, but two at one
    /// position; only the store's own order shows it.
    #[test]
    fn two_appends_at_one_position_fire_though_the_contents_are_whole() {
        let d = dump(&["r0-m0", "r1-m0", "r1-m1"], Some(&[0, 0, 1]));
        let v = check(&d, &two(1, 2));
        assert_eq!(kinds(&v), [positions::DUPLICATE]);
    }

    #[test]
    fn a_message_of_no_writer_fires_and_a_wrong_count_fires() {
        assert_eq!(kinds(&check(&dump(&["m0"], None), &two(0, 0))), [NOT_AN_APPEND]);
        assert_eq!(kinds(&check(&dump(&["r2-m0"], None), &two(0, 0))), [NOT_AN_APPEND]);
        let mut d = dump(&["r0-m0"], None);
        d.sessions[0].message_count = 2;
        assert_eq!(kinds(&check(&d, &two(1, 0))), [COUNT_MISMATCH]);
    }
}
