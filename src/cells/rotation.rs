//! Cell 3, rotation atomicity.
//!
//! Clause: a compression rotation is visible entirely or not at all: never a
//! parent ended by compression without its continuation (the orphan shape),
//! never a continuation whose parent is not ended by compression, and every
//! acknowledged rotation complete.
//!
//! Crash model: the child loops create parent, append, take the lease,
//! publish (continuation + handoff message + end parent, one transaction), and
//! acks each rotation after commit; it is killed after at least 50 acks.

use std::collections::{HashMap, HashSet};

use crashcells_protocol::{Ack, Dump, Op};

use super::{Cell, MissingParam, Seen, Shape, Violations, plural};
use crate::catalog::Params;

pub struct RotationAtomicity;

impl Cell for RotationAtomicity {
    fn id(&self) -> &'static str {
        "rotation-atomicity"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Shape::workload(Op::Rotate, params, None)
    }

    fn check(&self, seen: &Seen) -> Violations {
        check(seen.dump, &seen.acks().cloned().collect::<Vec<_>>())
    }

    fn answers_durability(&self) -> bool {
        true
    }
}

pub fn check(dump: &Dump, acks: &[Ack]) -> Violations {
    let mut v = Violations::default();
    let by_id: HashMap<&str, _> = dump.sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let parents_with_child: HashSet<&str> =
        dump.sessions.iter().filter_map(|s| s.parent_session_id.as_deref()).collect();
    let handoffs: HashSet<&str> =
        dump.messages.iter().filter(|m| m.role == "system").map(|m| m.session_id.as_str()).collect();
    let compressed =
        |id: &str| by_id.get(id).is_some_and(|s| s.ended && s.end_reason.as_deref() == Some("compression"));

    let orphans: Vec<&str> = dump
        .sessions
        .iter()
        .filter(|s| compressed(&s.id) && !parents_with_child.contains(s.id.as_str()))
        .map(|s| s.id.as_str())
        .collect();
    if let Some(first) = orphans.first() {
        let n = orphans.len();
        v.fire("orphan", format!("{n} {}: parent {first} ended by compression without a continuation", plural(n, "orphan", "orphans")));
    }
    for s in &dump.sessions {
        if let Some(p) = s.parent_session_id.as_deref().filter(|p| !compressed(p)) {
            v.fire("dangling-continuation", format!("continuation {} exists but its parent {p} is not ended by compression", s.id));
            break;
        }
    }
    let incomplete = acks.iter().find(|a| {
        let (Some(p), Some(c)) = (a.parent.as_deref(), a.child.as_deref()) else { return true };
        !(compressed(p)
            && by_id.get(c).is_some_and(|s| s.parent_session_id.as_deref() == Some(p))
            && handoffs.contains(c))
    });
    if let Some(a) = incomplete {
        let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".into());
        v.fire(
            "incomplete-rotation",
            format!("acked rotation {} ({} -> {}) is not complete after recovery", a.i, name(&a.parent), name(&a.child)),
        );
    }
    let rotations = by_id.values().filter(|s| s.parent_session_id.is_some()).count();
    v.details.push(format!(
        "acked {} {}; recovered {rotations} {}, {} {}",
        acks.len(),
        plural(acks.len(), "rotation", "rotations"),
        plural(rotations, "continuation", "continuations"),
        orphans.len(),
        plural(orphans.len(), "orphan", "orphans")
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::{DumpMessage, DumpSession};

    fn session(id: &str, parent: Option<&str>, compressed: bool) -> DumpSession {
        DumpSession {
            parent_session_id: parent.map(Into::into),
            ended: compressed,
            end_reason: compressed.then(|| "compression".into()),
            ..DumpSession::new(id, 1)
        }
    }

    fn handoff(child: &str) -> DumpMessage {
        DumpMessage::new(child, "system", "continued")
    }

    fn ack(i: u64) -> Ack {
        Ack::rotate(i, &format!("p{i}"), &format!("c{i}"))
    }

    fn dump(sessions: Vec<DumpSession>, messages: Vec<DumpMessage>) -> Dump {
        Dump { sessions, messages, ..Dump::empty(1, "ok".into()) }
    }

    #[test]
    fn complete_rotations_pass_and_an_unpublished_one_is_fine() {
        let d = dump(
            vec![session("p0", None, true), session("c0", Some("p0"), false), session("p1", None, false)],
            vec![handoff("c0")],
        );
        assert!(check(&d, &[ack(0)]).found.is_empty());
    }

    #[test]
    fn an_orphan_fires() {
        let d = dump(vec![session("p0", None, true)], vec![]);
        assert!(check(&d, &[]).texts()[0].contains("1 orphan: parent p0"));
    }

    #[test]
    fn a_continuation_of_a_live_parent_fires() {
        let d = dump(vec![session("p0", None, false), session("c0", Some("p0"), false)], vec![handoff("c0")]);
        assert!(check(&d, &[]).texts()[0].contains("not ended by compression"));
    }

    #[test]
    fn a_lost_acked_rotation_fires() {
        let d = dump(vec![], vec![]);
        assert_eq!(check(&d, &[ack(0)]).texts()[0], "acked rotation 0 (p0 -> c0) is not complete after recovery");
    }
}
