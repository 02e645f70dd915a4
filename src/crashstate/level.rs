//! The synchronous level a recorded run kept, read from its calls, and
//! whether its acknowledged commits were durable against a power loss.
//!
//! Crash model: the power-loss model's ([`super::power`]): a file's data is
//! durable once it is synced, a name once the folder is. Clause: a store
//! that reports a `PRAGMA synchronous` level (its ready record, the leg
//! audit) makes the syncs SQLite documents for that level (pragma.html):
//! - WAL, FULL or EXTRA: an `fsync` of the WAL after each commit's frames;
//! - rollback journal, NORMAL: the journal synced before the database is
//!   written; FULL: twice (its content, then its header); EXTRA in DELETE:
//!   FULL and the folder synced after the journal's unlink.
//!
//! Each acknowledged commit is the calls between one ack and the next
//! (the ready record's line first); the run kept the lowest level any of
//! them kept. A commit is durable at its ack when no operation on the
//! store's files is still pending there, as the power model says, but for
//! one whose loss loses nothing: the WAL's truncation after a checkpoint
//! synced the database ([`super::power::Pending::harmless`]), and the
//! `-shm`s, which no recovery reads ([`super::files::modelled`]).

use crashcells_protocol::{JournalMode, Synchronous};

use super::log::{Effect, Event, Log, place};
use super::power::Disk;
use crate::kill::syscall::FileKind;
use crate::legaudit::Audit;

/// Adds what a recorded run's commits kept to its leg audit (`kept`,
/// `not_durable`), and says, in words, where the store reports a level
/// (`claimed`, its ready record's) that they did not keep: the lie.
pub fn audit_kept(audit: &mut Audit, log: &Log, claimed: Option<&str>) -> Option<String> {
    let mode = audit.effective_mode()?;
    let kept = kept(log, mode);
    audit.kept = kept.level.map(|l| l.to_string());
    audit.not_durable = kept.not_durable.clone();
    let claimed: Synchronous = claimed?.to_ascii_lowercase().parse().ok()?;
    let short = kept.below(claimed, mode)?;
    Some(format!(
        "the store reports synchronous={claimed} in {mode}, but its commits kept {}: the commit acked at #{} made {}; \
         its crash states are no evidence for {mode}/{claimed}",
        kept.level.map_or("less", |l| l.as_str()),
        short.ack,
        short.lacks
    ))
}

/// What a recorded run's commits kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// The lowest level an acknowledged commit kept; `None` where the mode
    /// has no journal file to read it from (MEMORY, OFF) or no commit
    /// wrote the store.
    pub level: Option<Synchronous>,
    /// Each acknowledged commit that wrote the store: its ack's point, the
    /// level it kept, and why not higher.
    pub commits: Vec<Commit>,
    /// The first acknowledged commit that was not durable at its ack, and
    /// the operation still pending there.
    pub not_durable: Option<String>,
}

/// One acknowledged commit, as its calls show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    pub ack: u64,
    pub level: Synchronous,
    /// What its calls lacked for the next level up (empty at the top).
    pub lacks: String,
}

impl Kept {
    /// The first commit that kept less than `claimed`, as the mode lets its
    /// calls tell levels apart ([`distinguishable`]); `None` if every
    /// commit kept it.
    pub fn below(&self, claimed: Synchronous, mode: JournalMode) -> Option<&Commit> {
        let claimed = distinguishable(claimed, mode);
        self.commits.iter().find(|c| distinguishable(c.level, mode) < claimed)
    }
}

/// The level as far as a mode's calls can tell it: in WAL, EXTRA makes the
/// calls FULL makes, and NORMAL the ones OFF makes between checkpoints (a
/// short run need not reach one); in a rollback journal other than DELETE,
/// EXTRA is FULL (EXTRA adds only the folder's sync after an unlink).
pub fn distinguishable(level: Synchronous, mode: JournalMode) -> Synchronous {
    use Synchronous::*;
    match (mode, level) {
        (JournalMode::Wal, Extra) => Full,
        (JournalMode::Wal, Normal) => Off,
        (JournalMode::Truncate | JournalMode::Persist, Extra) => Full,
        _ => level,
    }
}

/// What the run's commits kept in `mode`.
pub fn kept(log: &Log, mode: JournalMode) -> Kept {
    let events = log.ran();
    let mut disk = Disk::names_only();
    let mut out = Kept::default();
    let (mut lines, mut start, mut last_point) = (0u64, 0usize, 0u64);
    for (i, e) in events.iter().enumerate() {
        disk.apply(&e.effect, place(e.point, last_point, events, i));
        last_point = e.point.unwrap_or(last_point);
        let Effect::Write { file: FileKind::Acks, data, .. } = &e.effect else { continue };
        let ended = data.iter().filter(|&&b| b == b'\n').count() as u64;
        if ended == 0 {
            continue;
        }
        lines += ended;
        // The ready record's line is no commit's ack.
        if lines > 1 {
            let ack = e.point.unwrap_or(last_point);
            if out.not_durable.is_none()
                && let Some((_, p)) = disk.pending.iter().find(|(_, p)| !p.harmless)
            {
                out.not_durable =
                    Some(format!("{} was not yet made durable by {} at the ack at #{ack}", p.what, p.needs));
            }
            if let Some((level, lacks)) = commit_level(&events[start..i], mode) {
                out.commits.push(Commit { ack, level, lacks });
            }
        }
        start = i + 1;
    }
    out.level = out.commits.iter().map(|c| c.level).min();
    if mode == JournalMode::Wal && out.level == Some(Synchronous::Normal) && !any_store_sync(events) {
        out.level = Some(Synchronous::Off);
    }
    out
}

/// Whether any call synced one of the store's files or its folder.
fn any_store_sync(events: &[Event]) -> bool {
    events.iter().any(|e| match &e.effect {
        Effect::Sync { file, .. } => !matches!(file, FileKind::Acks | FileKind::Transport),
        Effect::SyncDir => true,
        _ => false,
    })
}

/// The level one commit's calls kept, and what they lacked for the next;
/// `None` for a commit that wrote no journal file (or a mode without one).
fn commit_level(calls: &[Event], mode: JournalMode) -> Option<(Synchronous, String)> {
    match mode {
        JournalMode::Wal => wal_level(calls),
        JournalMode::Delete | JournalMode::Truncate | JournalMode::Persist => rollback_level(calls, mode),
        JournalMode::Memory | JournalMode::Off => None,
    }
}

/// WAL: FULL (or EXTRA) syncs the WAL after the commit's last frame; below
/// that, NORMAL or OFF (told apart by the run as a whole).
fn wal_level(calls: &[Event]) -> Option<(Synchronous, String)> {
    let last_frame = calls.iter().rposition(|e| matches!(&e.effect, Effect::Write { file: FileKind::Wal, .. }))?;
    let synced = calls[last_frame..].iter().any(|e| matches!(&e.effect, Effect::Sync { file: FileKind::Wal, .. }));
    Some(if synced {
        (Synchronous::Full, String::new())
    } else {
        (Synchronous::Normal, "no fsync of the wal after its frames".into())
    })
}

/// A rollback journal: how often the journal was synced before the
/// database was first written (none: OFF, once: NORMAL, twice: FULL), and
/// in DELETE whether the folder was synced after the journal's unlink
/// (EXTRA).
fn rollback_level(calls: &[Event], mode: JournalMode) -> Option<(Synchronous, String)> {
    let wrote = |f: FileKind| move |e: &Event| matches!(&e.effect, Effect::Write { file, .. } if *file == f);
    calls.iter().position(wrote(FileKind::Journal))?;
    // No database write between two acks: no commit ended there (a store
    // that acks before its commit syncs in the next one), nothing to judge.
    let first_db = calls.iter().position(wrote(FileKind::Database))?;
    let syncs =
        calls[..first_db].iter().filter(|e| matches!(&e.effect, Effect::Sync { file: FileKind::Journal, .. })).count();
    let level = match syncs {
        0 => return Some((Synchronous::Off, "no fsync of the journal before the database was written".into())),
        1 => return Some((Synchronous::Normal, "one fsync of the journal before the database was written".into())),
        _ => Synchronous::Full,
    };
    let unlink = calls.iter().rposition(|e| matches!(&e.effect, Effect::Unlink { file: FileKind::Journal }));
    match unlink {
        Some(at) if mode == JournalMode::Delete => {
            if calls[at..].iter().any(|e| matches!(e.effect, Effect::SyncDir)) {
                Some((Synchronous::Extra, String::new()))
            } else {
                Some((level, "no fsync of the folder after the journal's unlink".into()))
            }
        }
        _ => Some((level, String::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crashstate::At;
    use crate::kill::Ordinal;
    use crate::kill::syscall::{Call, Point};

    fn point() -> Point {
        Point { ordinal: Ordinal(0), syscall: Call::Sys("pwrite64"), file: None, offset: None, len: None }
    }

    fn log(effects: Vec<Effect>) -> Log {
        let mut log = Log::default();
        for e in effects {
            let counted = matches!(e, Effect::Write { .. } | Effect::Unlink { .. });
            log.push(counted.then(point), e);
        }
        log
    }

    fn put(file: FileKind) -> Effect {
        Effect::Write { file, at: At::Offset(0), data: vec![1] }
    }

    fn sync(file: FileKind) -> Effect {
        Effect::Sync { file, data_only: false }
    }

    fn open(file: FileKind) -> Effect {
        Effect::Open { file, create: true, truncate: false }
    }

    fn ack() -> Effect {
        Effect::Write { file: FileKind::Acks, at: At::End, data: b"{}\n".to_vec() }
    }

    /// A WAL run: the ready record, then two commits; `synced`: each
    /// commit's frames followed by an fsync of the WAL.
    fn wal(synced: bool) -> Log {
        let mut e = vec![open(FileKind::Acks), ack(), open(FileKind::Wal)];
        for _ in 0..2 {
            e.push(put(FileKind::Wal));
            if synced {
                e.extend([sync(FileKind::Wal), Effect::SyncDir]);
            }
            e.push(ack());
        }
        log(e)
    }

    #[test]
    fn a_wal_commit_without_an_fsync_of_the_wal_keeps_less_than_full_and_is_not_durable() {
        let full = kept(&wal(true), JournalMode::Wal);
        assert_eq!(full.level, Some(Synchronous::Full));
        assert_eq!(full.not_durable, None);
        assert_eq!(full.below(Synchronous::Extra, JournalMode::Wal), None, "EXTRA in WAL makes FULL's calls");
        let off = kept(&wal(false), JournalMode::Wal);
        assert_eq!(off.level, Some(Synchronous::Off), "no sync in the whole run: OFF");
        let below = off.below(Synchronous::Full, JournalMode::Wal).expect("a commit below FULL");
        assert_eq!((below.ack, below.lacks.as_str()), (3, "no fsync of the wal after its frames"));
        assert_eq!(off.below(Synchronous::Normal, JournalMode::Wal), None, "NORMAL is not told from OFF in WAL");
        let why = off.not_durable.expect("not durable");
        assert!(
            why.starts_with("creation of the wal before #2 was not yet made durable by a directory fsync"),
            "{why}"
        );
        assert!(why.ends_with("at the ack at #3"), "{why}");
    }

    /// A DELETE commit: journal written and synced `syncs` times, the
    /// database written and synced, the journal unlinked, the folder synced
    /// after it if `extra`.
    fn delete(syncs: usize, extra: bool) -> Log {
        let mut e = vec![open(FileKind::Acks), ack(), open(FileKind::Database), open(FileKind::Journal)];
        e.push(put(FileKind::Journal));
        e.extend(std::iter::repeat_n(sync(FileKind::Journal), syncs));
        e.push(Effect::SyncDir);
        e.extend([put(FileKind::Database), sync(FileKind::Database), Effect::Unlink { file: FileKind::Journal }]);
        if extra {
            e.push(Effect::SyncDir);
        }
        e.push(ack());
        log(e)
    }

    #[test]
    fn a_rollback_journal_keeps_its_level_by_the_syncs_before_the_database_is_written() {
        let d = JournalMode::Delete;
        assert_eq!(kept(&delete(0, false), d).level, Some(Synchronous::Off));
        assert_eq!(kept(&delete(1, false), d).level, Some(Synchronous::Normal));
        assert_eq!(kept(&delete(2, false), d).level, Some(Synchronous::Full));
        assert_eq!(kept(&delete(2, true), d).level, Some(Synchronous::Extra));
        let full = kept(&delete(2, false), d);
        assert_eq!(full.below(Synchronous::Full, d), None);
        assert_eq!(
            full.below(Synchronous::Extra, d).map(|c| c.lacks.as_str()),
            Some("no fsync of the folder after the journal's unlink")
        );
        let lie = kept(&delete(0, false), d);
        assert_eq!(lie.below(Synchronous::Full, d).map(|c| c.ack), Some(5));
        // FULL leaves the unlink pending at the ack; EXTRA syncs it.
        let why = full.not_durable.expect("the unlink is pending");
        assert!(why.starts_with("unlink of the journal at #4 was not yet made durable by a directory fsync"), "{why}");
        assert_eq!(kept(&delete(2, true), d).not_durable, None);
        // In TRUNCATE and PERSIST, EXTRA makes FULL's calls.
        assert_eq!(
            kept(&delete(2, false), JournalMode::Truncate).below(Synchronous::Extra, JournalMode::Truncate),
            None
        );
    }

    #[test]
    fn an_ack_before_its_commit_is_judged_by_the_commit_not_by_the_ack() {
        // Acked with the journal written, then committed: the commit's
        // syncs fall after the ack, in the next pair of acks.
        let mut e = vec![open(FileKind::Acks), ack(), open(FileKind::Database), open(FileKind::Journal)];
        e.extend([put(FileKind::Journal), ack(), sync(FileKind::Journal), sync(FileKind::Journal)]);
        e.extend([put(FileKind::Database), Effect::Unlink { file: FileKind::Journal }, put(FileKind::Journal), ack()]);
        assert_eq!(kept(&log(e), JournalMode::Delete).level, Some(Synchronous::Full));
    }

    /// A WAL commit at FULL whose store then checkpoints with `TRUNCATE`:
    /// frames, the WAL synced (the folder with it, its first time), the
    /// checkpoint's copy into the database and its sync (`db_synced`), the
    /// WAL truncated to 0 bytes and never synced again before the ack.
    fn wal_truncated(db_synced: bool) -> Vec<Effect> {
        let mut e = vec![open(FileKind::Acks), ack(), open(FileKind::Database), open(FileKind::Wal)];
        for _ in 0..2 {
            e.extend([put(FileKind::Wal), sync(FileKind::Wal), Effect::SyncDir, put(FileKind::Database)]);
            if db_synced {
                e.push(sync(FileKind::Database));
            }
            e.extend([Effect::Truncate { file: FileKind::Wal, len: 0 }, ack()]);
        }
        e
    }

    #[test]
    fn a_truncation_of_the_wal_after_a_checkpoint_synced_the_database_is_no_loss() {
        let wal = JournalMode::Wal;
        assert_eq!(kept(&log(wal_truncated(true)), wal).not_durable, None);
        // No sync of the database (a checkpoint at synchronous=OFF): the
        // frames the truncation drops may be nowhere durable.
        let why = kept(&log(wal_truncated(false)), wal).not_durable.expect("a loss");
        assert!(why.starts_with("write of 1 byte to the database"), "{why}");
        // A frame after the checkpoint's syncs: the truncation is a loss.
        let mut e = wal_truncated(true);
        let truncation = e.len() - 2;
        e.insert(truncation, put(FileKind::Wal));
        let why = kept(&log(e), wal).not_durable.expect("a loss");
        assert!(why.starts_with("write of 1 byte to the wal"), "{why}");
        // A failed sync between: so is it.
        let mut e = wal_truncated(true);
        let failed = Effect::Failed { effect: Box::new(sync(FileKind::Journal)), errno: nix::errno::Errno::EIO };
        e.insert(e.len() - 2, failed);
        let why = kept(&log(e), wal).not_durable.expect("a loss");
        assert!(why.starts_with("truncation of the wal to 0 bytes"), "{why}");
    }

    #[test]
    fn a_rename_never_synced_is_still_noted_beside_a_harmless_truncation_and_a_wal_index() {
        use crate::kill::syscall::Sidecar;
        let (tmp, body) = (FileKind::Other(Sidecar::named("body.tmp")), FileKind::Other(Sidecar::named("body")));
        let shm = FileKind::Other(Sidecar::named("attached.db-shm"));
        assert!(shm.is_index() && FileKind::Shm.is_index() && !body.is_index());
        let mut e = wal_truncated(true);
        let last = e.len() - 1;
        // Before the last ack: an attached database's wal-index truncated,
        // the main one written, then no loss; the body renamed, a loss.
        e.splice(last..last, [open(shm), Effect::Truncate { file: shm, len: 0 }, put(FileKind::Shm)]);
        assert_eq!(kept(&log(e.clone()), JournalMode::Wal).not_durable, None, "no loss yet");
        let last = e.len() - 1;
        let rename = Effect::Rename { from: Some(tmp), to: Some(body) };
        e.splice(last..last, [open(tmp), put(tmp), sync(tmp), Effect::SyncDir, rename]);
        let why = kept(&log(e), JournalMode::Wal).not_durable.expect("the rename is a loss");
        assert!(why.starts_with("rename of the body.tmp to the body before #"), "{why}");
        assert!(why.contains("not yet made durable by a directory fsync"), "{why}");
    }

    #[test]
    fn a_mode_without_a_journal_file_and_a_run_without_commits_keep_no_level() {
        assert_eq!(kept(&delete(2, false), JournalMode::Memory).level, None);
        assert_eq!(kept(&log(vec![open(FileKind::Acks), ack()]), JournalMode::Wal), Kept::default());
    }
}
