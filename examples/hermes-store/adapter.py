#!/usr/bin/env python3
"""The Hermes agent's real `SessionDB` (hermes_state.py, hermes-agent 0.19.0)
behind the crashcells child protocol (docs/PROTOCOL.md).

crashcells grew from a conformance suite written for this store; this adapter
puts the store itself back under the cells. It is an integration, not a
re-implementation: every write goes through SessionDB's public methods
(`create_session`, `append_message`, `end_session`, `replace_messages`,
`request_handoff`, `claim_handoff`, ...), with SessionDB's own connection,
transactions (`_execute_write`: BEGIN IMMEDIATE, commit, jittered retry) and
journal mode. Nothing in its persistence layer is patched. Where Hermes
spends more transactions than the protocol asks for (a compression rotation
takes four), the adapter does what Hermes does and lets the cell judge it.

Only `dump` reads the file directly, with the standard `sqlite3` module, and
maps Hermes's schema to the protocol's canonical state (see `read_state`).

The wheel comes from `./fetch` (pinned version and sha256), unpacked into
`.wheel/site/` next to this file; the adapter needs nothing else than the
standard library.

Crash model: the process may be killed with SIGKILL at any instant. An ack is
written with one write(2) on an O_APPEND descriptor, only after the SessionDB
call(s) it acknowledges returned.

Run as: python3 adapter.py <append|rotate|park|claim|dump> [flags]
"""

import argparse
import fcntl
import json
import os
import sqlite3
import sys

PROTOCOL = 1
EXIT_WON = 0
EXIT_LOST = 10
EXIT_USAGE = 2
EXIT_CONFIG = 2
EXIT_ERROR = 3
APPEND_SESSION = "main"
JOURNAL_MODES = ("delete", "truncate", "persist", "memory", "wal", "off")
SYNC_LEVELS = ("off", "normal", "full", "extra")
SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".wheel", "site")
# Written by ./fetch once the wheel is verified, unpacked and compiled.
SITE_STAMP = os.path.join(SITE, ".complete")
# What the sessions are tagged with (Hermes's `source` column).
SOURCE = "cli"
MODEL = "crashcells-adapter"
# The platform a parked handoff is headed for (request_handoff's argument).
HANDOFF_PLATFORM = "telegram"
# state_meta key where the winner of a handoff leaves its name (see op_claim).
CLAIMANT_KEY = "crashcells.handoff_claimant:"


class ConfigError(Exception):
    """A config home the adapter cannot read: exit 2, never a silent fallback."""


class Usage(Exception):
    """A command line the adapter refuses: exit 2 with one line."""


# --- config home -------------------------------------------------------------
#
# The same reader as examples/python-store: `[database]` with `journal_mode`
# and `synchronous`, anything else refused. Hermes has no knob for either
# (see `resolver`), but a leg must still never run on a config we did not
# understand.


def parse_config(text):
    try:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(str(e))
    except ImportError:
        data = parse_flat_toml(text)
    unknown = set(data) - {"database"}
    if unknown:
        raise ConfigError("unknown table or key `%s`" % sorted(unknown)[0])
    db = data.get("database", {})
    if not isinstance(db, dict):
        raise ConfigError("`database` is not a table")
    unknown = set(db) - {"journal_mode", "synchronous"}
    if unknown:
        raise ConfigError("unknown key `%s` in [database]" % sorted(unknown)[0])
    return (
        check_value(db.get("journal_mode"), JOURNAL_MODES, "journal_mode"),
        check_value(db.get("synchronous"), SYNC_LEVELS, "synchronous"),
    )


def parse_flat_toml(text):
    """Python < 3.11 has no tomllib: a reader for the flat lines config.toml holds."""
    data = {}
    table = data
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            table = data.setdefault(line[1:-1].strip(), {})
            continue
        key, sep, value = line.partition("=")
        value = value.strip()
        if not sep or len(value) < 2 or value[0] != '"' or value[-1] != '"':
            raise ConfigError("cannot read line `%s`" % raw)
        table[key.strip()] = value[1:-1]
    return data


def check_value(value, known, what):
    if value is None:
        return None
    if not isinstance(value, str) or value.lower() not in known:
        raise ConfigError("unknown %s `%s` (expected one of %s)" % (what, value, "|".join(known)))
    return value.lower()


def read_config():
    home = os.environ.get("CRASHCELLS_HOME")
    if home is None:
        return None, None
    if os.path.exists(home) and not os.path.isdir(home):
        raise ConfigError("%s: CRASHCELLS_HOME is not a folder" % home)
    path = os.path.join(home, "config.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None, None
    try:
        return parse_config(text)
    except ConfigError as e:
        raise ConfigError("config %s: %s" % (path, e))


# --- the store ---------------------------------------------------------------


def import_hermes():
    """hermes_state from the unpacked wheel. Imported only by the operations
    that write (dump does not need it), after the config was read, so that a
    bad config is refused before the slow import."""
    if not os.path.isfile(SITE_STAMP):
        raise RuntimeError("no unpacked hermes-agent wheel at %s: run examples/hermes-store/fetch first" % SITE)
    sys.path.insert(0, SITE)
    import hermes_state

    return hermes_state


class Store:
    """One SessionDB, opened the way Hermes opens it, and what it really did."""

    def __init__(self, path):
        self.requested, self.asked_sync = read_config()
        self.hs = import_hermes()
        from pathlib import Path

        # SessionDB.__init__ connects, applies WAL (apply_wal_with_fallback),
        # turns on foreign keys and creates or reconciles its schema.
        self.db = self.hs.SessionDB(db_path=Path(path))
        # What the store's own connection reports, read with Hermes's own probe
        # (a read of PRAGMA journal_mode, no assignment).
        self.journal_mode = self.hs._on_disk_journal_mode(self.db._conn) or "unknown"
        level = self.db._conn.execute("PRAGMA synchronous").fetchone()[0]
        self.synchronous = SYNC_LEVELS[level] if 0 <= level < len(SYNC_LEVELS) else None

    def resolver(self):
        """Hermes has no journal-mode setting: SessionDB.__init__ calls
        hermes_state.apply_wal_with_fallback, which sets WAL on every open and
        falls back to DELETE only where the filesystem refuses WAL (NFS, SMB).
        Nor does it set `synchronous` (except FULL on macOS). The config is
        read and checked, then reported as asked, next to what the store did;
        a leg asking for anything else is skipped by the driver with `reason`."""
        applied = self.journal_mode if self.journal_mode in JOURNAL_MODES else None
        if applied == "wal":
            why = "Hermes's SessionDB sets journal_mode=WAL on every open (hermes_state.apply_wal_with_fallback), whatever is asked"
        else:
            why = "Hermes's SessionDB asks for WAL on every open; apply_wal_with_fallback fell back to %s here" % self.journal_mode
        if self.requested is not None:
            why += "; the config asked for %s" % self.requested
        if self.asked_sync is not None:
            why += "; Hermes never sets synchronous, which runs at SQLite's default (%s)" % self.synchronous
        return {
            "requested": self.requested,
            "applied": applied,
            "synchronous": self.asked_sync,
            "decided_by": "hermes-wal-on-open",
            "reason": why,
        }


# --- the ack journal -----------------------------------------------------------


class Acks:
    """NDJSON, one record per line, each line put down with a single write(2)
    on an O_APPEND file, so that a kill tears at most the final line."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def record(self, obj):
        line = (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        n = os.write(self.fd, line)
        if n != len(line):
            # A second write could be split from the first by the kill.
            raise OSError("short write of an ack: %d of %d bytes" % (n, len(line)))

    def ready(self, store, op):
        resolver = store.resolver()
        source_id = store.db._conn.execute("SELECT sqlite_source_id()").fetchone()[0]
        self.record(
            {
                "kind": "ready",
                "protocol": PROTOCOL,
                "pid": os.getpid(),
                "op": op,
                "sqlite_version": sqlite3.sqlite_version,
                "sqlite_source_id": source_id,
                "journal_mode": store.journal_mode,
                "synchronous": store.synchronous,
                # An `applied` outside the six modes would make the record
                # unreadable: then say nothing rather than something malformed.
                "resolver": resolver if resolver["applied"] is not None else None,
            }
        )

    def ack(self, op, i, parent=None, child=None):
        rec = {"kind": "ack", "op": op, "i": i}
        if parent is not None:
            rec["parent"], rec["child"] = parent, child
        self.record(rec)


# --- the operations --------------------------------------------------------------


def ops(stop_after):
    i = 0
    while stop_after is None or i < stop_after:
        yield i
        i += 1


def op_append(a):
    """Each append is one append_message: one _execute_write transaction that
    inserts the row and bumps sessions.message_count."""
    store = Store(a.db)
    db = store.db
    db.create_session(APPEND_SESSION, SOURCE)
    acks = Acks(a.acks)
    acks.ready(store, "append")
    for i in ops(a.stop_after):
        db.append_message(APPEND_SESSION, "user", "m%d" % i)
        acks.ack("append", i)
    return 0


def op_rotate(a):
    store = Store(a.db)
    acks = Acks(a.acks)
    acks.ready(store, "rotate")
    for k in ops(a.stop_after):
        parent, child = "p%d" % k, "c%d" % k
        rotate(store.hs, store.db, parent, child, k)
        acks.ack("rotate", k, parent, child)
    return 0


def rotate(hs, db, parent, child, k):
    """One context compression with rotation, as
    agent/conversation_compression.py `compress_context` does it when
    `compression.in_place` is off, call for call and transaction for
    transaction (each SessionDB write below is its own _execute_write):

    - the agent's session exists (`_ensure_db_session` -> create_session);
    - try_acquire_compression_lock(old id, holder) (the lease, its own
      transaction);
    - `_flush_messages_to_session_db`: the turn's un-persisted message,
      append_message on the OLD session;
    - get_session_title(old) (a read);
    - end_session(old, "compression");
    - create_session(new, source, model, model_config, parent_session_id=old);
    - (migrate_goal_to_session: no /goal here, and it reads the profile's
      global state.db, not this one; the title is only propagated when the
      parent has one, and ours have none);
    - update_system_prompt(new, prompt);
    - replace_messages(new, compressed): the continuation's transcript, here
      one `system` message (the protocol's marker; Hermes's summary message
      is a user or assistant turn);
    - finally release_compression_lock(old, holder).

    So the rotation is published in FOUR transactions (end, create, prompt,
    messages), not one: a kill between end_session and create_session leaves
    a parent ended by compression without its continuation. That is Hermes's
    behaviour and cell 3's question; the adapter does not paper over it.
    The ack comes after the whole sequence returned."""
    db.create_session(parent, SOURCE, model=MODEL)
    holder = "pid=%d:crashcells:rotate=%d" % (os.getpid(), k)
    if not db.try_acquire_compression_lock(parent, holder, ttl_seconds=300.0):
        raise RuntimeError("could not take the compression lock on %s" % parent)
    try:
        db.append_message(parent, "user", "work %d" % k)
        db.get_session_title(parent)
        db.end_session(parent, "compression")
        db.create_session(child, SOURCE, model=MODEL, parent_session_id=parent)
        db.update_system_prompt(child, "You are a crashcells probe (continuation of %s)." % parent)
        db.replace_messages(child, [{"role": "system", "content": "continued from %s" % parent}])
    finally:
        db.release_compression_lock(parent, holder)


def op_park(a):
    """A CLI session asks for a handoff: create_session, then request_handoff
    (two transactions; the protocol does not kill park)."""
    store = Store(a.db)
    store.db.create_session(a.session, SOURCE)
    if not store.db.request_handoff(a.session, HANDOFF_PLATFORM):
        raise RuntimeError("request_handoff(%s) found no session to park or one already in flight" % a.session)
    return 0


def op_claim(a):
    """The gateway's handoff watcher claims with claim_handoff: one predicated
    UPDATE sessions SET handoff_state='running' WHERE handoff_state='pending'
    in one _execute_write; True means this process won.

    Hermes records nothing else about the claim: no message, no claimant. The
    claim lives in sessions.handoff_state alone, and `dump` derives the
    protocol's `claimed by` message from it. So that the derived message can
    name the winner, the winner then leaves its name with set_meta, in a second
    transaction of its own; a kill between the two only loses the name, never
    the claim (dump then names it `claimed by (unnamed)`)."""
    barrier = open(a.barrier, "rb")
    # Open before the barrier, so that released claimants race on the claim itself.
    store = Store(a.db)
    acks = Acks(a.acks)
    acks.ready(store, "claim")
    # Blocks while the driver holds its exclusive lock; its deadline bounds the wait.
    fcntl.flock(barrier.fileno(), fcntl.LOCK_SH)
    won = store.db.claim_handoff(a.session)
    if won:
        store.db.set_meta(CLAIMANT_KEY + a.session, a.claimant)
    acks.ack("claim", 0)
    return EXIT_WON if won else EXIT_LOST


# --- dump ----------------------------------------------------------------------


def op_dump(a):
    """Recovery pass, with the standard sqlite3 module only: the file is opened
    read-write (a read-only connection cannot roll back a hot journal) and no
    pragma is applied, so recovery never changes the mode under audit.
    SessionDB itself is not opened: its __init__ would set WAL and write."""
    if not os.path.isfile(a.db):
        raise FileNotFoundError("no database at %s" % a.db)
    try:
        state = read_state(a.db)
    except sqlite3.DatabaseError as e:
        if not isinstance(e, sqlite3.OperationalError) or "malformed" in str(e) or "not a database" in str(e):
            # A file SQLite calls corrupt is a finding, not a failed pass.
            state = empty_state("corrupt: %s" % e)
        else:
            raise
    sys.stdout.write(json.dumps(state, separators=(",", ":"), ensure_ascii=False) + "\n")
    return 0


def empty_state(integrity):
    return {"protocol": PROTOCOL, "integrity": integrity, "sessions": [], "messages": []}


# Hermes's schema (SCHEMA_SQL in hermes_state.py) to the canonical state:
#
# session  <- a row of `sessions`, sorted by id (TEXT, BINARY collation):
#   id                 sessions.id
#   parent_session_id  sessions.parent_session_id (set by create_session for a
#                      compression continuation)
#   ended              sessions.ended_at IS NOT NULL (end_session sets ended_at
#                      and end_reason in the same UPDATE)
#   end_reason         sessions.end_reason, as stored ("compression", ...)
#   message_count      sessions.message_count, Hermes's own counter: bumped by
#                      append_message in the INSERT's transaction, set by
#                      replace_messages. Not recounted here, so a counter that
#                      disagrees with the rows is visible to cell 1 (the
#                      derived claim messages below are not counted)
#   handoff_state      sessions.handoff_state, as stored (NULL, "pending",
#                      "running", "completed", "failed")
#
# message  <- a row of `messages` with active = 1, in id order (AUTOINCREMENT:
#   commit order for Hermes's single writer at a time), as Hermes's own
#   get_messages loads a transcript: rows soft-deleted by rewind_to_message or
#   archived by archive_and_compact (active = 0) are not part of it. Content
#   is stored as given for a string (our operations write only strings).
#   session_id, role, content  messages.session_id, .role, .content
#
# plus one derived message per landed handoff claim, after the stored ones:
#   {"session_id": <id>, "role": "system", "content": "claimed by <NAME>"} for
#   each session whose handoff_state left "pending" through a claim
#   ("running", and the later "completed"/"failed" of the gateway). Hermes's
#   claim_handoff changes only handoff_state and records no claimant, so the
#   count of claims is the state itself; <NAME> is the winner's state_meta note
#   (see op_claim), "(unnamed)" when the kill took it.
SESSIONS_SQL = (
    "SELECT id, parent_session_id, ended_at IS NOT NULL, end_reason, message_count, handoff_state "
    "FROM sessions ORDER BY id"
)
MESSAGES_SQL = "SELECT session_id, role, content FROM messages WHERE active = 1 ORDER BY id"
CLAIMED_STATES = ("running", "completed", "failed")


def read_state(db):
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        integrity = "; ".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"sessions", "messages"} <= tables:
            # Killed before SessionDB's schema was committed (its executescript
            # creates the tables one autocommit statement at a time): no session
            # was ever written, so this is the empty store.
            return empty_state(integrity)
        sessions = [
            {
                "id": sid,
                "parent_session_id": parent,
                "ended": bool(ended),
                "end_reason": reason,
                "message_count": count,
                "handoff_state": handoff,
            }
            for sid, parent, ended, reason, count, handoff in conn.execute(SESSIONS_SQL)
        ]
        messages = [
            {"session_id": sid, "role": role, "content": content}
            for sid, role, content in conn.execute(MESSAGES_SQL)
        ]
        names = claimant_names(conn, tables)
        for s in sessions:
            if s["handoff_state"] in CLAIMED_STATES:
                name = names.get(s["id"], "(unnamed)")
                messages.append({"session_id": s["id"], "role": "system", "content": "claimed by %s" % name})
        return {"protocol": PROTOCOL, "integrity": integrity, "sessions": sessions, "messages": messages}
    finally:
        conn.close()


def claimant_names(conn, tables):
    if "state_meta" not in tables:
        return {}
    rows = conn.execute("SELECT key, value FROM state_meta WHERE substr(key, 1, ?) = ?", (len(CLAIMANT_KEY), CLAIMANT_KEY))
    return {key[len(CLAIMANT_KEY) :]: value for key, value in rows}


# --- command line ----------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line and exit 2."""

    def error(self, message):
        raise Usage(message)


def parser():
    p = Parser(prog="adapter.py", description="Hermes's SessionDB behind the crashcells child protocol.")
    sub = p.add_subparsers(dest="op", required=True, parser_class=Parser)
    for name in ("append", "rotate"):
        s = sub.add_parser(name)
        s.add_argument("--db", required=True)
        s.add_argument("--acks", required=True)
        s.add_argument("--mutant")
        s.add_argument("--stop-after", type=int)
    s = sub.add_parser("park")
    s.add_argument("--db", required=True)
    s.add_argument("--session", required=True)
    s = sub.add_parser("claim")
    for flag in ("--db", "--acks", "--session", "--barrier", "--claimant"):
        s.add_argument(flag, required=True)
    s.add_argument("--mutant")
    s = sub.add_parser("dump")
    s.add_argument("--db", required=True)
    return p


def main():
    try:
        a = parser().parse_args()
        if getattr(a, "mutant", None) is not None:
            # No mutant is implemented: a mutant run must not pass silently.
            raise Usage("unknown mutant `%s`: this adapter implements none" % a.mutant)
    except Usage as e:
        print("adapter.py: error: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    run = {"append": op_append, "rotate": op_rotate, "park": op_park, "claim": op_claim, "dump": op_dump}[a.op]
    try:
        return run(a)
    except ConfigError as e:
        print("adapter.py: error: %s" % e, file=sys.stderr)
        return EXIT_CONFIG
    except (OSError, ImportError, RuntimeError, ValueError, sqlite3.Error) as e:
        print("adapter.py: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
