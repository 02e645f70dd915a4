#!/usr/bin/env python3
"""A session store on SQLAlchemy's ORM behind the crashcells child protocol,
on the Python adapter library (`crashcells.adapter`, sdk/python;
docs/adapters/python.md, "Stores behind an ORM").

It is what most Python stores look like: mapped classes, a `Session` per
unit of work, the ORM's read-then-write (`session.get`, change an attribute,
commit). Three things make it testable, each the ORM's own mechanism:

- `store_errors`: SQLAlchemy wraps every sqlite3 error in its own classes,
  all under `SQLAlchemyError`, so that base class is declared the store's;
- `connection()`: the driver's sqlite3 connection, out of the engine's pool;
- the pragmas, applied in the engine's `connect` event to every connection.

Crash model: SIGKILL at any instant. Every unit of work is one `BEGIN
IMMEDIATE` transaction, emitted in the engine's `begin` event with the
driver's own transaction control off (SQLAlchemy's documented recipe for
sqlite3): sqlite3's legacy control sends no BEGIN before a SELECT, so the
ORM's read-then-write would read outside the transaction that writes. The
mutant `racy-claim` keeps that legacy control: two claimants both
read `pending` and both win (cell 2). The library acks after a method
returned, so after its commit.

Run as: python3 store.py <append|rotate|park|claim|fork|deliver|catch-up|dump> [flags],
or python3 store.py fork-server, or python3 store.py warm-pool.
"""

import contextlib
import os
import sys
from typing import Optional

from sqlalchemy import ForeignKey, create_engine, event, inspect, select, update
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.orm.exc import StaleDataError

# The library of this checkout first (an installed one may be older).
_sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python")
if os.path.isdir(os.path.join(_sdk, "crashcells")):
    sys.path.insert(0, _sdk)
from crashcells import adapter  # noqa: E402

# The mode this store runs when the config home asks for none: a store of
# its own default, with no policy that refuses a mode it is asked for.
DEFAULT_JOURNAL_MODE = "wal"
BUSY_TIMEOUT_MS = 10000


class Base(DeclarativeBase):
    pass


class Conversation(Base):
    __tablename__ = "conversations"
    name: Mapped[str] = mapped_column(primary_key=True)
    parent: Mapped[Optional[str]] = mapped_column(ForeignKey("conversations.name"))
    ended: Mapped[bool] = mapped_column(default=False)
    end_reason: Mapped[Optional[str]]
    turns: Mapped[int] = mapped_column(default=0)
    handoff: Mapped[Optional[str]]


class Turn(Base):
    __tablename__ = "turns"
    # INTEGER PRIMARY KEY: SQLite's rowid, unique per writer and in commit order.
    seq: Mapped[int] = mapped_column(primary_key=True)
    conversation: Mapped[str] = mapped_column(ForeignKey("conversations.name"), index=True)
    role: Mapped[str]
    content: Mapped[str]
    # A rewind soft-deletes the turns past the kept prefix.
    active: Mapped[bool] = mapped_column(default=True)


class Obligation(Base):
    __tablename__ = "obligations"
    seq: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(unique=True)
    payload: Mapped[str]
    state: Mapped[str]


class SqlAlchemyStore(adapter.Store):
    # SQLAlchemy raises its own classes (sqlite3's error is their __cause__);
    # sqlite3's own stay here for what the connect event runs on the driver.
    store_errors = adapter.Store.store_errors + (SQLAlchemyError,)
    mutants = ("racy-claim",)

    def open(self, db, config):
        mode = config.journal_mode or DEFAULT_JOURNAL_MODE
        self.engine = create_engine(URL.create("sqlite", database=db))
        legacy = self.mutant == "racy-claim"

        @event.listens_for(self.engine, "connect")
        def configure(driver_conn, _record):
            if not legacy:
                driver_conn.isolation_level = None  # sqlite3 sends no BEGIN of its own
            driver_conn.execute("PRAGMA busy_timeout=%d" % BUSY_TIMEOUT_MS)
            driver_conn.execute("PRAGMA journal_mode=" + mode).fetchone()
            if config.synchronous:
                driver_conn.execute("PRAGMA synchronous=" + config.synchronous)

        if not legacy:

            @event.listens_for(self.engine, "begin")
            def begin(conn):
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        # One transaction: the existence check and the CREATEs under the
        # write lock, so that two first writers do not both create a table.
        Base.metadata.create_all(self.engine)
        by = "config" if config.journal_mode else "default"
        return {
            "requested": config.journal_mode,
            "applied": mode,
            "synchronous": config.synchronous,
            "decided_by": by,
            "reason": "no policy of its own: %s as %s" % (mode, "asked" if config.journal_mode else "its default"),
        }

    def connection(self):
        # The driver's connection the sessions use: returned to the pool
        # idle, it is the one the next session checks out (one thread).
        with self.engine.connect() as conn:
            return conn.connection.driver_connection

    def close(self):
        self.engine.dispose()

    def create_session(self, name):
        with self._unit() as s:
            _conversation(s, name)

    def append(self, name, role, content):
        with self._unit() as s:
            _add_turn(s, _conversation(s, name), role, content)

    def rotate(self, parent, child, work, carried, new_parent):
        with self._unit() as s:
            p = _conversation(s, parent)
            for role, content in work:
                _add_turn(s, p, role, content)
        with self._unit() as s:
            p = s.get(Conversation, parent)
            tail = _live(s, parent)[-carried:] if carried else []
            c = _conversation(s, child, parent=parent)
            _add_turn(s, c, "system", "continued from %s" % parent)
            for t in tail:
                _add_turn(s, c, t.role, t.content)
            p.ended, p.end_reason = True, "compression"

    def park(self, name):
        with self._unit() as s:
            _conversation(s, name).handoff = "pending"

    def claim(self, name, claimant):
        # The ORM's compare-and-set: a read and a write in one IMMEDIATE
        # transaction, which no other claimant can interleave.
        with self._unit() as s:
            conv = s.get(Conversation, name)
            if conv is None or conv.handoff != "pending":
                return False
            conv.handoff = "running"
            _add_turn(s, conv, "system", "claimed by %s" % claimant)
            return True

    def rewind(self, name, keep, i):
        with self._unit() as s:
            for t in _live(s, name)[keep:]:
                t.active = False
            conv = s.get(Conversation, name)
            conv.turns = min(conv.turns, keep)

    def live_length(self, name):
        with self._unit() as s:
            return s.get(Conversation, name).turns

    def record(self, key, payload):
        with self._unit() as s:
            s.add(Obligation(key=key, payload=payload, state="recorded"))

    def attempting(self, key):
        self._mark(key, "recorded", "attempting")

    def delivered(self, key):
        self._mark(key, "attempting", "delivered")

    def _mark(self, key, old, new):
        with self._unit() as s:
            done = s.execute(update(Obligation).where(Obligation.key == key, Obligation.state == old).values(state=new))
            if done.rowcount != 1:
                raise StaleDataError("marking %s %s changed %d rows, not 1" % (key, new, done.rowcount))

    def pending(self):
        with self._unit() as s:
            rows = s.scalars(select(Obligation).where(Obligation.state != "delivered").order_by(Obligation.seq))
            return [(o.key, o.payload, o.state) for o in rows]

    def state(self, db):
        # An engine with no event: no pragma; opening recovers the file.
        engine = create_engine(URL.create("sqlite", database=db))
        try:
            with Session(engine) as s:
                if not {"conversations", "turns"} <= set(inspect(s.connection()).get_table_names()):
                    return {}  # killed before the schema was committed: an empty store
                return {
                    "sessions": [_session(c) for c in s.scalars(select(Conversation))],
                    "messages": [_message(t) for t in s.scalars(select(Turn).order_by(Turn.seq))],
                    "obligations": [{"key": o.key, "state": o.state} for o in s.scalars(select(Obligation))],
                }
        finally:
            engine.dispose()

    @contextlib.contextmanager
    def _unit(self):
        """One unit of work: one transaction, committed on leaving."""
        with Session(self.engine) as s, s.begin():
            yield s


def _conversation(s, name, parent=None):
    """The conversation `name`, created in this unit of work if missing."""
    conv = s.get(Conversation, name)
    if conv is None:
        conv = Conversation(name=name, parent=parent, ended=False, turns=0)
        s.add(conv)
    return conv


def _add_turn(s, conv, role, content):
    s.add(Turn(conversation=conv.name, role=role, content=content, active=True))
    conv.turns += 1


def _live(s, name):
    return s.scalars(select(Turn).where(Turn.conversation == name, Turn.active).order_by(Turn.seq)).all()


def _session(c):
    return {
        "id": c.name,
        "parent_session_id": c.parent,
        "ended": c.ended,
        "end_reason": c.end_reason,
        "message_count": c.turns,
        "handoff_state": c.handoff,
    }


def _message(t):
    return {"session_id": t.conversation, "role": t.role, "content": t.content, "active": t.active}


if __name__ == "__main__":
    adapter.run(SqlAlchemyStore)
