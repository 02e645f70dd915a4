//! Rewinds of the reference store: cut a session's live transcript back to
//! its first `k` messages.
//!
//! Crash model: the process may be killed at any instant. The reference
//! rewinds by soft-deleting the tail (`active = 0`) in one transaction, so a
//! crash shows the transcript before the cut or after it, never between:
//! the clause of cell 4 (after a rewind, recovery yields exactly the chosen
//! prefix). The `torn-fork` mutant cuts one message per transaction, last
//! first, so a kill between two of them leaves a prefix nobody chose; the
//! `torn-branch` mutant archives the whole live transcript, then copies each
//! kept message back one transaction each, as a store that rewinds by
//! archive-and-copy would if it did not hold the copies in the archive's
//! transaction: a kill between them leaves some of the kept prefix.

use rusqlite::{OptionalExtension, params};

use super::{Store, expect_one, with_retry};

impl Store {
    /// How many active messages `session` holds: the length of its live
    /// transcript.
    pub fn live_len(&self, session: &str) -> rusqlite::Result<u64> {
        with_retry(|| {
            self.conn.query_row("SELECT count(*) FROM messages WHERE session_id=?1 AND active=1", [session], |r| {
                r.get::<_, i64>(0)
            })
        })
        .map(|n| n as u64)
    }

    /// Rewinds `session` to its first `k` active messages in one
    /// transaction: the tail is deactivated and `message_count` (the live
    /// messages) becomes `k`.
    pub fn rewind(&mut self, session: &str, k: u64) -> rusqlite::Result<()> {
        self.immediate(
            |tx| {
                tx.execute(
                    "UPDATE messages SET active=0 WHERE id IN
                     (SELECT id FROM messages WHERE session_id=?1 AND active=1 ORDER BY id LIMIT -1 OFFSET ?2)",
                    params![session, k as i64],
                )?;
                let n = tx.execute("UPDATE sessions SET message_count=?2 WHERE id=?1", params![session, k as i64])?;
                expect_one(n)
            },
            &mut || (),
        )
    }

    /// Mutant `torn-fork`: the same cut, one message per transaction, from
    /// the last one back. Each step commits a transcript that is a prefix,
    /// but not the one chosen.
    pub fn rewind_torn(&mut self, session: &str, k: u64) -> rusqlite::Result<()> {
        while self.live_len(session)? > k {
            self.immediate(
                |tx| {
                    let last: Option<i64> = tx
                        .query_row("SELECT max(id) FROM messages WHERE session_id=?1 AND active=1", [session], |r| {
                            r.get(0)
                        })
                        .optional()?
                        .flatten();
                    let Some(id) = last else { return Ok(()) };
                    tx.execute("UPDATE messages SET active=0 WHERE id=?1", [id])?;
                    let n =
                        tx.execute("UPDATE sessions SET message_count = message_count - 1 WHERE id=?1", [session])?;
                    expect_one(n)
                },
                &mut || (),
            )?;
        }
        Ok(())
    }
}

impl Store {
    /// Mutant `torn-branch`: archives the live transcript (every live
    /// message deactivated, `message_count` 0) in one transaction, then
    /// appends a copy of each of the first `k` messages, one transaction
    /// each. A rewind that keeps nothing is thus whole; one that keeps some
    /// shows, between the transactions, only part of what it keeps.
    pub fn rewind_torn_branch(&mut self, session: &str, k: u64) -> rusqlite::Result<()> {
        let kept: Vec<(String, String)> = with_retry(|| {
            self.conn
                .prepare("SELECT role, content FROM messages WHERE session_id=?1 AND active=1 ORDER BY id LIMIT ?2")?
                .query_map(params![session, k as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })?;
        self.immediate(
            |tx| {
                tx.execute("UPDATE messages SET active=0 WHERE session_id=?1 AND active=1", [session])?;
                let n = tx.execute("UPDATE sessions SET message_count=0 WHERE id=?1", [session])?;
                expect_one(n)
            },
            &mut || (),
        )?;
        for (role, content) in &kept {
            self.append(session, role, content, &mut || ())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Store, dump};
    use crashcells_protocol::{DatabaseConfig, JournalMode};

    fn transcript(db: &std::path::Path) -> Vec<String> {
        let d = dump(db).unwrap();
        d.live_transcript("main").unwrap().iter().map(|m| m.content.clone()).collect()
    }

    #[test]
    fn a_rewind_keeps_the_chosen_prefix_whole_or_torn() {
        let tmp = tempfile::tempdir().unwrap();
        for torn in [false, true] {
            let db = tmp.path().join(format!("s-{torn}.db"));
            let config = DatabaseConfig { journal_mode: Some(JournalMode::Delete), synchronous: None };
            let mut s = Store::open(&db, config).unwrap();
            s.create_session("main", None).unwrap();
            for i in 0..4 {
                s.append("main", "user", &format!("m{i}"), &mut || ()).unwrap();
            }
            if torn {
                s.rewind_torn("main", 1).unwrap()
            } else {
                s.rewind("main", 1).unwrap()
            }
            s.append("main", "user", "m5", &mut || ()).unwrap();
            assert_eq!(s.live_len("main").unwrap(), 2);
            assert_eq!(transcript(&db), ["m0", "m5"]);
            let d = dump(&db).unwrap();
            assert_eq!(d.messages.iter().filter(|m| !m.active).count(), 3, "the tail is kept, inactive");
            assert_eq!(d.sessions[0].message_count, 2);
        }
    }

    /// Archive-and-copy ends where the rewind does: the kept prefix live
    /// (as copies), every earlier message archived.
    #[test]
    fn a_torn_branch_ends_with_the_chosen_prefix_as_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("s.db");
        let config = DatabaseConfig { journal_mode: Some(JournalMode::Delete), synchronous: None };
        let mut s = Store::open(&db, config).unwrap();
        s.create_session("main", None).unwrap();
        for i in 0..4 {
            s.append("main", "user", &format!("m{i}"), &mut || ()).unwrap();
        }
        s.rewind_torn_branch("main", 2).unwrap();
        s.append("main", "user", "m5", &mut || ()).unwrap();
        assert_eq!(transcript(&db), ["m0", "m1", "m5"]);
        let d = dump(&db).unwrap();
        assert_eq!(d.messages.iter().filter(|m| !m.active).count(), 4, "the whole transcript archived");
        assert_eq!(d.sessions[0].message_count, 3);
    }
}
