//! The reference store's recovery step: `dump` opens the store (SQLite
//! rolls back a hot journal or replays the WAL), checks its integrity and
//! reads its logical state back for the driver.
//!
//! Crash model: the files are whatever a crash left; recovery is SQLite's
//! own, on open. Clause: every cell's, through what it reads.

use std::path::Path;

use crashcells_protocol::{Dump, DumpMessage, DumpSession};
use rusqlite::{Connection, ErrorCode};

use super::{outbox, set_busy_timeout};

/// Recovers the store at `path` (opening it rolls back a hot journal or
/// replays the WAL) and reads its logical state. It never applies the
/// resolver: recovery must not change the mode under audit.
///
/// A file SQLite calls corrupt is a finding about the store, not a failure
/// of the recovery pass: the dump says so in `integrity` and holds nothing,
/// so the cell fires (a kill inside a commit in `journal_mode=off` or
/// `memory` can leave exactly that) instead of the trial being an error.
pub fn dump(path: &Path) -> rusqlite::Result<Dump> {
    match read_state(path) {
        Err(e) if is_corrupt(&e) => Ok(Dump::empty(crate::PROTOCOL, format!("corrupt: {e}"))),
        other => other,
    }
}

fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase))
}

fn read_state(path: &Path) -> rusqlite::Result<Dump> {
    let conn = Connection::open(path)?;
    set_busy_timeout(&conn)?;
    let integrity = integrity_check(&conn)?;
    // A store killed before its schema was committed recovers as empty.
    let has_schema: bool =
        conn.query_row("SELECT count(*) = 2 FROM sqlite_master WHERE name IN ('sessions', 'messages')", [], |r| {
            r.get(0)
        })?;
    if !has_schema {
        return Ok(Dump::empty(crate::PROTOCOL, integrity));
    }
    let sessions = conn
        .prepare(
            "SELECT id, parent_session_id, ended_at IS NOT NULL, end_reason, message_count, handoff_state
             FROM sessions ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(DumpSession {
                id: r.get(0)?,
                parent_session_id: r.get(1)?,
                ended: r.get(2)?,
                end_reason: r.get(3)?,
                message_count: r.get(4)?,
                handoff_state: r.get(5)?,
                // This store rewinds by soft-deleting, never by branching.
                branch_of: None,
            })
        })?
        .collect::<Result<_, _>>()?;
    let messages = conn
        .prepare("SELECT session_id, role, content, position, active FROM messages ORDER BY id")?
        .query_map([], |r| {
            Ok(DumpMessage {
                session_id: r.get(0)?,
                role: r.get(1)?,
                content: r.get(2)?,
                position: r.get(3)?,
                active: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let outbox = outbox::read(&conn)?;
    Ok(Dump { protocol: crate::PROTOCOL, integrity, sessions, messages, outbox })
}

fn integrity_check(conn: &Connection) -> rusqlite::Result<String> {
    let rows: Vec<String> =
        conn.prepare("PRAGMA integrity_check")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    Ok(rows.join("; "))
}
