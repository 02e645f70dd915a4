#!/usr/bin/env python3
"""A complete small store on crashcells.adapter, the one docs/adapters/python.md
shows: two tables, one connection, every operation. The library's tests run
it, and break it on purpose with MINI_BREAK (a misspelt method, a state() of
the wrong shape, an operation that raises, sqlite3's error wrapped as an ORM
wraps it) to check the one-line errors.

Crash model: each method is one transaction on the store's own connection;
the library acks after it returned.
"""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from crashcells import adapter  # noqa: E402

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, parent TEXT, ended INTEGER NOT NULL DEFAULT 0,
    end_reason TEXT, handoff TEXT);
CREATE TABLE IF NOT EXISTS messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS outbox (key TEXT PRIMARY KEY, payload TEXT NOT NULL, state TEXT NOT NULL);
"""


class MiniStore(adapter.Store):
    mutants = ("racy-claim", "drop-append")

    def open(self, db, config):
        decision = adapter.resolve(config, db, sqlite3.sqlite_version)
        self.conn = sqlite3.connect(db, isolation_level=None, timeout=5)
        self.conn.execute("PRAGMA journal_mode=%s" % decision["applied"]).fetchone()
        if config.synchronous:
            self.conn.execute("PRAGMA synchronous=%s" % config.synchronous)
        self.conn.executescript(SCHEMA)
        return decision

    def connection(self):
        return self.conn

    def close(self):
        self.conn.close()

    def create_session(self, session):
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO sessions (id) VALUES (?)", (session,))

    def append(self, session, role, content):
        with self._tx() as c:
            c.execute("INSERT INTO messages (session, role, content) VALUES (?, ?, ?)", (session, role, content))

    def rotate(self, parent, child, work, carried, new_parent):
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO sessions (id) VALUES (?)", (parent,))
            for role, content in work:
                c.execute("INSERT INTO messages (session, role, content) VALUES (?, ?, ?)", (parent, role, content))
        with self._tx() as c:
            c.execute("INSERT INTO sessions (id, parent) VALUES (?, ?)", (child, parent))
            c.execute("INSERT INTO messages (session, role, content) VALUES (?, 'system', 'summary')", (child,))
            tail = c.execute(
                "SELECT role, content FROM messages WHERE session=? AND active ORDER BY seq DESC LIMIT ?", (parent, carried)
            ).fetchall()
            for role, content in reversed(tail):
                c.execute("INSERT INTO messages (session, role, content) VALUES (?, ?, ?)", (child, role, content))
            c.execute("UPDATE sessions SET ended=1, end_reason='compression' WHERE id=?", (parent,))

    def park(self, session):
        with self._tx() as c:
            c.execute("INSERT INTO sessions (id, handoff) VALUES (?, 'pending')", (session,))

    def claim(self, session, claimant):
        if self.mutant == "racy-claim":
            row = self.conn.execute("SELECT handoff FROM sessions WHERE id=?", (session,)).fetchone()
            if row[0] != "pending":
                return False
            predicate = ""
        else:
            predicate = " AND handoff='pending'"
        with self._tx() as c:
            if c.execute("UPDATE sessions SET handoff='running' WHERE id=?" + predicate, (session,)).rowcount != 1:
                return False
            c.execute("INSERT INTO messages (session, role, content) VALUES (?, 'system', ?)", (session, "claimed by " + claimant))
            return True

    def rewind(self, session, keep, i):
        with self._tx() as c:
            seqs = [r[0] for r in c.execute("SELECT seq FROM messages WHERE session=? AND active ORDER BY seq", (session,))]
            c.executemany("UPDATE messages SET active=0 WHERE seq=?", [(s,) for s in seqs[keep:]])

    def record(self, key, payload):
        with self._tx() as c:
            c.execute("INSERT INTO outbox VALUES (?, ?, 'recorded')", (key, payload))

    def attempting(self, key):
        with self._tx() as c:
            c.execute("UPDATE outbox SET state='attempting' WHERE key=?", (key,))

    def delivered(self, key):
        with self._tx() as c:
            c.execute("UPDATE outbox SET state='delivered' WHERE key=?", (key,))

    def pending(self):
        return self.conn.execute("SELECT key, payload, state FROM outbox WHERE state != 'delivered' ORDER BY rowid").fetchall()

    def state(self, db):
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "messages" not in tables:
                return {}
            return {
                "sessions": [
                    {"id": i, "parent_session_id": p, "ended": bool(e), "end_reason": r, "handoff_state": h}
                    for i, p, e, r, h in conn.execute("SELECT id, parent, ended, end_reason, handoff FROM sessions")
                ],
                "messages": [
                    {"session_id": s, "role": r, "content": c, "active": bool(a)}
                    for s, r, c, a in conn.execute("SELECT session, role, content, active FROM messages ORDER BY seq")
                ],
                "obligations": [{"key": k, "state": s} for k, s in conn.execute("SELECT key, state FROM outbox")],
            }
        finally:
            conn.close()

    def _tx(self):
        return Transaction(self.conn)


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the body raises."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind, value, tb):
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


class OrmError(Exception):
    """An ORM's own error class, which the store names in no store_errors."""


def failing_append(wrapped):
    """An append whose statement fails in sqlite3: re-raised as an ORM does
    (`raise OrmError(...) from e`, a store failure), or by a handler that
    fails itself (a KeyError while handling it: the adapter's mistake)."""

    def append(self, session, role, content):
        try:
            self.conn.execute("INSERT INTO no_such_table VALUES (1)")
        except sqlite3.OperationalError as e:
            if wrapped:
                raise OrmError("(sqlite3.OperationalError) %s" % e) from e
            return {}["no such key"]

    return append


def corrupt_state(self, db):
    """sqlite3's word for a corrupt file, under an ORM's class."""
    try:
        raise sqlite3.DatabaseError("database disk image is malformed")
    except sqlite3.DatabaseError as e:
        raise OrmError("(sqlite3.DatabaseError) %s" % e) from e


if __name__ == "__main__":
    broken = os.environ.get("MINI_BREAK")
    if broken == "apend":
        MiniStore.apend = MiniStore.append
    elif broken == "shape":
        MiniStore.state = lambda self, db: {"messages": [{"session_id": "main", "content": "m0"}]}
    elif broken == "raise":
        MiniStore.append = lambda self, session, role, content: {}["no such key"]
    elif broken in ("wrapped", "handler"):
        MiniStore.append = failing_append(wrapped=broken == "wrapped")
    elif broken == "corrupt-wrapped":
        MiniStore.state = corrupt_state
    adapter.run(MiniStore)
