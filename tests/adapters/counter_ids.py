"""A store on the Python library whose message ids come from a counter of
its own process, as a store written for one writer makes them: two writers
of co-append (cell 6) make the same ids. COUNTER_IDS picks what the store
does with an id it already holds: `error` (a plain INSERT: the second
writer fails on a primary key), `overwrite` (ON CONFLICT DO UPDATE: the
first writer's acked rows silently replaced), or `writer` (ids from the
library's `writer` and `index`: unique per writer, the fix).

Crash model: each append is one transaction; the library acks after it."""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python"))
from crashcells import adapter  # noqa: E402

MODE = os.environ.get("COUNTER_IDS", "error")
CONFLICT = " ON CONFLICT(id) DO UPDATE SET content = excluded.content, at = excluded.at" if MODE == "overwrite" else ""


class CounterIds(adapter.Store):
    def open(self, db, config):
        self.conn = sqlite3.connect(db, isolation_level=None, timeout=10)
        self.conn.execute("PRAGMA journal_mode=%s" % (config.journal_mode or "delete")).fetchone()
        self.conn.execute("CREATE TABLE IF NOT EXISTS messages (id TEXT PRIMARY KEY, at INTEGER NOT NULL, session TEXT, role TEXT, content TEXT)")
        self.n = 0
        return {"requested": config.journal_mode, "applied": config.journal_mode or "delete", "synchronous": config.synchronous,
                "decided_by": "config" if config.journal_mode else "default", "reason": "the config's mode"}

    def connection(self):
        return self.conn

    def append(self, session, role, content):
        key = "%s-%d" % (self.writer, self.index) if MODE == "writer" else "m%d" % self.n
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            at = self.conn.execute("SELECT coalesce(max(at), -1) + 1 FROM messages").fetchone()[0]
            self.conn.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?)" + CONFLICT, (key, at, session, role, content))
        except sqlite3.Error:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self.n += 1

    def state(self, db):
        conn = sqlite3.connect(db)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages'").fetchone():
                return {}
            rows = conn.execute("SELECT session, role, content FROM messages ORDER BY at").fetchall()
            return {"sessions": [{"id": s} for s in sorted({r[0] for r in rows})],
                    "messages": [{"session_id": s, "role": r, "content": c} for s, r, c in rows]}
        finally:
            conn.close()


if __name__ == "__main__":
    adapter.run(CounterIds)
