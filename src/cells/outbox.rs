//! Cell 5, outbox exactly-once.
//!
//! Clause: a crash between a provider send and its durable record must not
//! double-deliver on catch-up: after the store's restart step, every
//! obligation it recorded was delivered exactly once (a second delivery of
//! a key is a double delivery; a recorded key never delivered is a loss),
//! every acked obligation was delivered, and the store shows each as
//! delivered.
//!
//! Crash model: the child runs `deliver`: for each obligation `o<j>` it
//! records it, marks it attempting, sends it (one line appended to the
//! driver's transport file), marks it delivered, each step its own
//! transaction, and acks it. It is killed once at least the window of acks
//! (30) is reached, or at a syscall point of its first obligation, the
//! write of the send and the instant after it included. Each recovery pass
//! then runs `catch-up` to its end on its own copy of the database and of
//! the transport, before its `dump`; the judge reads the first pass's
//! transport.

use std::collections::{BTreeMap, BTreeSet};

use crashcells_protocol::{Ack, Delivery, Dump, Op};

use super::{Cell, MissingParam, Seen, Shape, Violations, plural};
use crate::catalog::Params;

pub struct OutboxExactlyOnce;

/// Every kind of violation [`check`] finds.
const KINDS: &[&str] = &["unkeyed-ack", "double-delivery", "acked-never-delivered", "lost-obligation", "left-undelivered", "unrecorded-delivery"];

impl Cell for OutboxExactlyOnce {
    fn id(&self) -> &'static str {
        "outbox-exactly-once"
    }

    fn shape(&self, params: &Params) -> Result<Shape, MissingParam> {
        Shape::workload(Op::Deliver, params, Some(Op::CatchUp))
    }

    fn check(&self, seen: &Seen) -> Violations {
        check(seen.dump, &seen.acks().cloned().collect::<Vec<_>>(), seen.deliveries)
    }

    fn kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    /// Exactly-once delivery is its own clause; its marks' durability is
    /// the question of the cells whose clause is durability.
    fn answers_durability(&self) -> bool {
        false
    }
}

/// The keys among `keys` for which `f` holds, in order.
fn which<'a>(keys: impl Iterator<Item = &'a &'a str>, f: impl Fn(&str) -> bool) -> Vec<String> {
    keys.filter(|k| f(k)).map(|k| k.to_string()).collect()
}

/// One finding for `keys` (none if empty): the first named, the count said.
fn finding(keys: &[String], one: impl Fn(&str) -> String) -> Option<String> {
    let first = keys.first()?;
    let more = match keys.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(format!("{}{more}", one(first)))
}

pub fn check(dump: &Dump, acks: &[Ack], deliveries: &[Delivery]) -> Violations {
    let mut v = Violations::default();
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for d in deliveries {
        *times.entry(&d.key).or_default() += 1;
    }
    let recorded: BTreeMap<&str, &str> = dump.outbox.iter().map(|o| (o.key.as_str(), o.state.as_str())).collect();
    let acked: BTreeSet<&str> = acks.iter().filter_map(|a| a.key.as_deref()).collect();
    let twice = which(times.keys(), |k| times[k] > 1);
    let lost = which(recorded.keys(), |k| !times.contains_key(k));
    let undelivered = which(recorded.keys(), |k| recorded[k] != "delivered");
    let acked_lost = which(acked.iter(), |k| !times.contains_key(k));
    let unrecorded = which(times.keys(), |k| !recorded.contains_key(k));
    if let Some(a) = acks.iter().find(|a| a.key.is_none()) {
        v.fire("unkeyed-ack", format!("ack {} of `{}` names no obligation key", a.i, a.op));
    }
    let found = [
        ("double-delivery", finding(&twice, |k| format!("obligation {k} was delivered {} times (a double delivery)", times[k]))),
        ("acked-never-delivered", finding(&acked_lost, |k| format!("acked obligation {k} was never delivered"))),
        ("lost-obligation", finding(&lost, |k| format!("obligation {k} was recorded but never delivered (a loss)"))),
        ("left-undelivered", finding(&undelivered, |k| format!("the store shows obligation {k} {} after catch-up", recorded[k]))),
        ("unrecorded-delivery", finding(&unrecorded, |k| format!("obligation {k} was delivered but the store has no record of it"))),
    ];
    for (kind, text) in found {
        if let Some(text) = text {
            v.fire(kind, text);
        }
    }
    let delivered = recorded.values().filter(|&&s| s == "delivered").count();
    v.details.push(format!(
        "acked {} {}; the store records {} ({delivered} delivered); the transport holds {} {} of {} {}",
        acked.len(),
        plural(acked.len(), "obligation", "obligations"),
        recorded.len(),
        deliveries.len(),
        plural(deliveries.len(), "delivery", "deliveries"),
        times.len(),
        plural(times.len(), "key", "keys")
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::DumpObligation;
    use crate::cells::declared;

    /// The cell's check, every kind it finds one it declares.
    fn check(dump: &Dump, acks: &[Ack], deliveries: &[Delivery]) -> Violations {
        declared(KINDS, super::check(dump, acks, deliveries))
    }

    fn dump(states: &[(&str, &str)]) -> Dump {
        let outbox = states.iter().map(|&(k, s)| DumpObligation { key: k.into(), state: s.into() }).collect();
        Dump { outbox, ..Dump::empty(2, "ok".into()) }
    }

    fn sent(keys: &[&str]) -> Vec<Delivery> {
        keys.iter().map(|k| Delivery { key: k.to_string(), payload: format!("effect of {k}") }).collect()
    }

    fn acks(n: u64) -> Vec<Ack> {
        (0..n).map(|j| Ack::deliver(j, &format!("o{j}"))).collect()
    }

    #[test]
    fn every_recorded_obligation_delivered_once_passes() {
        let d = dump(&[("o0", "delivered"), ("o1", "delivered")]);
        let v = check(&d, &acks(1), &sent(&["o0", "o1"]));
        assert!(v.found.is_empty(), "{v:?}");
        assert_eq!(
            v.details,
            ["acked 1 obligation; the store records 2 (2 delivered); the transport holds 2 deliveries of 2 keys"]
        );
        assert!(check(&Dump::empty(2, "ok".into()), &[], &[]).found.is_empty(), "killed before any");
    }

    #[test]
    fn a_second_delivery_fires() {
        let v = check(&dump(&[("o0", "delivered")]), &[], &sent(&["o0", "o0"]));
        assert_eq!(v.texts(), ["obligation o0 was delivered 2 times (a double delivery)"]);
    }

    #[test]
    fn a_loss_an_unfinished_obligation_and_an_unrecorded_delivery_fire() {
        let v = check(&dump(&[("o0", "delivered"), ("o1", "attempting")]), &acks(1), &sent(&["o0", "o2"]));
        assert_eq!(
            v.texts(),
            [
                "obligation o1 was recorded but never delivered (a loss)",
                "the store shows obligation o1 attempting after catch-up",
                "obligation o2 was delivered but the store has no record of it",
            ]
        );
        let v = check(&dump(&[]), &acks(2), &[]);
        assert_eq!(v.texts(), ["acked obligation o0 was never delivered (and 1 more)"]);
    }
}
