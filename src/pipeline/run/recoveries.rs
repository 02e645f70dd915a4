//! The run's recoveries, by the store's bytes: each distinct crash state
//! recovered once per run, so that sweeps of other kill modes, legs and
//! cells that reach a byte-identical store take its recovery rather than
//! pay two more processes for it ([`crate::pipeline::judge::driver`] asks it first).
//!
//! Crash model and clause: unchanged; this is a fast path. A recovery
//! (the cell's recovery step if any, then `dump`, twice) depends on the
//! store's files (the ack journal aside), and beyond them on what the key
//! also holds: the launcher that ran it (exec'd, forked, warm: the plain
//! path that confirms a fire never takes a fast path's recovery), the
//! leg's requested journal mode and synchronous level (the config home the
//! child opens the store with), the recovery step with its arguments (the
//! mutant among them) and the run's mutant. Whatever else a judgement
//! depends on (the cell's check, the acks, the census's leg audit) is
//! applied after the recovery, to each state on its own. Only recoveries
//! that succeeded are kept: a deadline or a failed pass is said by the
//! state that met it, never lent to another. The store is keyed by two
//! independently keyed 64-bit hashes of its bytes (a collision in 128
//! bits is not a risk a run can meet), so the cache does not keep the
//! stores' pages alive for the whole run.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::{Arc, Mutex};

use crashcells_protocol::{DatabaseConfig, OpArgs};

use crate::applied::Applied;
use crate::crashstate::Files;
use crate::crashstate::pages::Page;
use crate::pipeline::outcome::Outcome;
use crate::recovery::Recovered;
use crate::sqlitelib::Library;

/// A recovery of one distinct store, shared by the states that hold it.
pub type Recovery = Result<Recovered, Outcome>;

/// What a recovery depends on besides the store: see the module's words.
/// Typed, so that two settings are equal when what they hold is, not when
/// their debug text happens to be.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Setting {
    /// The launcher as the run names it: exec, fork server, warm pool.
    pub launcher: String,
    /// The leg's configuration: applied, or requested (its config home).
    pub config: Configured,
    /// The cell's recovery step with its arguments, if it has one.
    pub step: Option<OpArgs>,
    pub mutant: Option<String>,
    /// The SQLite library the leg puts under its child: the same bytes
    /// recovered by another library may come out otherwise.
    pub library: Option<Library>,
}

/// The configuration a recovery is keyed by ([`crate::pipeline::Context::configured`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Configured {
    /// What the leg's child applied, as the leg's probe heard it.
    Applied(Applied),
    /// What the leg asked for: its config home.
    Requested(DatabaseConfig),
}

/// A store's bytes, as the cache knows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bytes(u64, u64);

/// Pages digested so far, by address: each holds its page, so that no
/// address it knows can be another page's.
#[derive(Default)]
pub struct Digests(HashMap<usize, (Page, (u64, u64))>);

impl Digests {
    fn of(&mut self, page: &Page, k0: &RandomState, k1: &RandomState) -> (u64, u64) {
        let at = Arc::as_ptr(page) as *const u8 as usize;
        self.0.entry(at).or_insert_with(|| (Arc::clone(page), (k0.hash_one(&page[..]), k1.hash_one(&page[..])))).1
    }
}

/// The run's recoveries; clones share them.
#[derive(Clone, Default)]
pub struct Recoveries(Arc<Inner>);

#[derive(Default)]
struct Inner {
    keys: (RandomState, RandomState),
    known: Mutex<HashMap<(Bytes, Setting), Arc<Recovery>>>,
}

impl Recoveries {
    /// The key of `files`' store: two hashes of its bytes under two keys,
    /// each page digested once per `memo` (the states of one recording
    /// share most of their pages: a WAL sweep's hundreds of states are not
    /// hundreds of times its megabytes to hash).
    pub fn bytes(&self, files: &Files, memo: &mut Digests) -> Bytes {
        let (k0, k1) = &self.0.keys;
        let (mut h0, mut h1) = (k0.build_hasher(), k1.build_hasher());
        for (kind, pages) in files.store() {
            (kind, pages.len()).hash(&mut h0);
            (kind, pages.len()).hash(&mut h1);
            for page in pages.shared() {
                let (d0, d1) = memo.of(page, k0, k1);
                h0.write_u64(d0);
                h1.write_u64(d1);
            }
        }
        Bytes(h0.finish(), h1.finish())
    }

    /// The recovery of the store `bytes` under `setting`, if the run has one.
    pub fn get(&self, bytes: Bytes, setting: &Setting) -> Option<Arc<Recovery>> {
        self.0.known.lock().expect("no thread panics holding the recoveries").get(&(bytes, setting.clone())).cloned()
    }

    /// Keeps a recovery if it succeeded.
    pub fn put(&self, bytes: Bytes, setting: &Setting, recovered: Arc<Recovery>) {
        if recovered.is_err() {
            return;
        }
        let mut known = self.0.known.lock().expect("no thread panics holding the recoveries");
        known.entry((bytes, setting.clone())).or_insert(recovered);
    }
}

impl std::fmt::Debug for Recoveries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.known.lock().map_or(0, |k| k.len());
        write!(f, "Recoveries({n})")
    }
}

/// A successful recovery of an empty store, for tests of what keeps one.
#[cfg(test)]
pub fn recovered() -> Arc<Recovery> {
    let dump: crashcells_protocol::Dump =
        serde_json::from_str(r#"{"protocol":2,"integrity":"ok","sessions":[],"messages":[]}"#).unwrap();
    Arc::new(Ok(Recovered { dump, nondeterministic: None, missing_db: false, deliveries: Vec::new() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::{At, Effect};
    use crate::kill::syscall::FileKind;
    use crashcells_protocol::JournalMode;

    fn files(db: &[u8], acks: &[u8]) -> Files {
        let mut f = Files::default();
        f.apply(&Effect::Write { file: FileKind::Database, at: At::Offset(0), data: db.to_vec() });
        f.set_acks(acks);
        f
    }

    fn setting(leg: &str) -> Setting {
        let journal_mode = Some(leg.parse::<JournalMode>().unwrap());
        Setting {
            launcher: "exec".into(),
            config: Configured::Requested(DatabaseConfig { journal_mode, synchronous: None }),
            step: None,
            mutant: None,
            library: None,
        }
    }

    #[test]
    fn a_store_is_found_by_its_bytes_under_its_setting_only() {
        let run = Recoveries::default();
        let (a, same, other) = (files(b"page", b"x"), files(b"page", b"xy"), files(b"pagX", b"x"));
        let bytes = |f: &Files| run.bytes(f, &mut Digests::default());
        assert_eq!(bytes(&a), bytes(&same), "the ack journal is not the store");
        assert_ne!(bytes(&a), bytes(&other));
        let mut memo = Digests::default();
        assert_eq!((run.bytes(&a, &mut memo), run.bytes(&other, &mut memo)), (bytes(&a), bytes(&other)), "a memo");
        run.put(bytes(&a), &setting("wal"), recovered());
        assert!(run.get(bytes(&same), &setting("wal")).is_some());
        assert!(run.get(bytes(&other), &setting("wal")).is_none());
        assert!(run.get(bytes(&a), &setting("delete")).is_none(), "another leg's config home");
        let forked = Setting { launcher: "fork server".into(), ..setting("wal") };
        let bundled = Setting { library: Some(Library::Bundled), ..setting("wal") };
        assert!(run.get(bytes(&a), &bundled).is_none(), "another library recovers on its own");
        assert!(run.get(bytes(&a), &forked).is_none(), "another launcher");
        assert!(run.clone().get(bytes(&a), &setting("wal")).is_some(), "clones share the run's");
        let failed = Arc::new(Err(Outcome::Error(crate::pipeline::outcome::Failure::NoKill)));
        run.put(bytes(&other), &setting("wal"), failed);
        assert!(run.get(bytes(&other), &setting("wal")).is_none(), "a failed recovery is not lent");
    }

    /// Two legs that applied one configuration share their recoveries
    /// whatever they asked for; another applied level does not.
    #[test]
    fn a_recovery_is_keyed_by_the_applied_configuration_not_the_leg() {
        let (run, store) = (Recoveries::default(), files(b"page", b"x"));
        let bytes = run.bytes(&store, &mut Digests::default());
        let applied = |level: &str| Applied {
            journal_mode: "wal".into(),
            synchronous: Some(level.into()),
            sqlite_version: "3.54.1".into(),
            sqlite_source_id: None,
            library: None,
        };
        let on = |a: Applied| Setting { config: Configured::Applied(a), ..setting("wal") };
        run.put(bytes, &on(applied("full")), recovered());
        assert!(run.get(bytes, &on(applied("full"))).is_some(), "the default leg's, for the wal leg");
        assert!(run.get(bytes, &on(applied("normal"))).is_none(), "another applied level");
        assert!(run.get(bytes, &setting("wal")).is_none(), "a requested config is keyed apart (--every-leg)");
    }
}
