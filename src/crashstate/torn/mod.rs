//! Torn power loss: the in-order power model ([`super::power`]) plus writes
//! that reach the disk torn, in sector units, and writes that reach it out
//! of order within a sync interval; bounded, and deduplicated by content.
//!
//! Crash model (docs/DESIGN.md, "Power loss", "Torn and reordered writes"):
//! what is durable is what the in-order model says (each file's data as of
//! its last sync, names as of the folder's last sync; names, truncations and
//! the ack journal and transport keep their rules there). Of the operations
//! not yet durable at a crash instant, the disk may hold
//! - every in-order prefix (the in-order model's states, unchanged);
//! - every prefix followed by the next write *torn*: a prefix of its sectors
//!   (SQLite: a sector write is linear; [`super::sectors`]), the space it
//!   grew the file by, and did not fill, holding garbage;
//! - every state where at most `Bound::out_of_order` of the last
//!   `Bound::window` unsynced writes were lost, or torn, while every other
//!   pending operation reached the disk (SQLite: "write operations will be
//!   reordered by the operating system"). A lost write's sectors that a later
//!   reached write to the same file also touched are kept: the page cache
//!   writes a sector's latest bytes, so it cannot lose the earlier write
//!   there alone.
//!
//! Identical states (same bytes in every store file) are one state; each
//! point's states keep the rule of the cause that left them.
//!
//! A faulty run's log (a sync made to fail) is the in-order model's
//! ([`super::failed`]): this one does not carry a lost write's sectors with
//! a later write to them.

use std::collections::{HashMap, HashSet};

use super::files::Files;
use super::image::apply_data;
use super::log::{Effect, Event, next_points, place};
use super::power::{Disk, Dropped, Model, Op, Pending, PowerState};
use super::sectors::Write;
pub use variants::Bound;
use variants::{Variant, Ways, placed};

mod variants;

/// Builds the torn power states of `events` for each kill point in
/// `wanted` (ascending): the same crash instants, shapes and rules as
/// [`super::power::model`], so a caller of that one takes this one as it
/// is. Each point's states are listed so that, read backwards, the ones
/// closest to the process crash come first: the in-order states, then the
/// torn ones, then the reordered ones. `Model::explored` says per point
/// how many states were built before identical ones were merged.
pub fn model(events: &[Event], wanted: &[u64], bound: Bound) -> Model {
    let mut walk = Walk::new(events, bound);
    let end = events.iter().filter_map(|e| e.point).max().unwrap_or(0) + 1;
    let next: Vec<u64> = next_points(events).into_iter().map(|n| n.unwrap_or(end)).collect();
    let mut last_point = 0;
    for (i, e) in events.iter().enumerate() {
        if wanted.binary_search(&next[i]).is_ok() {
            walk.instant(i);
        }
        if let Some(n) = e.point {
            if wanted.binary_search(&n).is_ok() {
                walk.close(n);
            }
            last_point = n;
        }
        walk.apply(&e.effect, place(e.point, last_point, events, i));
    }
    if wanted.binary_search(&end).is_ok() {
        walk.instant(events.len());
        walk.close(end);
    }
    walk.m
}

/// The log read once, with the states built so far.
struct Walk<'a> {
    events: &'a [Event],
    bound: Bound,
    disk: Disk,
    m: Model,
    /// Per epoch and variant: its state and the rules of its causes.
    built: HashMap<(usize, Variant), (usize, (usize, usize))>,
    /// States by a hash of their store's bytes.
    by_content: HashMap<u64, Vec<usize>>,
    /// The current point's instants so far, each its states in check order.
    instants: Vec<Vec<(usize, Dropped)>>,
    explored: usize,
}

impl<'a> Walk<'a> {
    fn new(events: &'a [Event], bound: Bound) -> Walk<'a> {
        let m = Model { epochs: vec![Vec::new()], ..Model::default() };
        let (built, by_content) = (HashMap::new(), HashMap::new());
        Walk { events, bound, disk: Disk::default(), m, built, by_content, instants: Vec::new(), explored: 0 }
    }

    /// Reads one event into the disk, keeping each epoch's pending list as
    /// the in-order model does (its rules index into it).
    fn apply(&mut self, effect: &Effect, place: String) {
        let epoch = self.disk.epoch;
        self.disk.apply(effect, place);
        let pending = self.disk.pending.iter().map(|(_, p)| p.clone());
        if self.disk.epoch != epoch {
            self.m.epochs.push(pending.collect());
        } else {
            let have = self.m.epochs[epoch].len();
            self.m.epochs[epoch].extend(pending.skip(have));
        }
    }

    /// The crash instant just before event `i`.
    fn instant(&mut self, i: usize) {
        let writes = placed(&self.disk);
        let variants = Ways { pending: &self.disk.pending, writes: &writes, bound: self.bound }.all();
        self.explored += variants.len();
        let to = self.disk.pending.len();
        let epoch = self.disk.epoch;
        let states = variants
            .into_iter()
            .map(|v| {
                let from = v.to;
                let (id, causes) = self.state(v, &writes, i);
                (id, Dropped { epoch, from, to, causes })
            })
            .collect();
        self.instants.push(states);
    }

    /// Point `n`'s states: its instants' (the latest first, each state with
    /// the rule of its latest instant), listed so that read backwards the
    /// check order comes first.
    fn close(&mut self, n: u64) {
        let mut seen = HashSet::new();
        let mut states: Vec<(usize, Dropped)> = Vec::new();
        for instant in self.instants.drain(..).rev() {
            states.extend(instant.into_iter().filter(|(id, _)| seen.insert(*id)));
        }
        states.reverse();
        self.m.points.push(self.disk.at_point(n, states));
        self.m.explored.push(std::mem::take(&mut self.explored));
    }

    /// The state of variant `v` and its causes' rules, built once per
    /// epoch and merged with any state of the same bytes.
    fn state(&mut self, v: Variant, writes: &[Option<Write>], i: usize) -> (usize, (usize, usize)) {
        let key = (self.disk.epoch, v);
        if let Some(&got) = self.built.get(&key) {
            return got;
        }
        let files = self.build(&key.1, writes);
        let id = self.dedup(files, key.1.to);
        let causes = self.causes(&key.1, writes, i);
        self.built.insert(key, (id, causes));
        (id, causes)
    }

    /// The durable base with the variant's operations applied.
    fn build(&self, v: &Variant, writes: &[Option<Write>]) -> Files {
        let mut names = self.disk.durable.clone();
        let mut data = std::collections::BTreeMap::new();
        for (j, (op, _)) in self.disk.pending[..v.to].iter().enumerate() {
            let partial = v.partial.iter().find(|p| p.at == j);
            match op {
                Op::Name(file, Some(ino)) => {
                    names.insert(*file, *ino);
                }
                Op::Name(file, None) => {
                    names.remove(file);
                }
                Op::Data(ino, e) => {
                    let d = data.entry(*ino).or_insert_with(|| self.disk.inodes[*ino].synced.clone());
                    match (writes[j], e) {
                        (Some(w), Effect::Write { data: bytes, .. }) => {
                            let (reached, grown) = partial.map_or((None, true), |p| (Some(&p.reached[..]), p.grown));
                            w.put(d, bytes, reached, grown, self.bound.sector);
                        }
                        _ => apply_data(d, e),
                    }
                }
            }
        }
        self.disk.files(&names, data)
    }

    /// The index of the state holding `files`' store, added if new.
    fn dedup(&mut self, files: Files, reached: usize) -> usize {
        let bucket = self.by_content.entry(files.store_hash()).or_default();
        if let Some(&id) = bucket.iter().find(|&&id| self.m.states[id].files.store().eq(files.store())) {
            return id;
        }
        bucket.push(self.m.states.len());
        self.m.states.push(PowerState { files, epoch: self.disk.epoch, reached });
        self.m.states.len() - 1
    }

    /// One rule per torn or reordered write of `v`, added to the model.
    fn causes(&mut self, v: &Variant, writes: &[Option<Write>], i: usize) -> (usize, usize) {
        let from = self.m.causes.len();
        for p in &v.partial {
            let pending = &self.disk.pending[p.at].1;
            let n = writes[p.at].map_or(0, |w| w.pieces(self.bound.sector).len());
            let reached = p.reached.iter().filter(|r| **r).count();
            let grew = writes[p.at].is_some_and(|w| w.grows()) && p.grown;
            let after = match v.to - p.at - 1 {
                1 => "the operation after it".to_string(),
                n => format!("the {n} operations after it"),
            };
            let how = match (p.reordered, reached, p.grown) {
                (false, ..) => format!("torn: {reached} of {n} sectors reached the disk"),
                (true, 0, false) => format!("reordered: lost, though {after} reached the disk"),
                (true, ..) => format!("reordered and torn: {reached} of {n} sectors reached the disk, {after} whole"),
            };
            let garbage = if grew && reached < n { "; the space it grew the file by holds garbage" } else { "" };
            let what = format!("{} ({how}{garbage})", pending.what);
            let needs = self.next_sync(p.at, i);
            self.m.causes.push(Pending { what, needs, harmless: false });
        }
        (from, self.m.causes.len())
    }

    /// What would have made pending operation `at` durable, from event `i`
    /// on: the next sync of its file, which the crash kept from running.
    fn next_sync(&self, at: usize, i: usize) -> String {
        let file = match &self.disk.pending[at].0 {
            Op::Data(_, Effect::Write { file, .. }) => *file,
            _ => return self.disk.pending[at].1.needs.clone(),
        };
        let later = self.events[i..].iter().enumerate();
        let mut syncs = later.filter(|(_, e)| matches!(e.effect, Effect::Sync { file: f, .. } if f == file));
        match syncs.next() {
            Some((k, e)) => format!("the {} {}, which never ran", e.effect.describe(), self.where_is(i + k)),
            None => format!("an fsync of the {}, and the run made none after it", file.as_str()),
        }
    }

    /// Where event `k` is, for a reader.
    fn where_is(&self, k: usize) -> String {
        match self.events[k..].iter().find_map(|e| e.point) {
            Some(n) if self.events[k].point == Some(n) => format!("at #{n}"),
            Some(n) => format!("before #{n}"),
            None => "at the run's end".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::log::build::{ev, open, put};
    use crate::crashstate::power::{self, AtPoint};
    use crate::crashstate::sectors::garbage_at;
    use crate::kill::syscall::FileKind::{self, Acks, Database, Wal};

    /// Sectors of 4 bytes, so that a few bytes make several sectors.
    const SMALL: Bound = Bound { sector: 4, out_of_order: 1, window: 8, tears: 4 };

    fn sync(point: u64, file: FileKind) -> Event {
        ev(Some(point), Effect::Sync { file, data_only: false })
    }

    fn dir() -> Event {
        ev(None, Effect::SyncDir)
    }

    fn at(m: &Model, point: u64) -> &AtPoint {
        m.points.iter().find(|p| p.point == point).unwrap()
    }

    /// The bytes of `kind` in each state of `point`, in the model's order.
    fn files(m: &Model, point: u64, kind: FileKind) -> Vec<Option<Vec<u8>>> {
        at(m, point).states.iter().map(|(id, _)| m.states[*id].files.get(kind)).collect()
    }

    /// The first rule of each state of `point` ("" for the process crash's own).
    fn rules(m: &Model, point: u64) -> Vec<String> {
        let lost = at(m, point).states.iter().map(|(_, d)| m.dropped(d));
        lost.map(|l| l.first().map(Pending::rule).unwrap_or_default()).collect()
    }

    #[test]
    fn a_torn_write_leaves_each_prefix_of_its_sectors() {
        let events = [
            open(Database),
            put(1, Database, 0, b"aaaaaaaaaaaa"),
            sync(2, Database),
            dir(),
            put(3, Database, 0, b"bbbbbbbbbbbb"),
            put(4, Acks, 0, b"ack\n"),
        ];
        let m = model(&events, &[4], SMALL);
        let dbs = files(&m, 4, Database);
        for want in [&b"aaaaaaaaaaaa"[..], b"bbbbaaaaaaaa", b"bbbbbbbbaaaa", b"bbbbbbbbbbbb"] {
            assert!(dbs.contains(&Some(want.to_vec())), "{:?} missing from {dbs:?}", String::from_utf8_lossy(want));
        }
        assert_eq!(dbs.len(), 4, "the overwrite did not grow the file: no state of its size alone");
    }

    #[test]
    fn garbage_fills_the_space_a_torn_write_grew_the_file_by() {
        let events = [open(Wal), dir(), put(1, Wal, 0, b"wwwwww"), put(2, Acks, 0, b"ack\n")];
        let m = model(&events, &[2], SMALL);
        let g = |range: std::ops::Range<u64>| range.map(garbage_at).collect::<Vec<u8>>();
        let wals = files(&m, 2, Wal);
        assert!(wals.contains(&Some(Vec::new())), "the write lost, size and all");
        assert!(wals.contains(&Some(g(0..6))), "the size reached the disk, no sector did: {wals:?}");
        assert!(wals.contains(&Some([&b"wwww"[..], &g(4..6)].concat())), "one sector of two: {wals:?}");
        assert!(wals.contains(&Some(b"wwwwww".to_vec())));
        assert!(g(0..6).iter().all(|&b| b != 0), "garbage is never zeros");
    }

    #[test]
    fn two_unsynced_writes_to_different_files_reach_the_disk_each_alone() {
        let events =
            [open(Database), open(Wal), dir(), put(1, Database, 0, b"d"), put(2, Wal, 0, b"w"), put(3, Acks, 0, b"a")];
        let m = model(&events, &[3], SMALL);
        let pairs: Vec<_> = files(&m, 3, Database).into_iter().zip(files(&m, 3, Wal)).collect();
        let (d, w, none) = (Some(b"d".to_vec()), Some(b"w".to_vec()), Some(Vec::new()));
        assert!(pairs.contains(&(d.clone(), none.clone())), "in order: the database's write alone");
        assert!(pairs.contains(&(none, w.clone())), "out of order: the wal's write alone: {pairs:?}");
        assert!(pairs.contains(&(d, w)));
        let lost = "write of 1 byte to the database at offset 0 at #1 (reordered: lost, though the operation after \
                    it reached the disk) was never made durable by an fsync of the database, and the run made none \
                    after it";
        assert!(rules(&m, 3).contains(&lost.to_string()), "{:#?}", rules(&m, 3));
    }

    #[test]
    fn a_synced_write_is_never_torn_or_dropped() {
        let events = [
            open(Database),
            open(Wal),
            dir(),
            put(1, Database, 0, b"aaaaaaaa"),
            sync(2, Database),
            put(3, Wal, 0, b"wwwwwwww"),
            put(4, Database, 8, b"bbbb"),
            put(5, Acks, 0, b"ack\n"),
        ];
        let m = model(&events, &[5], SMALL);
        for db in files(&m, 5, Database) {
            assert!(db.as_ref().is_some_and(|d| d.starts_with(b"aaaaaaaa")), "{db:?}");
        }
        assert!(files(&m, 5, Wal).len() > 2, "the unsynced ones are varied");
    }

    #[test]
    fn identical_states_are_one_state() {
        // The same bytes written twice at one place: one write or both, one file.
        let events =
            [open(Database), dir(), put(1, Database, 0, b"xxxx"), put(2, Database, 0, b"xxxx"), put(3, Acks, 0, b"a")];
        let m = model(&events, &[3], Bound { out_of_order: 0, ..SMALL });
        let dbs = files(&m, 3, Database);
        let distinct: HashSet<_> = dbs.iter().collect();
        assert_eq!(distinct.len(), dbs.len(), "no state twice: {dbs:?}");
        assert!(m.explored[0] > dbs.len(), "{} built, {} distinct", m.explored[0], dbs.len());
    }

    #[test]
    fn a_lost_write_keeps_the_sectors_a_later_write_rewrote() {
        // A WAL frame: a 2-byte header, then its page in the same sector and the next.
        let events = [open(Wal), dir(), put(1, Wal, 0, b"hh"), put(2, Wal, 2, b"pppppp"), put(3, Acks, 0, b"a")];
        let m = model(&events, &[3], SMALL);
        let wals = files(&m, 3, Wal);
        assert!(!wals.iter().flatten().any(|w| w.len() == 8 && &w[2..] == b"pppppp" && &w[..2] != b"hh"), "{wals:?}");
    }

    #[test]
    fn the_bound_caps_the_states_of_a_point() {
        // Six unsynced overwrites of six sectors: none grows the file or tears.
        let mut events = vec![open(Database), dir(), put(1, Database, 0, &[b'a'; 24]), sync(2, Database)];
        events.extend((0..6).map(|i| put(3 + i, Database, 4 * i, b"bbbb")));
        events.push(put(9, Acks, 0, b"a"));
        let explored = |bound: Bound| model(&events, &[9], bound).explored[0];
        // Seven in-order prefixes, then one lost write per candidate: the
        // five before the last, or the window's.
        assert_eq!(explored(Bound { out_of_order: 0, ..SMALL }), 7);
        assert_eq!(explored(Bound { window: 2, ..SMALL }), 7 + 2);
        assert_eq!(explored(SMALL), 7 + 5);
        assert_eq!(explored(Bound { out_of_order: 2, ..SMALL }), 7 + 5 + 10);
        let m = model(&events, &[9], Bound { out_of_order: 2, ..SMALL });
        assert!(at(&m, 9).states.len() <= m.explored[0]);
    }

    #[test]
    fn every_state_names_its_rule() {
        let events = [
            open(Database),
            dir(),
            put(1, Database, 0, b"aaaaaaaa"),
            put(2, Database, 8, b"bbbbbbbb"),
            put(3, Acks, 0, b"a"),
            sync(4, Database),
        ];
        let m = model(&events, &[4], SMALL);
        let rules = rules(&m, 4);
        assert_eq!(rules.iter().filter(|r| r.is_empty()).count(), 1, "only the process crash's state lost nothing");
        assert!(rules.iter().all(|r| r.is_empty() || r.contains("was never made durable by")), "{rules:#?}");
        assert!(rules.contains(
            &"write of 8 bytes to the database at offset 8 at #2 (torn: 1 of 2 sectors reached the disk; the space it \
              grew the file by holds garbage) was never made durable by the fsync of the database at #4, which never ran"
                .to_string()
        ));
        assert!(
            rules
                .iter()
                .any(|r| r
                    .contains("(reordered and torn: 1 of 2 sectors reached the disk, the operation after it whole"))
        );
    }

    #[test]
    fn the_in_order_states_and_their_rules_are_all_there() {
        let events = [
            open(Database),
            put(1, Database, 0, b"aaaaaaaa"),
            sync(2, Database),
            dir(),
            open(FileKind::Journal),
            put(3, FileKind::Journal, 0, b"jjjjjj"),
            put(4, Database, 0, b"bbbbbbbbbbbb"),
            ev(Some(5), Effect::Unlink { file: FileKind::Journal }),
            put(6, Acks, 0, b"a"),
        ];
        let wanted: Vec<u64> = (1..=7).collect();
        let (power, torn) = (power::model(&events, &wanted), model(&events, &wanted, SMALL));
        for (p, t) in power.points.iter().zip(&torn.points) {
            // Power may hold one store twice (reached at two instants of the
            // point); torn holds it once, with the rule of one of them.
            let power_rules = |files: &Files| {
                let same = p.states.iter().filter(|(id, _)| power.states[*id].files.store().eq(files.store()));
                same.map(|(_, d)| power.dropped(d)).collect::<Vec<_>>()
            };
            for (id, _) in &p.states {
                let files = &power.states[*id].files;
                let same = t.states.iter().find(|(tid, _)| torn.states[*tid].files.store().eq(files.store()));
                let (_, d) = same.unwrap_or_else(|| panic!("point {}: an in-order state is missing", p.point));
                assert!(power_rules(files).contains(&torn.dropped(d)), "point {}: another rule", p.point);
            }
        }
    }
}
