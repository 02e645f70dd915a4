//! The outbox of the reference store: delivery obligations with a state,
//! `recorded` → `attempting` → `delivered`, each step its own transaction.
//!
//! Crash model: the process may be killed at any instant, in particular
//! between the send (one line appended to the transport) and the
//! transaction that marks the obligation delivered. An obligation left
//! `attempting` may or may not have reached the provider, so `catch-up`
//! asks the transport before it sends again: the clause of cell 5 (a crash
//! between a send and its record must not double-deliver on catch-up).

use rusqlite::{Connection, params};

use super::{Store, expect_one, with_retry};
use crashcells_protocol::DumpObligation;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS outbox (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('recorded', 'attempting', 'delivered'))
)";

/// An obligation not yet delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub key: String,
    pub payload: String,
    /// True once a send was attempted: it may have arrived.
    pub attempting: bool,
}

impl Store {
    /// Creates the outbox table. Only `deliver` and `catch-up` do, so the
    /// stores of the other cells keep exactly their schema and kill points.
    pub fn open_outbox(&mut self) -> rusqlite::Result<()> {
        with_retry(|| self.conn.execute_batch(SCHEMA))
    }

    /// Records obligation `key`, in one transaction.
    pub fn record_obligation(&mut self, key: &str, payload: &str) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                tx.execute(
                    "INSERT INTO outbox (key, payload, state) VALUES (?1, ?2, 'recorded')",
                    params![key, payload],
                )
                .map(drop)
            },
            &mut || (),
        )
    }

    /// Moves obligation `key` from state `from` to `to`, in one transaction.
    pub fn mark(&mut self, key: &str, from: &str, to: &str) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                expect_one(tx.execute("UPDATE outbox SET state=?3 WHERE key=?1 AND state=?2", params![key, from, to])?)
            },
            &mut || (),
        )
    }

    /// Every obligation not delivered, in the order they were recorded.
    pub fn pending(&self) -> rusqlite::Result<Vec<Pending>> {
        with_retry(|| {
            self.conn
                .prepare("SELECT key, payload, state FROM outbox WHERE state != 'delivered' ORDER BY rowid")?
                .query_map([], |r| {
                    Ok(Pending {
                        key: r.get(0)?,
                        payload: r.get(1)?,
                        attempting: r.get::<_, String>(2)? == "attempting",
                    })
                })?
                .collect()
        })
    }
}

/// The outbox as `dump` shows it, sorted by key; none without the table.
pub fn read(conn: &Connection) -> rusqlite::Result<Vec<DumpObligation>> {
    let has: bool =
        conn.query_row("SELECT count(*) = 1 FROM sqlite_master WHERE type='table' AND name='outbox'", [], |r| {
            r.get(0)
        })?;
    if !has {
        return Ok(Vec::new());
    }
    conn.prepare("SELECT key, state FROM outbox ORDER BY key")?
        .query_map([], |r| Ok(DumpObligation { key: r.get(0)?, state: r.get(1)? }))?
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::store::{Store, dump};
    use crashcells_protocol::{DatabaseConfig, JournalMode};

    #[test]
    fn obligations_move_through_their_states_and_dump_sorted_by_key() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("s.db");
        let config = DatabaseConfig { journal_mode: Some(JournalMode::Wal), synchronous: None };
        let mut s = Store::open(&db, config).unwrap();
        assert!(dump(&db).unwrap().outbox.is_empty(), "no table, no outbox");
        s.open_outbox().unwrap();
        for j in [2, 10] {
            s.record_obligation(&format!("o{j}"), "x").unwrap();
        }
        s.mark("o2", "recorded", "attempting").unwrap();
        assert!(s.mark("o2", "recorded", "attempting").is_err(), "a step from the wrong state changes nothing");
        let pending = s.pending().unwrap();
        assert_eq!(
            pending.iter().map(|p| (p.key.as_str(), p.attempting)).collect::<Vec<_>>(),
            [("o2", true), ("o10", false)]
        );
        s.mark("o2", "attempting", "delivered").unwrap();
        let keys: Vec<_> = dump(&db).unwrap().outbox.into_iter().map(|o| (o.key, o.state)).collect();
        assert_eq!(keys, [("o10".into(), "recorded".into()), ("o2".into(), "delivered".into())]);
    }
}
