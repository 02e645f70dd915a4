//! Cell 1, prefix durability.
//!
//! Clause: every acknowledged append survives a hard crash; the recovered
//! transcript is a contiguous prefix m0..m(n-1) with no holes and no
//! duplicates; where the store reports its own order (`position`), that
//! order has no duplicate and no hole either; recovery is deterministic;
//! the file's integrity is ok.
//!
//! Crash model: the child appends `m0, m1, ...` to one session, one
//! transaction each, and acks each after it committed; it is killed once at
//! least the window of acks (200) is reached.

use crashcells_protocol::{APPEND_SESSION, Ack, Dump, Op};

use super::{Cell, MissingParam, Seen, Shape, Violations, plural, positions};
use crate::catalog::Params;

pub struct PrefixDurability;

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &[
    "not-an-append",
    "hole",
    "duplicate",
    "lost-ack",
    "count-mismatch",
    positions::DUPLICATE,
    positions::HOLE,
    positions::ORDER,
    positions::MISSING,
];

impl Cell for PrefixDurability {
    fn id(&self) -> &'static str {
        "prefix-durability"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Shape::workload(Op::Append, params, None)
    }

    fn check(&self, seen: &Seen) -> Violations {
        check(seen.dump, &seen.acks().cloned().collect::<Vec<_>>())
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn answers_durability(&self) -> bool {
        true
    }
}

/// The indices of the recovered appends, in recovery order; `Err` names a
/// message that is not an append's.
fn indices(dump: &Dump) -> Result<Vec<u64>, String> {
    dump.messages
        .iter()
        .filter(|m| m.session_id == APPEND_SESSION)
        .map(|m| m.content.strip_prefix('m').and_then(|i| i.parse().ok()).ok_or_else(|| m.content.clone()))
        .collect()
}

pub fn check(dump: &Dump, acks: &[Ack]) -> Violations {
    let mut v = Violations::default();
    let recovered = match indices(dump) {
        Ok(i) => i,
        Err(content) => {
            v.fire("not-an-append", format!("recovered a message that is no append: {content:?}"));
            return v;
        }
    };
    let n = recovered.len() as u64;
    let acked = acks.iter().map(|a| a.i + 1).max().unwrap_or(0);
    let appends = |n: u64| format!("{n} {}", plural(n as usize, "append", "appends"));
    v.details.push(format!("acked m0..m{} ({}); recovered {}", acked.saturating_sub(1), appends(acked), appends(n)));
    if let Some((pos, &i)) = recovered.iter().enumerate().find(|&(pos, &i)| i != pos as u64) {
        let (kind, what) = if recovered[..pos].contains(&i) { ("duplicate", "a duplicate") } else { ("hole", "a hole") };
        v.fire(kind, format!("the transcript is not a contiguous prefix: {what} at position {pos} (found m{i})"));
    }
    if let Some(missing) = acks.iter().map(|a| a.i).find(|i| !recovered.contains(i)) {
        v.details.push(format!("first missing acked index: m{missing}"));
        v.fire("lost-ack", format!("acked append m{missing} was lost (acked {acked}, recovered {n})"));
    }
    let count = dump.sessions.iter().find(|s| s.id == APPEND_SESSION).map_or(0, |s| s.message_count);
    if count != n as i64 {
        v.fire("count-mismatch", format!("message_count is {count} but {n} messages were recovered"));
    }
    positions::check(APPEND_SESSION, &dump.messages_of(APPEND_SESSION).collect::<Vec<_>>(), &mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::{DumpMessage, DumpSession};
    use crate::cells::declared;

    /// The cell's check, every kind it finds one it declares.
    fn check(dump: &Dump, acks: &[Ack]) -> Violations {
        declared(KINDS, super::check(dump, acks))
    }

    fn dump(contents: &[&str], count: i64) -> Dump {
        Dump {
            sessions: vec![DumpSession::new("main", count)],
            messages: contents.iter().map(|c| DumpMessage::new("main", "user", c)).collect(),
            ..Dump::empty(1, "ok".into())
        }
    }

    fn acks(n: u64) -> Vec<Ack> {
        (0..n).map(|i| Ack::of("append", i)).collect()
    }

    #[test]
    fn a_prefix_longer_than_the_acks_passes() {
        assert!(check(&dump(&["m0", "m1", "m2"], 3), &acks(2)).found.is_empty());
    }

    #[test]
    fn a_lost_ack_fires() {
        let v = check(&dump(&["m0"], 1), &acks(2));
        assert_eq!(v.texts(), ["acked append m1 was lost (acked 2, recovered 1)"]);
        assert_eq!(v.found[0].kind, "lost-ack");
    }

    #[test]
    fn holes_and_duplicates_fire() {
        assert!(check(&dump(&["m0", "m2"], 2), &acks(0)).texts()[0].contains("a hole at position 1"));
        assert!(check(&dump(&["m0", "m0"], 2), &acks(0)).texts()[0].contains("a duplicate at position 1"));
    }

    /// Contents that look whole but two rows at one place in the store's
    /// own order: only `position` shows it.
    #[test]
    fn a_duplicate_store_position_fires_and_no_position_is_said() {
        let mut d = dump(&["m0", "m1"], 2);
        for (m, p) in d.messages.iter_mut().zip([0, 0]) {
            m.position = Some(p);
        }
        let v = check(&d, &acks(2));
        assert_eq!(v.found.iter().map(|f| f.kind).collect::<Vec<_>>(), [positions::DUPLICATE]);
        let plain = check(&dump(&["m0", "m1"], 2), &acks(2));
        assert!(plain.found.is_empty() && plain.details.iter().any(|d| d.contains("no message positions")));
    }

    #[test]
    fn a_wrong_count_fires() {
        assert!(check(&dump(&["m0"], 2), &acks(1)).texts()[0].contains("message_count is 2"));
    }
}
