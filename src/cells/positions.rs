//! The store's own order of a session (docs/PROTOCOL.md §4, a message's
//! optional `position`): the judge of cells 1 and 6 reads it, so that two
//! messages at one place, or a place skipped, show though the contents
//! look whole.
//!
//! Crash model: none of its own; it reads what recovery printed. Clause: a
//! session's positions, in dump (commit) order, go up by one each: no
//! duplicate, no hole, none out of order. A store that reports no position
//! is judged on commit order alone, and the result says so.

use crashcells_protocol::DumpMessage;

use super::Violations;

/// Two messages of the session at one position.
pub const DUPLICATE: &str = "duplicate-position";
/// A position skipped between two messages.
pub const HOLE: &str = "position-hole";
/// A position below one already seen, in commit order.
pub const ORDER: &str = "position-order";
/// Some messages of the session carry a position and others do not.
pub const MISSING: &str = "position-missing";

/// Every kind [`check`] finds.
pub const KINDS: &[&str] = &[DUPLICATE, HOLE, ORDER, MISSING];

/// Checks the positions of `session`'s `messages` (dump order) into `v`;
/// a session none of whose messages has one is noted in the details.
pub fn check(session: &str, messages: &[&DumpMessage], v: &mut Violations) {
    let positions: Vec<i64> = messages.iter().filter_map(|m| m.position).collect();
    if positions.is_empty() {
        if !messages.is_empty() {
            v.details.push(format!(
                "the store reports no message positions: `{session}` judged on commit order alone \
                 (docs/PROTOCOL.md §4, `position`)"
            ));
        }
        return;
    }
    if positions.len() < messages.len() {
        let n = messages.len() - positions.len();
        v.fire(MISSING, format!("{n} of {} messages of `{session}` carry no position", messages.len()));
        return;
    }
    if let Some(found) = first_break(&positions) {
        v.fire(found.0, format!("the store's order of `{session}` is broken: {}", found.1));
    }
}

/// The first place where `positions` (commit order) do not go up by one.
fn first_break(positions: &[i64]) -> Option<(&'static str, String)> {
    for (at, pair) in positions.windows(2).enumerate() {
        let (before, now) = (pair[0], pair[1]);
        if now == before + 1 {
            continue;
        }
        let at = at + 1;
        return Some(if positions[..at].contains(&now) {
            (DUPLICATE, format!("message {at} in commit order is at position {now}, as an earlier one is"))
        } else if now < before {
            (ORDER, format!("message {at} in commit order is at position {now}, after position {before}"))
        } else {
            (HOLE, format!("no message at position {} (message {at} in commit order is at {now})", before + 1))
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(positions: &[Option<i64>]) -> Violations {
        let ms: Vec<DumpMessage> = positions
            .iter()
            .map(|&position| DumpMessage { position, ..DumpMessage::new("main", "user", "m") })
            .collect();
        let refs: Vec<&DumpMessage> = ms.iter().collect();
        let mut v = Violations::default();
        check("main", &refs, &mut v);
        v
    }

    fn kinds(v: &Violations) -> Vec<&str> {
        v.found.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn positions_that_go_up_by_one_pass_from_any_start() {
        assert!(at(&[Some(0), Some(1), Some(2)]).found.is_empty());
        assert!(at(&[Some(1), Some(2)]).found.is_empty());
        assert!(at(&[]).details.is_empty(), "no message, nothing to say");
    }

    #[test]
    fn a_duplicate_a_hole_and_a_step_back_are_each_named() {
        let dup = at(&[Some(0), Some(1), Some(1), Some(2)]);
        assert_eq!(kinds(&dup), [DUPLICATE]);
        assert!(dup.texts()[0].contains("message 2 in commit order is at position 1"), "{:?}", dup.texts());
        assert_eq!(kinds(&at(&[Some(0), Some(2)])), [HOLE]);
        assert!(at(&[Some(0), Some(2)]).texts()[0].contains("no message at position 1"));
        assert_eq!(kinds(&at(&[Some(1), Some(2), Some(0)])), [ORDER]);
        assert_eq!(kinds(&at(&[Some(0), Some(1), Some(0)])), [DUPLICATE]);
    }

    #[test]
    fn no_position_is_judged_as_before_and_said_some_missing_fires() {
        let none = at(&[None, None]);
        assert!(none.found.is_empty());
        assert!(none.details[0].contains("reports no message positions"), "{:?}", none.details);
        assert_eq!(kinds(&at(&[Some(0), None])), [MISSING]);
    }
}
