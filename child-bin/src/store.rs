//! The reference session store: sessions and their messages in one SQLite file.
//!
//! Crash model: the process that holds the store may be killed with `SIGKILL`
//! at any instant. Every write here is one transaction, so that SQLite's
//! journal (rollback or WAL) decides what a crash leaves: a committed
//! transaction survives, an interrupted one vanishes whole. The operations the
//! cells check are `append` (prefix durability), `claim` (consume-once),
//! `rotate` (rotation atomicity), and in the submodules `fork`'s rewinds
//! ([`fork`]: fork determinism) and the outbox of `deliver` and `catch-up`
//! ([`outbox`]: effect exactly-once); recovery and reading back, `dump`,
//! in [`dump`].

mod dump;
pub mod fork;
pub mod outbox;

pub use dump::dump;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crashcells_protocol::{DatabaseConfig, Decision, Synchronous};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use crate::resolver::{linked, resolve};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    parent_session_id TEXT REFERENCES sessions(id),
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    handoff_state TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    -- The message's place in its session, from 0: the store's own order,
    -- which dump reports. Not UNIQUE: a store that numbers outside its write
    -- transaction shows its duplicates to the cells instead of failing.
    position INTEGER NOT NULL,
    timestamp REAL NOT NULL,
    -- 0 once a rewind soft-deleted the message: agent stores keep the tail
    -- of a rewound transcript, out of the live view.
    active INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, position);
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions(parent_session_id);
";

/// How long a connection waits for a lock before `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times a write is retried after `SQLITE_BUSY` outlived the timeout.
const BUSY_RETRIES: u32 = 8;

/// An open store and what its connection reports about itself.
pub struct Store {
    conn: Connection,
    pub decision: Decision,
    /// `PRAGMA journal_mode` as this connection reports it after the resolver applied its choice.
    pub journal_mode: String,
    pub synchronous: Option<Synchronous>,
}

/// Whether the database file's header says WAL (bytes 18 and 19 are 2).
pub fn file_header_is_wal(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header)).is_ok() && header[18] == 2 && header[19] == 2
}

/// The time of a row; a fixed one under the test-only deterministic flag.
fn now() -> f64 {
    if crate::deterministic() {
        return 1_700_000_000.0;
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// Runs `f` and retries it a bounded number of times while SQLite says busy.
pub(crate) fn with_retry<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let mut attempt = 0;
    loop {
        match f() {
            Err(e) if is_busy(&e) && attempt < BUSY_RETRIES => attempt += 1,
            other => return other,
        }
    }
}

/// Sets the busy timeout with the pragma rather than rusqlite's
/// `Connection::busy_timeout`: that one also calls `sqlite3_set_clientdata`,
/// which SQLite only has since 3.44.0, and the `system-sqlite` build must
/// link against older (affected) libraries such as Debian's 3.40.1.
fn set_busy_timeout(conn: &Connection) -> rusqlite::Result<()> {
    let ms = BUSY_TIMEOUT.as_millis();
    conn.query_row(&format!("PRAGMA busy_timeout = {ms}"), [], |_| Ok(()))
}

/// Sets the journal mode; what the connection then reports. The statement
/// is stepped to its end: on a new database the switch to WAL is a write
/// transaction (it writes the header's version bytes) that commits only
/// after the pragma's row was read, so `query_row`, which stops at the row,
/// never sees that commit fail. The connection then stays in a rollback
/// journal while the row said `wal` (found by `--kill fault`: a failed
/// fsync of that commit's journal; docs/DESIGN.md, "Faults").
fn set_journal_mode(conn: &Connection, mode: &str) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA journal_mode={mode}"))?;
    let mut rows = stmt.query([])?;
    let reported: String = match rows.next()? {
        Some(row) => row.get(0)?,
        None => String::new(),
    };
    while rows.next()?.is_some() {}
    Ok(reported)
}

impl Store {
    /// Opens (creating if needed) the store at `path`, steered by `config`
    /// through the resolver.
    pub fn open(path: &Path, config: DatabaseConfig) -> rusqlite::Result<Store> {
        let decision = resolve(config, linked(), file_header_is_wal(path));
        let conn = Connection::open(path)?;
        set_busy_timeout(&conn)?;
        let journal_mode = with_retry(|| set_journal_mode(&conn, &decision.applied.to_string()))?;
        if let Some(level) = decision.synchronous {
            conn.execute_batch(&format!("PRAGMA synchronous={level}"))?;
        }
        let synchronous =
            conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0)).map(Synchronous::from_level)?;
        let store = Store { conn, decision, journal_mode: journal_mode.to_lowercase(), synchronous };
        with_retry(|| store.conn.execute_batch(SCHEMA))?;
        Ok(store)
    }

    /// Mutant `claims-full`: from here on nothing is synced
    /// (`synchronous=OFF`, for speed), while the store goes on reporting
    /// FULL, the level its ready record and a team read it by.
    pub fn claim_full_unsynced(&mut self) -> rusqlite::Result<()> {
        self.conn.execute_batch("PRAGMA synchronous=OFF")?;
        self.synchronous = Some(Synchronous::Full);
        Ok(())
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction, retried while busy.
    /// `before_commit` runs after `body`, inside the transaction; only a
    /// mutant puts anything there.
    pub(crate) fn immediate<T>(
        &mut self,
        mut body: impl FnMut(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
        before_commit: &mut dyn FnMut(),
    ) -> rusqlite::Result<T> {
        let mut attempt = 0;
        loop {
            let tx = match self.conn.transaction_with_behavior(TransactionBehavior::Immediate) {
                Err(e) if is_busy(&e) && attempt < BUSY_RETRIES => {
                    attempt += 1;
                    continue;
                }
                other => other?,
            };
            let value = body(&tx)?;
            before_commit();
            match tx.commit() {
                Err(e) if is_busy(&e) && attempt < BUSY_RETRIES => attempt += 1,
                other => return other.map(|()| value),
            }
        }
    }

    /// Writes a vacuumed copy of the database to `path` (the
    /// ignore-short-write mutant's compaction).
    pub fn vacuum_into(&self, path: &Path) -> rusqlite::Result<()> {
        self.conn.execute("VACUUM INTO ?1", [path.to_string_lossy()]).map(drop)
    }

    /// Creates a session (no-op if it exists).
    pub fn create_session(&mut self, id: &str, parent: Option<&str>) -> rusqlite::Result<()> {
        self.immediate(|tx| insert_session(tx, id, parent), &mut || ())
    }

    /// Appends one message to `session`: one transaction that inserts the
    /// message and bumps the session's `message_count`.
    pub fn append(
        &mut self,
        session: &str,
        role: &str,
        content: &str,
        before_commit: &mut dyn FnMut(),
    ) -> rusqlite::Result<i64> {
        self.immediate(|tx| insert_message(tx, session, role, content), before_commit)
    }

    /// Mutant `position-read-outside-txn`: reads `session`'s next position
    /// on its own, then inserts at it in the write transaction. Another
    /// writer can read the same position in between: two messages at one.
    pub fn append_position_read_outside(&mut self, session: &str, role: &str, content: &str) -> rusqlite::Result<()> {
        let next: i64 = with_retry(|| {
            self.conn.query_row(
                "SELECT coalesce(max(position) + 1, 0) FROM messages WHERE session_id=?1",
                [session],
                |r| r.get(0),
            )
        })?;
        self.immediate(
            |tx| {
                tx.execute(
                    "INSERT INTO messages (session_id, role, content, position, timestamp) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![session, role, content, next, now()],
                )?;
                count_message(tx, session)
            },
            &mut || (),
        )
    }

    /// Readies a rotation's parent in one transaction: creates it (unless it
    /// is a continuation rotated again, which exists), adds its work
    /// (`messages`, role and content), and takes the compression lease. The
    /// rotate of version 1 takes these steps one transaction each; with
    /// shapes the reference takes them together, so that a sweep of four
    /// rotations spends its kill points on what the driver judges (the
    /// publication), not on steps it does not check.
    pub fn prepare_rotation(
        &mut self,
        parent: &str,
        create: bool,
        messages: &[(&str, String)],
    ) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                if create {
                    insert_session(tx, parent, None)?;
                }
                insert_messages(tx, parent, messages)?;
                lease(tx, parent)
            },
            &mut || (),
        )
    }

    /// Parks a handoff on `session`: creates it with `handoff_state='pending'`.
    pub fn park(&mut self, session: &str) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                insert_session(tx, session, None)?;
                tx.execute("UPDATE sessions SET handoff_state='pending' WHERE id=?1", [session]).map(drop)
            },
            &mut || (),
        )
    }

    /// Claims the parked handoff with one predicated `UPDATE`; true if this
    /// caller won. The winner records its claim as a message in the same
    /// transaction, so a recovered store shows how many claims landed.
    pub fn claim(&mut self, session: &str, claimant: &str) -> rusqlite::Result<bool> {
        self.immediate(
            |tx| {
                let won = tx.execute(
                    "UPDATE sessions SET handoff_state='running' WHERE id=?1 AND handoff_state='pending'",
                    [session],
                )? == 1;
                if won {
                    insert_message(tx, session, "system", &format!("claimed by {claimant}"))?;
                }
                Ok(won)
            },
            &mut || (),
        )
    }

    /// Mutant `split-claim`: the predicated `UPDATE` commits on its own, and
    /// the winner records its claim in a second transaction. A crash between
    /// the two leaves the handoff `running` with no claim: taken by nobody.
    pub fn claim_split(&mut self, session: &str, claimant: &str) -> rusqlite::Result<bool> {
        let won = self.immediate(
            |tx| {
                tx.execute(
                    "UPDATE sessions SET handoff_state='running' WHERE id=?1 AND handoff_state='pending'",
                    [session],
                )
                .map(|n| n == 1)
            },
            &mut || (),
        )?;
        if won {
            self.immediate(|tx| insert_message(tx, session, "system", &format!("claimed by {claimant}")), &mut || ())?;
        }
        Ok(won)
    }

    /// Mutant `racy-claim`: reads the state, then updates without the
    /// predicate, in two separate statements. Two racers can both read
    /// `pending` before either writes.
    pub fn claim_racy(&mut self, session: &str, claimant: &str) -> rusqlite::Result<bool> {
        let state: Option<String> = with_retry(|| {
            self.conn
                .query_row("SELECT handoff_state FROM sessions WHERE id=?1", [session], |r| r.get(0))
                .optional()
                .map(Option::flatten)
        })?;
        if state.as_deref() != Some("pending") {
            return Ok(false);
        }
        self.immediate(
            |tx| {
                tx.execute("UPDATE sessions SET handoff_state='running' WHERE id=?1", [session])?;
                insert_message(tx, session, "system", &format!("claimed by {claimant}"))?;
                Ok(true)
            },
            &mut || (),
        )
    }

    /// Takes the compression lease on `parent`: a transaction of its own,
    /// as a compressor would before the slow summarising work.
    pub fn take_lease(&mut self, parent: &str) -> rusqlite::Result<()> {
        self.immediate(|tx| lease(tx, parent), &mut || ())
    }

    /// Publishes a rotation in one transaction: the continuation session, its
    /// handoff message, the `carried` messages copied from the parent, and
    /// the parent ended by compression.
    pub fn publish_rotation(&mut self, parent: &str, child: &str, carried: &[(&str, String)]) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                insert_continuation(tx, parent, child)?;
                insert_messages(tx, child, carried)?;
                end_by_compression(tx, parent)
            },
            &mut || (),
        )
    }

    /// Mutant `split-rotation`: ends the parent, commits, then inserts the
    /// continuation in a second transaction. A crash between the two leaves an
    /// orphan: a compression-ended parent without its continuation.
    pub fn publish_rotation_split(
        &mut self,
        parent: &str,
        child: &str,
        carried: &[(&str, String)],
    ) -> rusqlite::Result<()> {
        self.immediate(|tx| end_by_compression(tx, parent), &mut || ())?;
        self.immediate(
            |tx| insert_continuation(tx, parent, child).and_then(|()| insert_messages(tx, child, carried)),
            &mut || (),
        )
    }

    /// Mutant `split-continuation`: the continuation is created, linked to
    /// its parent, and the parent ended, in one transaction; what the
    /// continuation holds (its system message, the carried messages) is
    /// written in a second. A crash between the two leaves a continuation
    /// without what its rotation put in it: the rotation visible in part.
    pub fn publish_rotation_split_continuation(
        &mut self,
        parent: &str,
        child: &str,
        carried: &[(&str, String)],
    ) -> rusqlite::Result<()> {
        self.immediate(
            |tx| insert_session(tx, child, Some(parent)).and_then(|()| end_by_compression(tx, parent)),
            &mut || (),
        )?;
        self.immediate(
            |tx| fill_continuation(tx, parent, child).and_then(|()| insert_messages(tx, child, carried)),
            &mut || (),
        )
    }
}

pub(crate) fn expect_one(rows: usize) -> rusqlite::Result<()> {
    match rows {
        1 => Ok(()),
        // Returning an error from the body drops the transaction: it rolls back.
        n => Err(rusqlite::Error::StatementChangedRows(n)),
    }
}

fn insert_session(tx: &rusqlite::Transaction<'_>, id: &str, parent: Option<&str>) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR IGNORE INTO sessions (id, parent_session_id, started_at) VALUES (?1, ?2, ?3)",
        params![id, parent, now()],
    )
    .map(drop)
}

pub(crate) fn insert_message(
    tx: &rusqlite::Transaction<'_>,
    session: &str,
    role: &str,
    content: &str,
) -> rusqlite::Result<i64> {
    // The next position is read inside the write transaction that uses it:
    // no other writer can take it in between.
    tx.execute(
        "INSERT INTO messages (session_id, role, content, position, timestamp)
         VALUES (?1, ?2, ?3, (SELECT coalesce(max(position) + 1, 0) FROM messages WHERE session_id=?1), ?4)",
        params![session, role, content, now()],
    )?;
    let id = tx.last_insert_rowid();
    count_message(tx, session).map(|()| id)
}

/// One more message in `session`'s `message_count`.
fn count_message(tx: &rusqlite::Transaction<'_>, session: &str) -> rusqlite::Result<()> {
    let n = tx.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id=?1", [session])?;
    expect_one(n)
}

fn insert_continuation(tx: &rusqlite::Transaction<'_>, parent: &str, child: &str) -> rusqlite::Result<()> {
    insert_session(tx, child, Some(parent))?;
    fill_continuation(tx, parent, child)
}

/// The continuation's system message: the summary a compressor writes.
fn fill_continuation(tx: &rusqlite::Transaction<'_>, parent: &str, child: &str) -> rusqlite::Result<()> {
    insert_message(tx, child, "system", &format!("continued from {parent}")).map(drop)
}

fn lease(tx: &rusqlite::Transaction<'_>, parent: &str) -> rusqlite::Result<()> {
    let n =
        tx.execute("UPDATE sessions SET handoff_state='compressing' WHERE id=?1 AND handoff_state IS NULL", [parent])?;
    expect_one(n)
}

fn insert_messages(tx: &rusqlite::Transaction<'_>, session: &str, messages: &[(&str, String)]) -> rusqlite::Result<()> {
    messages.iter().try_for_each(|(role, content)| insert_message(tx, session, role, content).map(drop))
}

fn end_by_compression(tx: &rusqlite::Transaction<'_>, parent: &str) -> rusqlite::Result<()> {
    let n = tx.execute(
        "UPDATE sessions SET ended_at=?1, end_reason='compression' WHERE id=?2 AND ended_at IS NULL",
        params![now(), parent],
    )?;
    expect_one(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashcells_protocol::JournalMode;

    fn open(dir: &Path, mode: JournalMode) -> Store {
        let config = DatabaseConfig { journal_mode: Some(mode), synchronous: None };
        Store::open(&dir.join("s.db"), config).unwrap()
    }

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_corrupt_file_dumps_as_a_finding_not_an_error() {
        let tmp = temp();
        let dir = tmp.path();
        let mut store = open(dir, JournalMode::Delete);
        store.create_session("s", None).unwrap();
        drop(store);
        // Keep the header, scribble over the schema on page 1.
        let db = dir.join("s.db");
        let mut bytes = std::fs::read(&db).unwrap();
        bytes[100..600].fill(0xA5);
        std::fs::write(&db, bytes).unwrap();
        let d = dump(&db).unwrap();
        assert!(d.integrity.starts_with("corrupt: "), "{}", d.integrity);
        assert!(d.sessions.is_empty() && d.messages.is_empty());
    }

    #[test]
    fn append_counts_messages_and_dump_reads_them_back() {
        let tmp = temp();
        let dir = tmp.path();
        let mut s = open(dir, JournalMode::Delete);
        assert_eq!(s.journal_mode, "delete");
        s.create_session("main", None).unwrap();
        for i in 0..3 {
            s.append("main", "user", &format!("m{i}"), &mut || ()).unwrap();
        }
        let d = dump(&dir.join("s.db")).unwrap();
        assert_eq!(d.integrity, "ok");
        assert_eq!(d.sessions[0].message_count, 3);
        let contents: Vec<_> = d.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["m0", "m1", "m2"]);
    }

    #[test]
    fn claim_is_won_once() {
        let tmp = temp();
        let dir = tmp.path();
        let mut s = open(dir, JournalMode::Wal);
        s.park("h").unwrap();
        assert!(s.claim("h", "a").unwrap());
        assert!(!s.claim("h", "b").unwrap());
        assert!(!s.claim_racy("h", "c").unwrap());
        assert!(!s.claim_split("h", "d").unwrap());
    }

    #[test]
    fn rotation_ends_parent_and_links_child() {
        let tmp = temp();
        let dir = tmp.path();
        let mut s = open(dir, JournalMode::Wal);
        s.create_session("p0", None).unwrap();
        s.take_lease("p0").unwrap();
        s.publish_rotation("p0", "c0", &[]).unwrap();
        // A second publication must not end the parent twice: it rolls back whole.
        assert!(s.publish_rotation("p0", "c0b", &[("user", "work 0".into())]).is_err());
        let d = dump(&dir.join("s.db")).unwrap();
        let ids: Vec<_> = d.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["c0", "p0"]);
        assert_eq!(d.sessions[1].end_reason.as_deref(), Some("compression"));
    }
}
