//! Cell 3, rotation atomicity.
//!
//! Clause: a compression rotation is visible entirely or not at all. A
//! rotation is its parent ended by compression, its continuation linked to
//! the parent, and what it put in the continuation: a `system` message, then
//! the messages it carried (docs/PROTOCOL.md §2, `rotate`). A crash state
//! holds every part of a rotation or none: never a parent ended by
//! compression without its continuation (the orphan shape), never a
//! continuation whose parent is not ended by compression, never a linked
//! continuation without what the rotation wrote into it; and every
//! acknowledged rotation holds every part.
//!
//! Crash model: the child loops create the parent (unless it rotates the
//! last continuation again), give it work, take the lease, publish (the
//! continuation, its messages and the parent's end, one transaction), and
//! acks each rotation after its commit; it is killed after at least 50 acks,
//! or at every syscall point of a sweep of four rotations.
//!
//! Which rotation is which is the protocol's rule ([`Rotation::of`]), so the
//! judge knows what each rotation must hold without being told. Whether the
//! child ran with shapes (`--shapes on`, given only to a child that lists
//! `rotate-shapes`) its acks say (`carried`): rotation 0 is the same either
//! way, and a later one starts only after ack 0 was written.

use std::collections::{BTreeSet, HashMap, HashSet};

use crashcells_protocol::{Ack, Dump, DumpMessage, DumpSession, Op, Rotation};

use super::{Cell, MissingParam, Seen, Shape, Violations, plural};
use crate::catalog::Params;

pub struct RotationAtomicity;

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &["unexpected-ack", "orphan", "dangling-continuation", "incomplete-rotation", "partial-rotation"];

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

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn answers_durability(&self) -> bool {
        true
    }
}

/// Whether the acks are those of a run with shapes: every one carries
/// `carried`, or none does.
pub fn with_shapes(acks: &[Ack]) -> Result<bool, String> {
    let shaped = acks.iter().filter(|a| a.carried.is_some()).count();
    match shaped {
        0 => Ok(false),
        n if n == acks.len() => Ok(true),
        n => Err(format!("{n} of {} rotate acks say what they carried: a run gives all of them or none", acks.len())),
    }
}

/// Whether ack `n` is rotation `n` as the rule gives it.
fn agrees(ack: &Ack, n: u64, shapes: bool) -> Result<(), String> {
    let r = Rotation::of(n, shapes);
    let carried = shapes.then_some(r.carried);
    let fine = ack.op == "rotate"
        && ack.i == n
        && ack.parent.as_deref() == Some(&r.parent)
        && ack.child.as_deref() == Some(&r.child)
        && ack.carried == carried;
    if fine {
        return Ok(());
    }
    let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".into());
    let said = ack.carried.map_or(String::new(), |c| format!(", carrying {c}"));
    Err(format!(
        "ack {n} says {} {} ({} -> {}{said}), but the rule's rotation {n} is {} -> {}{}",
        ack.op,
        ack.i,
        name(&ack.parent),
        name(&ack.child),
        r.parent,
        r.child,
        carried.map_or(String::new(), |c| format!(", carrying {c}"))
    ))
}

/// The recovered state, indexed for the judge.
struct Recovered<'a> {
    by_id: HashMap<&'a str, &'a DumpSession>,
    /// Sessions some session names as its parent.
    parents_with_child: HashSet<&'a str>,
    messages: HashMap<&'a str, Vec<&'a DumpMessage>>,
}

impl<'a> Recovered<'a> {
    fn of(dump: &'a Dump) -> Recovered<'a> {
        let mut messages: HashMap<&str, Vec<&DumpMessage>> = HashMap::new();
        for m in &dump.messages {
            messages.entry(m.session_id.as_str()).or_default().push(m);
        }
        Recovered {
            by_id: dump.sessions.iter().map(|s| (s.id.as_str(), s)).collect(),
            parents_with_child: dump.sessions.iter().filter_map(|s| s.parent_session_id.as_deref()).collect(),
            messages,
        }
    }

    fn compressed(&self, id: &str) -> bool {
        self.by_id.get(id).is_some_and(|s| s.ended && s.end_reason.as_deref() == Some("compression"))
    }

    fn messages_of(&self, id: &str) -> &[&'a DumpMessage] {
        self.messages.get(id).map_or(&[], Vec::as_slice)
    }

    /// The parts of rotation `r` this state holds.
    fn parts(&self, r: &Rotation) -> Parts {
        let child = self.by_id.get(r.child.as_str());
        Parts {
            ended: self.compressed(&r.parent),
            exists: child.is_some(),
            linked: child.is_some_and(|c| c.parent_session_id.as_deref() == Some(&r.parent)),
            messages: self.messages_of(&r.child).len(),
            content: content(r, self.messages_of(&r.child)),
        }
    }

    /// Whether an existing kind already names rotation `r`'s tear: its
    /// parent is an orphan, or its continuation dangles.
    fn explained(&self, r: &Rotation, p: &Parts) -> bool {
        let orphan = p.ended && !self.parents_with_child.contains(r.parent.as_str());
        orphan || (p.linked && !p.ended)
    }
}

/// What a state holds of one rotation.
struct Parts {
    ended: bool,
    exists: bool,
    linked: bool,
    messages: usize,
    /// Whether the continuation's first messages are what the rotation put
    /// there, or what differs.
    content: Result<(), String>,
}

impl Parts {
    fn visible(&self) -> bool {
        self.ended || self.exists || self.messages > 0
    }

    fn complete(&self) -> bool {
        self.ended && self.linked && self.content.is_ok()
    }
}

/// Whether the continuation's messages begin with what rotation `r` put in
/// it: a `system` message (its content is the store's), then the carried
/// messages, role and content, in order. Later messages are the next
/// rotation's work (a continuation rotated again gets some).
fn content(r: &Rotation, held: &[&DumpMessage]) -> Result<(), String> {
    let carried = r.carried_messages();
    let shown = |m: &DumpMessage| format!("{} \"{}\"", m.role, m.content);
    match held.first() {
        None => return Err(format!("{} holds no message: its system message is missing", r.child)),
        Some(m) if m.role != "system" => {
            return Err(format!("{}'s first message is {}, not its system message", r.child, shown(m)));
        }
        Some(_) => {}
    }
    let got = &held[1..held.len().min(1 + carried.len())];
    let fine = got.len() == carried.len() && got.iter().zip(&carried).all(|(m, (role, c))| m.role == *role && m.content == *c);
    if fine {
        return Ok(());
    }
    let want: Vec<String> = carried.iter().map(|(role, c)| format!("{role} \"{c}\"")).collect();
    let have: Vec<String> = got.iter().map(|m| shown(m)).collect();
    Err(format!(
        "{} carries {} after its system message, not the {} {} of {} ({})",
        r.child,
        if have.is_empty() { "nothing".into() } else { have.join(", ") },
        carried.len(),
        plural(carried.len(), "message", "messages"),
        r.parent,
        want.join(", ")
    ))
}

/// A reader's account of what a state holds of rotation `r`.
fn account(r: &Rotation, p: &Parts) -> String {
    let yes_no = |b: bool| if b { "" } else { "not " };
    let mut s = format!(
        "{} {}ended by compression; {} {}",
        r.parent,
        yes_no(p.ended),
        r.child,
        match (p.exists, p.linked) {
            (true, true) => format!("linked to {}", r.parent),
            (true, false) => format!("not linked to {}", r.parent),
            (false, _) => "missing".into(),
        }
    );
    if let Err(why) = &p.content {
        s.push_str(&format!("; {why}"));
    }
    s
}

/// The rotations a state might show any part of: every acked one, and
/// those whose sessions' names (`p<k>`, `c<k>`) appear, with the next one
/// (a continuation ended by compression is the next rotation's parent).
fn candidates(dump: &Dump, acks: &[Ack]) -> BTreeSet<u64> {
    let number = |id: &str| id.strip_prefix(['p', 'c']).and_then(|n| n.parse::<u64>().ok());
    let ids = dump.sessions.iter().map(|s| s.id.as_str()).chain(dump.messages.iter().map(|m| m.session_id.as_str()));
    let mut ks: BTreeSet<u64> = (0..acks.len() as u64).collect();
    for n in ids.filter_map(number) {
        ks.insert(n);
        ks.insert(n.saturating_add(1));
    }
    ks
}

pub fn check(dump: &Dump, acks: &[Ack]) -> Violations {
    let mut v = Violations::default();
    let agreed = with_shapes(acks)
        .and_then(|shapes| (0..).zip(acks).try_for_each(|(n, a)| agrees(a, n, shapes)).map(|()| shapes));
    let shapes = match agreed {
        Ok(shapes) => shapes,
        Err(why) => {
            v.fire("unexpected-ack", why);
            return v;
        }
    };
    let seen = Recovered::of(dump);
    let orphans: Vec<&str> = dump
        .sessions
        .iter()
        .filter(|s| seen.compressed(&s.id) && !seen.parents_with_child.contains(s.id.as_str()))
        .map(|s| s.id.as_str())
        .collect();
    if let Some(first) = orphans.first() {
        let n = orphans.len();
        v.fire("orphan", format!("{n} {}: parent {first} ended by compression without a continuation", plural(n, "orphan", "orphans")));
    }
    for s in &dump.sessions {
        if let Some(p) = s.parent_session_id.as_deref().filter(|p| !seen.compressed(p)) {
            v.fire("dangling-continuation", format!("continuation {} exists but its parent {p} is not ended by compression", s.id));
            break;
        }
    }
    if let Some((r, p)) = (0..acks.len() as u64).map(|k| rotation_parts(&seen, k, shapes)).find(|(_, p)| !p.complete()) {
        v.fire(
            "incomplete-rotation",
            format!("acked rotation {} ({} -> {}) is not complete after recovery: {}", r.k, r.parent, r.child, account(&r, &p)),
        );
    }
    let partial: Vec<(Rotation, Parts)> = candidates(dump, acks)
        .into_iter()
        .filter(|&k| k >= acks.len() as u64)
        .map(|k| rotation_parts(&seen, k, shapes))
        .filter(|(r, p)| p.visible() && !p.complete() && !seen.explained(r, p))
        .collect();
    if let Some((r, p)) = partial.first() {
        v.fire(
            "partial-rotation",
            format!("rotation {} ({} -> {}) is visible in part: {}", r.k, r.parent, r.child, account(r, p)),
        );
    }
    let rotations = dump.sessions.iter().filter(|s| s.parent_session_id.is_some()).count();
    v.details.push(format!(
        "acked {} {}{}; recovered {rotations} {}, {} {}, {} partly visible",
        acks.len(),
        plural(acks.len(), "rotation", "rotations"),
        if shapes { " (with shapes)" } else { "" },
        plural(rotations, "continuation", "continuations"),
        orphans.len(),
        plural(orphans.len(), "orphan", "orphans"),
        partial.len(),
    ));
    v
}

fn rotation_parts(seen: &Recovered, k: u64, shapes: bool) -> (Rotation, Parts) {
    let r = Rotation::of(k, shapes);
    let p = seen.parts(&r);
    (r, p)
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

    fn kinds(v: &Violations) -> Vec<&str> {
        v.found.iter().map(|f| f.kind).collect()
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
        let v = check(&d, &[]);
        assert!(v.texts()[0].contains("1 orphan: parent p0"));
        assert_eq!(kinds(&v), ["orphan"], "the orphan's kind alone: its tear is named once");
    }

    #[test]
    fn a_continuation_of_a_live_parent_fires() {
        let d = dump(vec![session("p0", None, false), session("c0", Some("p0"), false)], vec![handoff("c0")]);
        let v = check(&d, &[]);
        assert!(v.texts()[0].contains("not ended by compression"));
        assert_eq!(kinds(&v), ["dangling-continuation"]);
    }

    #[test]
    fn a_lost_acked_rotation_fires() {
        let d = dump(vec![], vec![]);
        assert_eq!(
            check(&d, &[ack(0)]).texts()[0],
            "acked rotation 0 (p0 -> c0) is not complete after recovery: p0 not ended by compression; c0 missing; \
             c0 holds no message: its system message is missing"
        );
    }

    /// The continuation is linked and its parent ended, but what the
    /// rotation put in it is not there yet (`split-continuation`): visible
    /// in part, though no orphan and no dangling continuation.
    #[test]
    fn a_linked_continuation_without_its_system_message_fires() {
        let d = dump(vec![session("p0", None, true), session("c0", Some("p0"), false)], vec![]);
        let v = check(&d, &[]);
        assert_eq!(kinds(&v), ["partial-rotation"]);
        assert_eq!(
            v.texts()[0],
            "rotation 0 (p0 -> c0) is visible in part: p0 ended by compression; c0 linked to p0; \
             c0 holds no message: its system message is missing"
        );
        let mut acked = check(&d, &[ack(0)]);
        assert_eq!(kinds(&acked), ["incomplete-rotation"], "acked, it is the incomplete rotation");
        let wrong = dump(d.sessions.clone(), vec![DumpMessage::new("c0", "user", "work 1")]);
        acked = check(&wrong, &[]);
        assert!(acked.texts()[0].contains("c0's first message is user \"work 1\", not its system message"), "{acked:?}");
    }

    /// A run with shapes: rotation 1 rotates c0 again and carries two.
    fn shaped(carried: &[(&str, &str)]) -> Dump {
        let mut messages = vec![
            DumpMessage::new("p0", "user", "work 0"),
            DumpMessage::new("p0", "assistant", "reply 0"),
            handoff("c0"),
            DumpMessage::new("c0", "user", "work 1"),
            DumpMessage::new("c0", "assistant", "reply 1"),
            handoff("c1"),
        ];
        messages.extend(carried.iter().map(|(role, c)| DumpMessage::new("c1", role, c)));
        let sessions =
            vec![session("c0", Some("p0"), true), session("c1", Some("c0"), false), session("p0", None, true)];
        dump(sessions, messages)
    }

    fn shaped_acks(n: u64) -> Vec<Ack> {
        (0..n).map(|k| Ack::rotation(k, &Rotation::of(k, true))).collect()
    }

    #[test]
    fn a_rotation_of_a_continuation_with_its_carried_messages_passes() {
        let d = shaped(&[("user", "work 1"), ("assistant", "reply 1")]);
        let v = check(&d, &shaped_acks(2));
        assert!(v.found.is_empty(), "{v:?}");
        assert!(v.details[0].contains("(with shapes)"), "{v:?}");
        assert!(check(&d, &shaped_acks(1)).found.is_empty(), "the in-flight rotation published whole");
    }

    #[test]
    fn a_carried_message_missing_fires() {
        let d = shaped(&[("user", "work 1")]);
        let v = check(&d, &shaped_acks(1));
        assert_eq!(kinds(&v), ["partial-rotation"]);
        assert!(
            v.texts()[0].contains(
                "c1 carries user \"work 1\" after its system message, not the 2 messages of c0 \
                 (user \"work 1\", assistant \"reply 1\")"
            ),
            "{v:?}"
        );
        assert_eq!(kinds(&check(&d, &shaped_acks(2))), ["incomplete-rotation"]);
    }

    #[test]
    fn an_ack_the_rule_does_not_give_fires() {
        let mut acks = shaped_acks(2);
        acks[1].carried = Some(0);
        let v = check(&dump(vec![], vec![]), &acks);
        assert_eq!(v.texts(), ["ack 1 says rotate 1 (c0 -> c1, carrying 0), but the rule's rotation 1 is c0 -> c1, carrying 2"]);
        acks[1].carried = None;
        assert!(check(&dump(vec![], vec![]), &acks).texts()[0].contains("1 of 2 rotate acks say what they carried"));
        let v = check(&dump(vec![], vec![]), &[ack(1)]);
        assert_eq!(kinds(&v), ["unexpected-ack"], "numbered from 0");
    }
}
