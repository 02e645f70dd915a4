//! The process-crash model: the trial's files as the logged calls leave
//! them, written out as a crash state, and the self-check that compares the
//! model with the disk after the recorded run.
//!
//! Crash model: a `SIGKILL` at the entry of kill point N leaves the page
//! cache intact, so the files hold exactly what the calls before N wrote:
//! state N is the log's events before N applied, in order, to the empty
//! trial folder. A state is the store's whole folder: the database, its
//! `-journal` and `-wal`, every other file the store keeps directly beside
//! them (a marker, a manifest, blobs: [`FileKind::Other`]) and the ack
//! journal. The `-shm` is not part of a state: SQLite writes it through
//! `mmap` (no system call to log) and a fresh connection rebuilds it from
//! the WAL.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::log::{At, Effect, Event};
use super::pages::{Pages, Sought};
use crate::dbfiles::sibling;
use crate::kill::syscall::FileKind;

/// The files of a crash state that the model follows, by kind; the ack
/// journal among them.
///
/// The seam for a trial's other files (a transport file of cells 4 and 5,
/// say): one more [`FileKind`] in [`crate::kill::syscall::Targets`] (so its
/// calls are logged), here, and in [`Names::of`]; the process model then
/// keeps it like any file, and [`super::power::OUTSIDE_POWER_LOSS`] lists it
/// beside the ack journal if, like the acks, it stands for what the outside
/// world saw and no power loss takes back.
pub const MODELLED: [FileKind; 5] =
    [FileKind::Database, FileKind::Journal, FileKind::Wal, FileKind::Acks, FileKind::Transport];

/// The trial's files as a crash left them: each present file's bytes, in
/// pages a clone shares ([`Pages`]): a state costs what its calls changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Files {
    files: BTreeMap<FileKind, Pages>,
    /// Counts changes to the store's files (not the acks): two states with
    /// one version hold the same store, so one recovery serves both.
    version: u64,
}

impl Files {
    /// The files after `events`, from an empty folder.
    pub fn after(events: &[Event]) -> Files {
        let mut f = Files::default();
        for e in events {
            f.apply(&e.effect);
        }
        f
    }

    /// The bytes of `kind`, if the file is present.
    pub fn get(&self, kind: FileKind) -> Option<Vec<u8>> {
        self.files.get(&kind).map(Pages::to_vec)
    }

    /// The length of `kind`, if the file is present: cheaper than its bytes.
    pub fn len_of(&self, kind: FileKind) -> Option<usize> {
        self.files.get(&kind).map(Pages::len)
    }

    /// Puts `acks` in as the ack journal (a power state's acks are the
    /// process crash's, not the model's).
    pub fn set_acks(&mut self, acks: &[u8]) {
        self.files.insert(FileKind::Acks, Pages::from_slice(acks));
    }

    /// Puts `bytes` in as the transport (a power state's transport is the
    /// process crash's: the provider's log is not on this machine); none
    /// when nothing was ever sent.
    pub fn set_transport(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            Some(b) => self.files.insert(FileKind::Transport, Pages::from_slice(b)),
            None => self.files.remove(&FileKind::Transport),
        };
    }

    /// The store's other files present ([`FileKind::Other`]), in order.
    pub fn sidecars(&self) -> impl Iterator<Item = FileKind> + '_ {
        self.files.keys().copied().filter(|k| matches!(k, FileKind::Other(_)))
    }

    /// The store's files alone, to tell two states' stores apart.
    pub fn store(&self) -> impl Iterator<Item = (&FileKind, &Pages)> {
        self.files.iter().filter(|(k, _)| **k != FileKind::Acks)
    }

    /// Whether any of the store's files holds `sought`'s needle, a name: a
    /// state whose files name the folder they were written in (SQLite's hot
    /// journal names its super-journal by absolute path) is recovered
    /// there. Each page met before in `sought` is answered from it
    /// ([`Pages::contains_sought`]).
    pub fn names(&self, sought: &mut Sought) -> bool {
        self.store().any(|(_, pages)| pages.contains_sought(sought))
    }

    /// A hash of the store's bytes (the ack journal aside): two states that
    /// hold one store hash alike, so a map by it finds a store seen before.
    pub fn store_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.store().for_each(|f| f.hash(&mut h));
        h.finish()
    }

    /// The store's version: see the field.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Applies one call's effect. The `-shm` and the syncs change nothing here.
    pub fn apply(&mut self, effect: &Effect) {
        let touched = match effect {
            Effect::Write { file, at, data } => self.write(*file, *at, data),
            Effect::Truncate { file, len } => self.file(*file).map(|f| f.resize(*len as usize)).is_some(),
            Effect::Open { file, create, truncate } => self.open(*file, *create, *truncate),
            Effect::Unlink { file } => self.files.remove(file).is_some(),
            Effect::Rename { from, to } => self.rename(*from, *to),
            // A failed call never ran: the files are as they were.
            Effect::Sync { .. } | Effect::SyncDir | Effect::Unread { .. } | Effect::Failed { .. } => false,
        };
        let store = |f: &FileKind| !matches!(f, FileKind::Acks);
        if touched && effect_files(effect).iter().any(store) {
            self.version += 1;
        }
    }

    /// The bytes of `kind` to change, created if missing (a write reaches a
    /// file the driver saw opened); `None` for a file the model does not keep.
    fn file(&mut self, kind: FileKind) -> Option<&mut Pages> {
        modelled(kind).then(|| self.files.entry(kind).or_default())
    }

    fn write(&mut self, kind: FileKind, at: At, data: &[u8]) -> bool {
        let Some(f) = self.file(kind) else { return false };
        let offset = match at {
            At::Offset(o) => o as usize,
            At::End => f.len(),
        };
        f.write(offset, data);
        true
    }

    fn open(&mut self, kind: FileKind, create: bool, truncate: bool) -> bool {
        if !modelled(kind) || (!create && !self.files.contains_key(&kind)) {
            return false;
        }
        let f = self.files.entry(kind).or_default();
        if truncate {
            f.resize(0);
        }
        true
    }

    fn rename(&mut self, from: Option<FileKind>, to: Option<FileKind>) -> bool {
        let moved = from.and_then(|f| self.files.remove(&f));
        match (to, moved) {
            (Some(to), Some(bytes)) if modelled(to) => {
                self.files.insert(to, bytes);
            }
            // A file the model does not follow replaces one it does: its
            // bytes are unknown, so the self-check will disagree.
            (Some(to), None) => {
                self.files.remove(&to);
            }
            _ => {}
        }
        true
    }

    /// Writes the state into `dir` as the trial's files are named beside
    /// `db` (only `db`'s file name is used): the store's files and the ack
    /// journal `acks`. Returns the database's path in `dir`.
    pub fn write_to(&self, dir: &Path, names: &Names) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        for (kind, bytes) in &self.files {
            write_file(&dir.join(names.of(*kind)), bytes)?;
        }
        Ok(dir.join(&names.db))
    }

    /// Writes the store's files alone (not the ack journal: recovery never
    /// reads it) into `dir`, the database named `db`, every other file of
    /// the store's under its own name beside it: a state's folder is its
    /// own, as the store laid it out. Returns the database's path.
    pub fn write_store_to(&self, dir: &Path, db: &str) -> std::io::Result<PathBuf> {
        let names = Names::store(&dir.join(db));
        for (kind, bytes) in self.store() {
            write_file(&dir.join(names.of(*kind)), bytes)?;
        }
        Ok(dir.join(db))
    }

    /// The store a real crash left in `dir` (a killed trial's folder, its
    /// files named by `names`), read as a state: its database, `-journal`,
    /// `-wal`, transport and every other file of the store's beside them
    /// as they are on disk, a file that is not there absent; not the ack
    /// journal (the store is what recovery reads), the `-shm` (see the
    /// module's words: a first connection resets it) nor the harness's own
    /// files ([`crate::trialdir::is_harness_file`]).
    pub fn read_store(dir: &Path, names: &Names) -> std::io::Result<Files> {
        let mut f = Files::default();
        let kinds = MODELLED.into_iter().filter(|k| *k != FileKind::Acks).chain(sidecars(dir, names)?);
        for kind in kinds {
            match std::fs::read(dir.join(names.of(kind))) {
                Ok(bytes) => {
                    f.files.insert(kind, Pages::from_slice(&bytes));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(f)
    }

    /// Where the model and the disk first differ, for the trial's files in
    /// `dir`; `None` when they agree on every modelled file.
    pub fn differs_from_disk(&self, dir: &Path, names: &Names) -> Option<String> {
        self.differs_from(&Files::from_disk(dir, names))
    }

    /// Where the model and `other` (files read from a disk) first differ.
    pub fn differs_from(&self, other: &Files) -> Option<String> {
        let kinds: std::collections::BTreeSet<FileKind> =
            MODELLED.into_iter().chain(self.files.keys().copied()).chain(other.files.keys().copied()).collect();
        kinds.into_iter().find_map(|kind| difference(kind, self.get(kind).as_deref(), other.get(kind).as_deref()))
    }

    /// The modelled files present in `dir` as `names` names them: a log
    /// that starts from files already there (a parked handoff) applies to
    /// these, and a run's end is compared with them.
    /// A file that cannot be read counts as absent: the comparison then
    /// says where it differs.
    pub fn from_disk(dir: &Path, names: &Names) -> Files {
        let mut files = Files::read_store(dir, names).unwrap_or_default();
        if let Ok(acks) = std::fs::read(dir.join(names.of(FileKind::Acks))) {
            files.set_acks(&acks);
        }
        files
    }

    /// The calls that would make this model's store files (the ack journal
    /// aside) what `other`'s are: each file that differs rewritten whole
    /// (created, emptied, written), each it lacks unlinked. What another
    /// process wrote while the recorded one was stopped, as a log can hold it.
    pub fn effects_to(&self, other: &Files) -> Vec<Effect> {
        let kinds: std::collections::BTreeSet<FileKind> =
            self.files.keys().chain(other.files.keys()).copied().filter(|k| *k != FileKind::Acks).collect();
        let mut effects = Vec::new();
        for kind in kinds {
            match (self.files.get(&kind), other.files.get(&kind)) {
                (Some(mine), Some(theirs)) if mine == theirs => {}
                (_, Some(theirs)) => {
                    effects.push(Effect::Open { file: kind, create: true, truncate: true });
                    if !theirs.is_empty() {
                        effects.push(Effect::Write { file: kind, at: At::Offset(0), data: theirs.to_vec() });
                    }
                }
                (Some(_), None) => effects.push(Effect::Unlink { file: kind }),
                (None, None) => {}
            }
        }
        effects
    }

    /// The store's files alone: the ack journal left out.
    pub fn without_acks(mut self) -> Files {
        self.files.remove(&FileKind::Acks);
        self
    }
}

/// Whether the model keeps a file of `kind`: the wal-indexes (the `-shm`,
/// and an attached database's) aside, all.
pub(crate) fn modelled(kind: FileKind) -> bool {
    !kind.is_index() && (MODELLED.contains(&kind) || matches!(kind, FileKind::Other(_)))
}

/// The store's other files in `dir`: every regular file directly in it that
/// none of `names` names and that is neither the harness's own nor a
/// wal-index.
fn sidecars(dir: &Path, names: &Names) -> std::io::Result<Vec<FileKind>> {
    let known: Vec<String> = [FileKind::Database, FileKind::Journal, FileKind::Wal, FileKind::Shm]
        .into_iter()
        .map(|k| names.of(k))
        .chain([names.acks.clone(), names.transport.clone()])
        .collect();
    let mut out = vec![];
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let theirs = known.contains(&name)
            || crate::trialdir::is_harness_file(&name)
            || crate::kill::syscall::is_index_name(&name);
        if !theirs && entry.file_type()?.is_file() {
            out.push(FileKind::Other(crate::kill::syscall::Sidecar::named(&name)));
        }
    }
    Ok(out)
}

/// Writes `bytes` as the whole of the file at `path`, as `fs::write` does.
fn write_file(path: &Path, bytes: &Pages) -> std::io::Result<()> {
    bytes.write_into(&mut std::fs::File::create(path)?)
}

/// The files an effect names.
fn effect_files(e: &Effect) -> Vec<FileKind> {
    match e {
        Effect::Write { file, .. }
        | Effect::Truncate { file, .. }
        | Effect::Open { file, .. }
        | Effect::Unlink { file }
        | Effect::Sync { file, .. } => vec![*file],
        Effect::Rename { from, to } => from.iter().chain(to).copied().collect(),
        Effect::Failed { effect, .. } => effect_files(effect),
        Effect::SyncDir | Effect::Unread { .. } => vec![],
    }
}

/// How the model's bytes of `kind` differ from the disk's, if they do.
fn difference(kind: FileKind, model: Option<&[u8]>, disk: Option<&[u8]>) -> Option<String> {
    let name = kind.as_str();
    match (model, disk) {
        (None, None) => None,
        (Some(_), None) => Some(format!("the model has a {name} but the disk has none")),
        (None, Some(d)) => Some(format!("the disk has a {name} of {} bytes but the model has none", d.len())),
        (Some(m), Some(d)) if m == d => None,
        (Some(m), Some(d)) => {
            let at = m.iter().zip(d).take_while(|(a, b)| a == b).count();
            Some(format!("the {name} differs at byte {at} (model {} bytes, disk {} bytes)", m.len(), d.len()))
        }
    }
}

/// The names of a trial's files in a folder, from the database's file name
/// and the ack journal's.
#[derive(Clone, Debug)]
pub struct Names {
    pub db: String,
    pub acks: String,
    pub transport: String,
}

impl Names {
    pub fn new(db: &Path, acks: &Path, transport: &Path) -> Names {
        let name = |p: &Path| p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Names { db: name(db), acks: name(acks), transport: name(transport) }
    }

    /// The names of one store among many in a folder: its database's, and
    /// its transport beside it (`s3.db.transport`); no ack journal.
    pub fn store(db: &Path) -> Names {
        let name = db.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Names { transport: format!("{name}.transport"), db: name, acks: String::new() }
    }

    /// Where `db`'s transport is, by these names.
    pub fn transport_path(&self, db: &Path) -> PathBuf {
        db.with_file_name(&self.transport)
    }

    /// The file name of `kind`.
    pub fn of(&self, kind: FileKind) -> String {
        let db = Path::new(&self.db);
        let beside = |suffix| sibling(db, suffix).to_string_lossy().into_owned();
        match kind {
            FileKind::Database => self.db.clone(),
            FileKind::Journal => beside("-journal"),
            FileKind::Wal => beside("-wal"),
            FileKind::Shm => beside("-shm"),
            FileKind::Acks => self.acks.clone(),
            FileKind::Transport => self.transport.clone(),
            FileKind::Other(s) => s.name().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(effect: Effect) -> Event {
        Event { point: None, effect }
    }

    fn write(file: FileKind, at: At, data: &[u8]) -> Event {
        ev(Effect::Write { file, at, data: data.to_vec() })
    }

    /// What another process left (a file changed, one added, one gone)
    /// becomes calls that, applied to the model, give the disk's store
    /// exactly; the ack journal and equal files are left alone.
    #[test]
    fn effects_to_another_store_make_the_model_that_store() {
        let mine = Files::after(&[
            write(FileKind::Database, At::Offset(0), &[1; 5000]),
            write(FileKind::Journal, At::Offset(0), b"hot"),
            write(FileKind::Wal, At::Offset(0), b"same"),
            write(FileKind::Acks, At::End, b"{\"kind\":\"ready\"}\n"),
        ]);
        let theirs = Files::after(&[
            write(FileKind::Database, At::Offset(0), &[2; 3000]),
            write(FileKind::Wal, At::Offset(0), b"same"),
            write(FileKind::Other(crate::kill::syscall::Sidecar::named("store.db.lock")), At::Offset(0), b""),
        ]);
        let effects = mine.effects_to(&theirs);
        assert!(effects.iter().all(|e| !effect_files(e).contains(&FileKind::Acks)), "{effects:?}");
        assert!(!effects.iter().any(|e| effect_files(e).contains(&FileKind::Wal)), "equal files untouched");
        let mut model = mine.clone();
        effects.iter().for_each(|e| model.apply(e));
        assert_eq!(model.without_acks().differs_from(&theirs), None);
        assert!(mine.effects_to(&mine.clone().without_acks()).is_empty(), "the acks aside, nothing differs");
    }

    /// A killed trial's folder read as a state: its store's files as they
    /// are, the ack journal and the `-shm`s left out; written back, the
    /// same bytes.
    #[test]
    fn a_folder_a_crash_left_reads_as_its_store() {
        let dir = tempfile::tempdir().unwrap();
        let names = Names::new(&dir.path().join("store.db"), &dir.path().join("acks"), &dir.path().join("t"));
        let files = [("store.db", "db"), ("store.db-wal", "wal"), ("store.db-shm", "shm"), ("acks", "a")];
        for (name, bytes) in files.into_iter().chain([("more.db", "db"), ("more.db-shm", "shm")]) {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let f = Files::read_store(dir.path(), &names).unwrap();
        let kinds: Vec<FileKind> = f.store().map(|(k, _)| *k).collect();
        let more = FileKind::Other(crate::kill::syscall::Sidecar::named("more.db"));
        assert_eq!(kinds, [FileKind::Database, FileKind::Wal, more], "an attached database's -shm left out too");
        assert_eq!(f.get(FileKind::Acks), None, "the acks are not the store");
        let out = tempfile::tempdir().unwrap();
        let db = f.write_store_to(out.path(), "s0.db").unwrap();
        assert_eq!(std::fs::read(sibling(&db, "-wal")).unwrap(), b"wal");
        assert!(!sibling(&db, "-shm").exists());
    }

    #[test]
    fn writes_truncations_unlinks_and_renames_build_the_files() {
        let events = [
            ev(Effect::Open { file: FileKind::Journal, create: true, truncate: false }),
            write(FileKind::Journal, At::Offset(4), b"ab"),
            write(FileKind::Acks, At::End, b"x\n"),
            write(FileKind::Acks, At::End, b"y\n"),
            write(FileKind::Database, At::Offset(0), b"dbdb"),
            ev(Effect::Truncate { file: FileKind::Database, len: 2 }),
            write(FileKind::Shm, At::Offset(0), b"ignored"),
        ];
        let f = Files::after(&events);
        assert_eq!(f.get(FileKind::Journal), Some(b"\0\0\0\0ab".to_vec()), "a write past the end fills with zeros");
        assert_eq!(f.get(FileKind::Acks), Some(b"x\ny\n".to_vec()));
        assert_eq!(f.get(FileKind::Database), Some(b"db".to_vec()));
        assert_eq!(f.get(FileKind::Shm), None, "the -shm is no part of a state");
        let mut h = f.clone();
        let lost = Effect::Write { file: FileKind::Database, at: At::Offset(0), data: b"XXXX".to_vec() };
        h.apply(&Effect::Failed { effect: Box::new(lost), errno: nix::errno::Errno::ENOSPC });
        assert_eq!(h, f, "a write made to fail never ran");
        let mut g = f.clone();
        g.apply(&Effect::Unlink { file: FileKind::Journal });
        assert_eq!(g.get(FileKind::Journal), None);
        g.apply(&Effect::Rename { from: Some(FileKind::Database), to: Some(FileKind::Wal) });
        assert_eq!((g.get(FileKind::Database), g.get(FileKind::Wal)), (None, Some(b"db".to_vec())));
    }

    #[test]
    fn the_store_version_moves_with_the_store_and_not_with_the_acks_or_syncs() {
        let mut f = Files::default();
        f.apply(&write(FileKind::Database, At::Offset(0), b"a").effect);
        let v = f.version();
        f.apply(&write(FileKind::Acks, At::End, b"x\n").effect);
        f.apply(&Effect::Sync { file: FileKind::Database, data_only: false });
        f.apply(&Effect::SyncDir);
        assert_eq!(f.version(), v);
        f.apply(&Effect::Open { file: FileKind::Journal, create: true, truncate: false });
        assert!(f.version() > v);
    }

    #[test]
    fn a_state_is_written_under_the_trial_names_and_checked_against_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let names = Names::new(Path::new("/t/store.db"), Path::new("/t/acks.ndjson"), Path::new("/t/transport"));
        let f = Files::after(&[
            write(FileKind::Database, At::Offset(0), b"db"),
            write(FileKind::Wal, At::Offset(0), b"wal"),
            write(FileKind::Acks, At::End, b"{}\n"),
        ]);
        let db = f.write_to(dir.path(), &names).unwrap();
        assert_eq!(db, dir.path().join("store.db"));
        assert_eq!(std::fs::read(dir.path().join("store.db-wal")).unwrap(), b"wal");
        assert_eq!(f.differs_from_disk(dir.path(), &names), None);
        std::fs::write(dir.path().join("store.db-wal"), b"waX").unwrap();
        assert_eq!(
            f.differs_from_disk(dir.path(), &names).unwrap(),
            "the wal differs at byte 2 (model 3 bytes, disk 3 bytes)"
        );
        std::fs::write(dir.path().join("store.db-journal"), b"j").unwrap();
        std::fs::write(dir.path().join("store.db-wal"), b"wal").unwrap();
        assert!(f.differs_from_disk(dir.path(), &names).unwrap().contains("the disk has a journal"));
    }
}
