//! A failed sync, then a power loss: the states of a faulty run's log that
//! the failure made possible, and no power loss alone could have left.
//!
//! Crash model: fault injection made one sync fail (`EIO`) and the child
//! ran on. Linux marks the pages that sync could not write clean, so the
//! writes it was to make durable are lost for good, even after later syncs
//! succeed ([`FailedSync::Lost`]); a power loss at any later instant then
//! leaves the in-order model's states without them. The same log read with
//! the failed sync taken as never run ([`FailedSync::Pending`]: a later
//! sync makes them durable) gives the states a power loss leaves whatever
//! the failure did; the failure's own states are the first model's that the
//! second does not have at the same point, by content. Clause (checked by
//! the fault sweep): every acknowledged operation survives them, so a leg
//! that already loses to a plain power loss is not blamed on the failure.

use super::log::Event;
use super::power::{AtPoint, FailedSync, Model, model_with};

/// The states of `events` at each of `wanted` (ascending) that a failed
/// sync added: the model with the failure's writes lost (whose states,
/// rules and lost writes the points index into), and per point the states
/// of it that the model with those writes pending does not hold there.
pub fn added_by_failure(events: &[Event], wanted: &[u64]) -> (Model, Vec<AtPoint>) {
    let lost = model_with(events, wanted, FailedSync::Lost);
    let pending = model_with(events, wanted, FailedSync::Pending);
    let added = lost
        .points
        .iter()
        .zip(&pending.points)
        .map(|(l, p)| {
            let known = |id: usize| {
                p.states.iter().any(|(q, _)| pending.states[*q].files.store().eq(lost.states[id].files.store()))
            };
            AtPoint { states: l.states.iter().filter(|(id, _)| !known(*id)).copied().collect(), ..l.clone() }
        })
        .collect();
    (lost, added)
}

#[cfg(test)]
mod tests {
    use nix::errno::Errno;

    use super::*;
    use crate::crashstate::log::Effect;
    use crate::crashstate::log::build::{ev, open, put};
    use crate::crashstate::power::Pending;
    use crate::kill::syscall::FileKind::{self, Acks, Database, Wal};

    fn sync(file: FileKind) -> Effect {
        Effect::Sync { file, data_only: false }
    }

    fn failed(point: u64, file: FileKind) -> Event {
        ev(Some(point), Effect::Failed { effect: Box::new(sync(file)), errno: Errno::EIO })
    }

    /// The bytes of `kind` in each state of `at`.
    fn files(m: &Model, at: &AtPoint, kind: FileKind) -> Vec<Option<Vec<u8>>> {
        at.states.iter().map(|(id, _)| m.states[*id].files.get(kind)).collect()
    }

    #[test]
    fn a_write_a_failed_sync_lost_stays_lost_after_a_later_sync_succeeds() {
        let events = [
            open(Wal),
            ev(None, Effect::SyncDir),
            put(1, Wal, 0, b"a"),
            failed(2, Wal),
            put(3, Wal, 8192, b"b"),
            ev(Some(4), sync(Wal)),
            put(5, Acks, 0, b"ack\n"),
        ];
        let (m, added) = added_by_failure(&events, &[5]);
        // After the later fsync, the disk holds its write and not the lost one
        // (its page was never written again): a state no plain power loss leaves.
        let mut want = vec![0u8; 8193];
        want[8192] = b'b';
        assert_eq!(files(&m, &added[0], Wal), [Some(want)]);
        let rules: Vec<String> = m.lost.iter().map(Pending::rule).collect();
        assert_eq!(
            rules,
            [
                "write of 1 byte to the wal at offset 0 at #1 was never made durable by the fsync of the wal at #2, which \
              failed with EIO (Linux marks the pages it could not write clean, and no later fsync writes them)"
            ]
        );
        assert_eq!(added[0].lost, 1, "the point comes after the failure");
    }

    #[test]
    fn a_later_write_to_the_same_sector_carries_the_lost_bytes_to_the_disk() {
        let events = [
            open(Database),
            ev(None, Effect::SyncDir),
            put(1, Database, 0, b"aaaa"),
            failed(2, Database),
            put(3, Database, 2, b"bb"),
            ev(Some(4), sync(Database)),
            put(5, Acks, 0, b"ack\n"),
        ];
        let (m, added) = added_by_failure(&events, &[5]);
        assert!(added[0].states.is_empty(), "the sector was written again whole: the failure lost nothing");
        let all = files(&m, &m.points[0], Database);
        assert_eq!(all, [Some(b"aabb".to_vec())]);
    }

    #[test]
    fn before_the_failure_and_without_one_nothing_is_added() {
        let events = [
            open(Database),
            ev(None, Effect::SyncDir),
            put(1, Database, 0, b"aaaa"),
            ev(Some(2), sync(Database)),
            put(3, Database, 0, b"bbbb"),
            failed(4, Database),
            put(5, Acks, 0, b"ack\n"),
        ];
        let (_, added) = added_by_failure(&events, &[1, 2, 3, 4]);
        assert!(added.iter().all(|a| a.states.is_empty()), "up to the failed call the two models agree");
        // At 5, before any later sync, losing the write for good leaves the
        // states a power loss leaves anyway (the write never reached the disk).
        let (_, added) = added_by_failure(&events, &[5]);
        assert!(added[0].states.is_empty());
        let clean: Vec<Event> = events.iter().filter(|e| !matches!(e.effect, Effect::Failed { .. })).cloned().collect();
        let (m, added) = added_by_failure(&clean, &[1, 2, 3, 4]);
        assert!(added.iter().all(|a| a.states.is_empty()) && m.lost.is_empty());
    }
}
