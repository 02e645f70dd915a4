"""A store on the Python library with no journal policy of its own that
calls the reference resolver anyway, as an author who copied it from an
older page of the docs would (#53): asked for WAL on a SQLite with the
WAL-reset bug, it runs DELETE, "decided by wal-reset-gate", and `run`
skips its `wal` leg. `child-check`'s `journal-policy` warns of it.

Crash model: each append is one transaction; the library acks after it."""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python"))
from crashcells import adapter  # noqa: E402


class Copied(adapter.Store):
    def open(self, db, config):
        decision = adapter.resolve(config, db, sqlite3.sqlite_version)
        self.conn = sqlite3.connect(db, isolation_level=None, timeout=10)
        self.conn.execute("PRAGMA journal_mode=" + decision["applied"]).fetchone()
        self.conn.execute("CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY, session TEXT, role TEXT, content TEXT)")
        return decision

    def connection(self):
        return self.conn

    def append(self, session, role, content):
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("INSERT INTO messages (session, role, content) VALUES (?, ?, ?)", (session, role, content))
        self.conn.execute("COMMIT")

    def state(self, db):
        conn = sqlite3.connect(db)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages'").fetchone():
                return {}
            rows = conn.execute("SELECT session, role, content FROM messages ORDER BY seq").fetchall()
            return {"sessions": [{"id": s} for s in sorted({r[0] for r in rows})],
                    "messages": [{"session_id": s, "role": r, "content": c} for s, r, c in rows]}
        finally:
            conn.close()


if __name__ == "__main__":
    adapter.run(Copied)
