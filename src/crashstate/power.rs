//! The power-loss model: what the disk holds when the power goes at a crash
//! point, from the same log as the process crashes.
//!
//! Crash model (docs/DESIGN.md, "Power loss"): at a crash instant the disk
//! holds
//! - each file's data as of its last `fsync`/`fdatasync` (data never synced
//!   is lost: a file never synced is empty);
//! - each name (creation, unlink, rename) as of the last `fsync` of the
//!   trial's folder: a name never made durable is missing, an unlink never
//!   made durable did not happen (the file comes back with its last synced
//!   data);
//! - and, as further states, every in-order prefix of the operations not yet
//!   durable (writes, truncations, creations, unlinks, renames since the
//!   sync that would have made them durable) on top of that.
//!
//! The ack journal is outside the power loss: it stands for what the world
//! was told, so it is the process crash's at that instant. Reordering beyond
//! the in-order prefixes and torn writes are the torn model's
//! ([`super::torn`]).
//!
//! A sync that fault injection made fail ([`Effect::Failed`]) takes the
//! writes it was to make durable for lost, for good (Linux, and "Can
//! Applications Recover from fsync Failures?", USENIX ATC 2020: the kernel
//! marks the pages it could not write back clean, so no later sync writes
//! them), unless a later write to the same sector dirties its page again
//! and so carries their bytes to the disk ([`FailedSync`]).

use std::collections::BTreeMap;

use super::files::{Files, modelled};
use super::image::{apply_data, carry, sectors_of, write};
use super::log::{At, Effect, Event, next_points, place};
use super::sectors::SECTOR;
use crate::kill::syscall::FileKind;

/// Files that no power loss takes back: they stand for what the outside
/// world was told (the ack journal) or did (the transport: a provider's log
/// of deliveries, not on this machine), so a power state keeps them as the
/// process crash at the same instant left them.
pub const OUTSIDE_POWER_LOSS: [FileKind; 2] = [FileKind::Acks, FileKind::Transport];

/// An operation not yet durable at some instant, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// What the operation did, with its place: `#57`, or `before #58` for
    /// a call that is no kill point.
    pub what: String,
    /// What would have made it durable.
    pub needs: String,
    /// Losing it loses nothing: a truncation of the WAL to 0 bytes after a
    /// checkpoint synced every frame into the database ([`Checkpoint`]).
    /// The power states still hold it pending (with and without it); only
    /// the level audit's durability note passes over it.
    pub harmless: bool,
}

impl Pending {
    /// The rule that dropped it: "unlink of the journal at #57 was never
    /// made durable by a directory fsync".
    pub fn rule(&self) -> String {
        format!("{} was never made durable by {}", self.what, self.needs)
    }
}

/// How far the WAL's frames are in the durable database, as the calls since
/// the WAL's last write show it.
///
/// Why a truncation of the WAL to 0 bytes at [`Checkpoint::Synced`] is
/// harmless: SQLite truncates the WAL so (a `TRUNCATE` checkpoint) only
/// once a checkpoint has copied every frame into the database, and the
/// checkpoint syncs the WAL before it copies and the database after it
/// (wal.c, `walCheckpoint`). With no write to the WAL since those two
/// syncs, the durable WAL holds every committed frame and the durable
/// database the same pages. A power loss leaves the truncation either
/// undone (the WAL's frames, whose pages recovery reads as the database
/// already holds them) or done (an empty WAL beside that database): the
/// same store either way. With a sync that failed in between, or a frame
/// written after, or no sync of the database (`synchronous=OFF`), the
/// frames may not all be durable, and the truncation stays a loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Checkpoint {
    /// A write to the WAL (or a failed sync) since its frames were last
    /// made durable.
    #[default]
    Unsynced,
    /// The WAL synced since its last write.
    WalSynced,
    /// Then the database synced too: every frame is in it, durably.
    Synced,
}

impl Checkpoint {
    /// The stage after `effect`.
    fn after(self, effect: &Effect) -> Checkpoint {
        match effect {
            Effect::Write { file: FileKind::Wal, .. } | Effect::Failed { .. } => Checkpoint::Unsynced,
            Effect::Sync { file: FileKind::Wal, .. } if self == Checkpoint::Unsynced => Checkpoint::WalSynced,
            Effect::Sync { file: FileKind::Database, .. } if self == Checkpoint::WalSynced => Checkpoint::Synced,
            _ => self,
        }
    }
}

/// What a failed `fsync`/`fdatasync` (fault injection's `EIO`) does to the
/// writes it was to make durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailedSync {
    /// Linux (the ATC 2020 study saw it on ext4, XFS and Btrfs): the
    /// kernel marks the pages it could not write back clean, so
    /// those writes are lost for good, and a later successful sync does not
    /// write them. A later write to one of their sectors dirties its page
    /// again, and the page's cached bytes, theirs among them, reach the
    /// disk with it (sectors of [`SECTOR`] bytes, the page cache's unit).
    #[default]
    Lost,
    /// The failed sync taken as never run: its writes stay pending, and a
    /// later sync makes them durable (what an application that retries a
    /// failed fsync assumes). Only to tell which states a failure adds
    /// ([`super::failed`]).
    Pending,
}

/// One power-loss state: the store's files (the acks are added per point).
#[derive(Clone, Debug)]
pub struct PowerState {
    pub files: Files,
    /// Its epoch (the durable base it was built on) and how many pending
    /// operations reached the disk.
    pub epoch: usize,
    pub reached: usize,
}

/// The operations a power state dropped: `pending[from..to]` of its epoch,
/// after `Model::causes[causes.0..causes.1]` (the writes the torn model
/// tore or reordered, [`super::torn`]; none in the in-order model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub epoch: usize,
    pub from: usize,
    pub to: usize,
    pub causes: (usize, usize),
}

/// The power states a crash at kill point N may leave.
#[derive(Clone, Debug)]
pub struct AtPoint {
    pub point: u64,
    /// The ack journal at N (a process crash's).
    pub acks: Vec<u8>,
    /// The transport at N (a process crash's), if anything was ever sent.
    pub transport: Option<Vec<u8>>,
    /// How many of [`Model::lost`] a failed sync had dropped before N: every
    /// state of N lost them too.
    pub lost: usize,
    /// Indices into [`Model::states`], ascending (the torn model: in its
    /// check order, backwards), each with what the power loss dropped to
    /// leave it (the pending operations that did not reach the disk, at the
    /// latest instant of the point that could leave it).
    pub states: Vec<(usize, Dropped)>,
}

/// Every power state of a log, and which of them each kill point may leave.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub states: Vec<PowerState>,
    pub points: Vec<AtPoint>,
    /// Per epoch, its pending operations (the list only grows in an epoch).
    pub epochs: Vec<Vec<Pending>>,
    /// The torn model's torn or reordered writes, each with its rule (see
    /// [`Dropped::causes`]); empty in the in-order model.
    pub causes: Vec<Pending>,
    /// The torn model: per point of `points`, how many states it built
    /// there before identical ones were merged; empty in the in-order model.
    pub explored: Vec<usize>,
    /// The writes failed syncs dropped for good ([`FailedSync::Lost`]),
    /// first to last, each with its rule; empty for a log without a failure.
    pub lost: Vec<Pending>,
}

impl Model {
    /// The operations a state of a point dropped, first to last: the torn
    /// or reordered writes first (the cause), then the ones after them.
    pub fn dropped(&self, d: &Dropped) -> Vec<Pending> {
        let causes = self.causes[d.causes.0..d.causes.1].iter();
        causes.chain(&self.epochs[d.epoch][d.from..d.to]).cloned().collect()
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct Inode {
    data: Vec<u8>,
    pub(super) synced: Vec<u8>,
}

#[derive(Clone, Debug)]
pub(super) enum Op {
    /// A change of an inode's data.
    Data(usize, Effect),
    /// A change of the folder's names: `name` now means inode `to` (`None`: gone).
    Name(FileKind, Option<usize>),
}

/// The power model while the log is read, one event at a time (the torn
/// model reads the log with it too, and varies what it leaves pending).
#[derive(Default)]
pub(super) struct Disk {
    pub(super) inodes: Vec<Inode>,
    names: BTreeMap<FileKind, usize>,
    pub(super) durable: BTreeMap<FileKind, usize>,
    pub(super) pending: Vec<(Op, Pending)>,
    pub(super) acks: Vec<u8>,
    pub(super) transport: Option<Vec<u8>>,
    pub(super) epoch: usize,
    pub(super) failed_sync: FailedSync,
    /// How far the WAL's frames are in the durable database.
    checkpoint: Checkpoint,
    /// Per inode whose writes a failed sync dropped: the bytes, as the
    /// process saw them at the failure, of each sector those writes
    /// touched and no write since has touched (by sector number).
    lost_sectors: BTreeMap<usize, BTreeMap<u64, Vec<u8>>>,
    /// The writes failed syncs dropped, with their rules.
    pub(super) lost: Vec<Pending>,
    /// The files' bytes are not kept, only what is pending and why: what
    /// the level audit ([`super::level`]) reads. Why: keeping them copied
    /// the whole WAL at each of its syncs, which made the audit of a WAL
    /// grown to its checkpoint quadratic (a fifth of a WAL sweep's CPU).
    /// What is pending does not depend on the bytes.
    pub(super) names_only: bool,
}

/// Builds the power states of `events` for each kill point in `wanted`
/// (ascending). A point's crash instants are every moment from the end of
/// the previous point's call to the entry of its own, so that a sync that is
/// no kill point (a directory `fsync`) does not hide the moment before it.
/// The point after the last counted call is the run's end: its instants run
/// from that call to the end of the log. A failed sync loses its writes for
/// good ([`FailedSync::Lost`]).
pub fn model(events: &[Event], wanted: &[u64]) -> Model {
    model_with(events, wanted, FailedSync::Lost)
}

/// [`model`], with a failed sync taken as `failed` says.
pub fn model_with(events: &[Event], wanted: &[u64], failed: FailedSync) -> Model {
    let mut disk = Disk { failed_sync: failed, ..Disk::default() };
    let mut m = Model { epochs: vec![Vec::new()], ..Model::default() };
    let mut built: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut this_point: BTreeMap<usize, Dropped> = BTreeMap::new();
    let end = events.iter().filter_map(|e| e.point).max().unwrap_or(0) + 1;
    let next: Vec<u64> = next_points(events).into_iter().map(|n| n.unwrap_or(end)).collect();
    let mut last_point = 0;
    for (i, e) in events.iter().enumerate() {
        if wanted.binary_search(&next[i]).is_ok() {
            disk.instant(&mut m, &mut built, &mut this_point);
        }
        if let Some(n) = e.point {
            if wanted.binary_search(&n).is_ok() {
                let states = std::mem::take(&mut this_point).into_iter().collect();
                m.points.push(disk.at_point(n, states));
            }
            last_point = n;
        }
        let epoch = disk.epoch;
        disk.apply(&e.effect, place(e.point, last_point, events, i));
        if disk.epoch != epoch {
            m.epochs.push(disk.pending.iter().map(|(_, p)| p.clone()).collect());
        } else {
            let have = m.epochs[epoch].len();
            m.epochs[epoch].extend(disk.pending[have..].iter().map(|(_, p)| p.clone()));
        }
    }
    if wanted.binary_search(&end).is_ok() {
        disk.instant(&mut m, &mut built, &mut this_point);
        let states = this_point.into_iter().collect();
        m.points.push(disk.at_point(end, states));
    }
    m.lost = disk.lost;
    m
}

impl Disk {
    /// A disk that keeps no bytes, only what is pending (the level audit's).
    pub(super) fn names_only() -> Disk {
        Disk { names_only: true, ..Disk::default() }
    }

    pub(super) fn apply(&mut self, effect: &Effect, place: String) {
        let at = if place.starts_with('#') { "at " } else { "" };
        let harmless =
            matches!(effect, Effect::Truncate { file: FileKind::Wal, len: 0 }) && self.checkpoint == Checkpoint::Synced;
        self.checkpoint = self.checkpoint.after(effect);
        let pending = |needs: String| Pending { what: format!("{} {at}{place}", effect.describe()), needs, harmless };
        match effect {
            Effect::Write { file: FileKind::Acks, at, data } => write(&mut self.acks, *at, data),
            Effect::Write { file: FileKind::Transport, at, data } => {
                write(self.transport.get_or_insert_with(Vec::new), *at, data)
            }
            Effect::Write { file, .. } | Effect::Truncate { file, .. } => {
                let Some(&ino) = self.names.get(file).filter(|_| modelled(*file)) else { return };
                if !self.names_only {
                    apply_data(&mut self.inodes[ino].data, effect);
                }
                let needs = format!("an fsync of the {}", file.as_str());
                self.pending.push((Op::Data(ino, effect.clone()), pending(needs)));
            }
            Effect::Open { file: FileKind::Transport, create, .. } => {
                if *create {
                    self.transport.get_or_insert_with(Vec::new);
                }
            }
            Effect::Open { file, create, truncate } => self.open(*file, *create, *truncate, effect, pending),
            Effect::Unlink { file } => {
                if self.names.remove(file).is_some() {
                    self.pending.push((Op::Name(*file, None), pending("a directory fsync".into())));
                }
            }
            Effect::Rename { from, to } => self.rename(*from, *to, pending("a directory fsync".into())),
            Effect::Sync { file, .. } => self.sync(*file),
            Effect::SyncDir => self.sync_dir(),
            Effect::Unread { .. } => {}
            Effect::Failed { effect, errno } => {
                if let (Effect::Sync { file, .. }, FailedSync::Lost) = (&**effect, self.failed_sync) {
                    let why = "Linux marks the pages it could not write clean, and no later fsync writes them";
                    self.lose(
                        *file,
                        format!("the {} {at}{place}, which failed with {errno:?} ({why})", effect.describe()),
                    );
                }
            }
        }
    }

    /// Point `n`'s power states, with what the world was told by then.
    pub(super) fn at_point(&self, n: u64, states: Vec<(usize, Dropped)>) -> AtPoint {
        AtPoint { point: n, acks: self.acks.clone(), transport: self.transport.clone(), lost: self.lost.len(), states }
    }

    /// A sync of `file` failed: its pending writes are lost for good, each
    /// with `needs` as the reason; their sectors' bytes as the process sees
    /// them now are kept, for a later write to one of those sectors to
    /// carry. Truncations stay pending: a size is the inode's, not a page's.
    fn lose(&mut self, file: FileKind, needs: String) {
        let Some(&ino) = self.names.get(&file) else { return };
        let (lost, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(op, _)| matches!(op, Op::Data(i, Effect::Write { .. }) if *i == ino));
        self.pending = kept;
        let data = &self.inodes[ino].data;
        let sectors = self.lost_sectors.entry(ino).or_default();
        for (op, p) in lost {
            if let Op::Data(_, e) = &op {
                for s in sectors_of(e) {
                    let at = (s * SECTOR) as usize;
                    sectors
                        .insert(s, data.get(at..(at + SECTOR as usize).min(data.len())).unwrap_or_default().to_vec());
                }
            }
            self.lost.push(Pending { what: p.what, needs: needs.clone(), harmless: false });
        }
        self.epoch += 1;
    }

    fn open(&mut self, file: FileKind, create: bool, truncate: bool, e: &Effect, p: impl Fn(String) -> Pending) {
        if !modelled(file) || OUTSIDE_POWER_LOSS.contains(&file) {
            return;
        }
        if create && !self.names.contains_key(&file) {
            self.inodes.push(Inode::default());
            let ino = self.inodes.len() - 1;
            self.names.insert(file, ino);
            self.pending.push((Op::Name(file, Some(ino)), p("a directory fsync".into())));
        } else if let Some(&ino) = self.names.get(&file).filter(|_| truncate) {
            self.inodes[ino].data.clear();
            self.pending.push((Op::Data(ino, e.clone()), p(format!("an fsync of the {}", file.as_str()))));
        }
    }

    fn rename(&mut self, from: Option<FileKind>, to: Option<FileKind>, p: Pending) {
        let ino = from.and_then(|f| self.names.remove(&f));
        if let Some(f) = from.filter(|_| ino.is_some()) {
            self.pending.push((Op::Name(f, None), p.clone()));
        }
        if let Some(t) = to.filter(|t| modelled(*t)) {
            match ino {
                Some(i) => self.names.insert(t, i),
                None => self.names.remove(&t),
            };
            self.pending.push((Op::Name(t, ino), p));
        }
    }

    /// The file's data as it is now becomes durable: its pending data
    /// operations leave the list, and a new epoch begins. If a failed sync
    /// lost some of its writes, what becomes durable is its durable bytes
    /// and the operations since, each write carrying the lost sectors it
    /// touches: not the bytes the process sees.
    fn sync(&mut self, file: FileKind) {
        let Some(&ino) = self.names.get(&file) else { return };
        self.inodes[ino].synced = match self.lost_sectors.get_mut(&ino) {
            None => self.inodes[ino].data.clone(),
            Some(lost) => {
                let mut d = self.inodes[ino].synced.clone();
                for (op, _) in &self.pending {
                    if let Op::Data(i, e) = op
                        && *i == ino
                    {
                        carry(&mut d, e, lost);
                        apply_data(&mut d, e);
                    }
                }
                d
            }
        };
        self.pending.retain(|(op, _)| !matches!(op, Op::Data(i, _) if *i == ino));
        self.epoch += 1;
    }

    fn sync_dir(&mut self) {
        self.durable = self.names.clone();
        self.pending.retain(|(op, _)| !matches!(op, Op::Name(..)));
        self.epoch += 1;
    }

    /// One crash instant: every prefix of the pending operations on the
    /// durable base, each state built once across instants and points.
    fn instant(
        &self,
        m: &mut Model,
        built: &mut BTreeMap<(usize, usize), usize>,
        this_point: &mut BTreeMap<usize, Dropped>,
    ) {
        let to = self.pending.len();
        for reached in 0..=to {
            let id = *built.entry((self.epoch, reached)).or_insert_with(|| {
                m.states.push(PowerState { files: self.state(reached), epoch: self.epoch, reached });
                m.states.len() - 1
            });
            this_point.insert(id, Dropped { epoch: self.epoch, from: reached, to, causes: (0, 0) });
        }
    }

    /// The durable base with the first `reached` pending operations applied
    /// (a write carrying the sectors a failed sync lost that it touches).
    fn state(&self, reached: usize) -> Files {
        let mut data: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut names = self.durable.clone();
        let mut lost = self.lost_sectors.clone();
        for (op, _) in &self.pending[..reached] {
            match op {
                Op::Data(ino, e) => {
                    let d = data.entry(*ino).or_insert_with(|| self.inodes[*ino].synced.clone());
                    if let Some(lost) = lost.get_mut(ino) {
                        carry(d, e, lost);
                    }
                    apply_data(d, e);
                }
                Op::Name(file, Some(ino)) => {
                    names.insert(*file, *ino);
                }
                Op::Name(file, None) => {
                    names.remove(file);
                }
            }
        }
        self.files(&names, data)
    }

    /// The files `names` name, each with its bytes in `data` or, if it has
    /// none there, as of its last sync.
    pub(super) fn files(&self, names: &BTreeMap<FileKind, usize>, mut data: BTreeMap<usize, Vec<u8>>) -> Files {
        let mut events = Vec::new();
        for (&file, &ino) in names {
            let bytes = data.remove(&ino).unwrap_or_else(|| self.inodes[ino].synced.clone());
            events.push(Event { point: None, effect: Effect::Open { file, create: true, truncate: false } });
            events.push(Event { point: None, effect: Effect::Write { file, at: At::Offset(0), data: bytes } });
        }
        Files::after(&events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(point: Option<u64>, effect: Effect) -> Event {
        Event { point, effect }
    }

    fn open(file: FileKind) -> Effect {
        Effect::Open { file, create: true, truncate: false }
    }

    fn put(file: FileKind, data: &[u8]) -> Effect {
        Effect::Write { file, at: At::Offset(0), data: data.to_vec() }
    }

    fn sync(file: FileKind) -> Effect {
        Effect::Sync { file, data_only: false }
    }

    /// The database's bytes in each state of a point, `None` for no file.
    fn dbs(m: &Model, point: u64) -> Vec<Option<Vec<u8>>> {
        let at = m.points.iter().find(|p| p.point == point).unwrap();
        at.states.iter().map(|(id, _)| m.states[*id].files.get(FileKind::Database)).collect()
    }

    /// The level audit's disk keeps no bytes, and what it finds pending,
    /// and lost to a failed sync, is the full model's at every call: writes
    /// at offsets and appended, a truncation, syncs of each file, a failed
    /// sync, an unlink, a rename and a folder sync.
    #[test]
    fn a_disk_without_bytes_finds_what_the_full_one_finds_pending() {
        use nix::errno::Errno;
        let (db, wal, journal) = (FileKind::Database, FileKind::Wal, FileKind::Journal);
        let events = [
            ev(None, open(db)),
            ev(None, open(wal)),
            ev(Some(1), put(wal, b"frame one")),
            ev(Some(2), Effect::Write { file: wal, at: At::End, data: b"frame two".to_vec() }),
            ev(Some(3), sync(wal)),
            ev(Some(4), put(db, b"page")),
            ev(Some(5), Effect::Failed { effect: Box::new(sync(db)), errno: Errno::EIO }),
            ev(Some(6), Effect::Truncate { file: wal, len: 0 }),
            ev(Some(7), sync(wal)),
            ev(None, open(journal)),
            ev(Some(8), put(journal, b"header")),
            ev(Some(9), Effect::Rename { from: Some(journal), to: None }),
            ev(Some(10), Effect::Unlink { file: wal }),
            ev(Some(11), Effect::Write { file: FileKind::Acks, at: At::End, data: b"m0\n".to_vec() }),
            ev(Some(12), Effect::SyncDir),
            ev(Some(13), put(db, b"page two")),
        ];
        let (mut full, mut bare) = (Disk::default(), Disk::names_only());
        let mut last = 0;
        for (i, e) in events.iter().enumerate() {
            full.apply(&e.effect, place(e.point, last, &events, i));
            bare.apply(&e.effect, place(e.point, last, &events, i));
            last = e.point.unwrap_or(last);
            let said = |d: &Disk| d.pending.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>();
            assert_eq!(said(&bare), said(&full), "pending after call {i}");
            assert_eq!(bare.lost, full.lost, "lost after call {i}");
            assert_eq!((&bare.acks, bare.epoch), (&full.acks, full.epoch), "after call {i}");
        }
        assert!(full.inodes.iter().any(|n| !n.data.is_empty()), "the full model kept bytes");
        assert!(bare.inodes.iter().all(|n| n.data.is_empty() && n.synced.is_empty()), "no bytes kept");
        assert!(!full.pending.is_empty() && !full.lost.is_empty(), "the log leaves both to compare");
    }

    #[test]
    fn data_never_synced_is_lost_and_a_name_never_synced_is_missing() {
        let events = [
            ev(None, open(FileKind::Database)),
            ev(Some(1), put(FileKind::Database, b"a")),
            ev(Some(2), sync(FileKind::Database)),
            ev(Some(3), put(FileKind::Database, b"b")),
            ev(Some(4), put(FileKind::Acks, b"ack\n")),
        ];
        let m = model(&events, &[1, 2, 3, 4]);
        // At 2 (before the fsync): no name durable, so no file; or the
        // creation reached the disk (empty), or the write did too.
        assert_eq!(dbs(&m, 2), [None, Some(vec![]), Some(b"a".to_vec())]);
        // At 4: the name is still not durable (no directory fsync); with it,
        // the file holds its data as of the fsync, or the write after it.
        assert_eq!(dbs(&m, 4), [None, Some(b"a".to_vec()), Some(b"b".to_vec())]);
        let at4 = m.points.iter().find(|p| p.point == 4).unwrap();
        assert_eq!(at4.acks, b"", "the ack's own write is point 4's call, which has not run");
        let first = &m.dropped(&at4.states[0].1)[0];
        assert_eq!(first.rule(), "creation of the database before #1 was never made durable by a directory fsync");
    }

    #[test]
    fn an_unlink_never_made_durable_brings_the_file_back_with_its_synced_data() {
        let events = [
            ev(None, open(FileKind::Journal)),
            ev(Some(1), put(FileKind::Journal, b"hot")),
            ev(Some(2), sync(FileKind::Journal)),
            ev(None, Effect::SyncDir),
            ev(Some(3), put(FileKind::Journal, b"new")),
            ev(Some(4), Effect::Unlink { file: FileKind::Journal }),
            ev(Some(5), put(FileKind::Acks, b"ack\n")),
        ];
        let m = model(&events, &[5]);
        let at = &m.points[0];
        let journals: Vec<_> = at.states.iter().map(|(id, _)| m.states[*id].files.get(FileKind::Journal)).collect();
        assert_eq!(journals, [Some(b"hot".to_vec()), Some(b"new".to_vec()), None]);
        let rules: Vec<String> = m.dropped(&at.states[1].1).iter().map(Pending::rule).collect();
        assert_eq!(rules, ["unlink of the journal at #4 was never made durable by a directory fsync"]);
    }

    #[test]
    fn a_directory_fsync_that_is_no_kill_point_does_not_hide_the_moment_before_it() {
        let events = [
            ev(None, open(FileKind::Wal)),
            ev(Some(1), put(FileKind::Wal, b"w")),
            ev(Some(2), sync(FileKind::Wal)),
            ev(None, Effect::SyncDir),
            ev(Some(3), put(FileKind::Acks, b"ack\n")),
        ];
        let m = model(&events, &[3]);
        let wals: Vec<_> = m.points[0].states.iter().map(|(id, _)| m.states[*id].files.get(FileKind::Wal)).collect();
        // After the WAL's fsync but before the folder's: the name may be
        // missing; after the folder's fsync the file is there with its data.
        assert!(wals.contains(&None) && wals.contains(&Some(b"w".to_vec())), "{wals:?}");
    }
}
