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

`fork` rewinds through `SessionDB.rewind_to_message` (a soft-delete of the
tail, one transaction), and `deliver`/`catch-up` go through the gateway's
delivery ledger (`gateway/delivery_ledger.py`: `record_obligation`,
`mark_attempting`, `mark_delivered`, `sweep_recoverable`), with the driver's
transport file as the messaging platform. The ledger keeps its table in
`$HERMES_HOME/state.db`, the SessionDB's own file; the adapter gives it a
home whose `state.db` is the protocol's `--db` (see `ledger_home`).

Only `dump` reads the file directly, with the standard `sqlite3` module, and
maps Hermes's schema to the protocol's canonical state (see `read_state`).

The wheel comes from `./fetch` (pinned version and sha256), unpacked into
`.wheel/site/` next to this file; the adapter needs nothing else than the
standard library.

Crash model: the process may be killed with SIGKILL at any instant. An ack is
written with one write(2) on an O_APPEND descriptor, only after the SessionDB
call(s) it acknowledges returned.

Run as: python3 adapter.py <append|rotate|park|claim|fork|deliver|catch-up|dump> [flags],
or python3 adapter.py fork-server (docs/PROTOCOL.md, "Fork server").
"""

import argparse
import fcntl
import json
import os
import sqlite3
import sys
import types

# The fork server's helper (docs/PROTOCOL.md, "Fork server"), beside the
# examples: the adapter is started once, imports Hermes once (0.1-0.3 s), and
# forks a process per operation. Without the helper, every operation is exec'd.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "forkserver"))
try:
    import crashcells_forkserver
except ImportError:
    crashcells_forkserver = None
del sys.path[0]

PROTOCOL = 2
# What the adapter implements, listed in the ready record (protocol 2), with
# "dump-batch": its dump takes several --db and prints a line for each,
# "catch-up-batch": its catch-up takes several --db/--transport pairs, and
# "fork-server" when the helper is there to serve forks.
OPERATIONS = ("append", "rotate", "park", "claim", "dump", "dump-batch", "fork", "deliver", "catch-up", "catch-up-batch") + (
    ("fork-server",) if crashcells_forkserver is not None else ()
)
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
# A fork run rewinds at every FORK_EVERY-th operation (docs/PROTOCOL.md, `fork`).
FORK_EVERY = 4
# Where `deliver`'s obligations are headed, as the gateway records them:
# the driver's transport file stands for this platform and chat.
LEDGER_PLATFORM = "crashcells"
LEDGER_CHAT = "transport"
LEDGER_SESSION_KEY = "agent:main:crashcells:dm:transport"
# The folder, beside the database, that serves as the ledger's HERMES_HOME.
LEDGER_HOME_SUFFIX = ".hermes-home"


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
                "operations": list(OPERATIONS),
            }
        )

    def ack(self, op, i, parent=None, child=None, **more):
        rec = {"kind": "ack", "op": op, "i": i}
        if parent is not None:
            rec["parent"], rec["child"] = parent, child
        rec.update(more)
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


def fork_step(seed, i, length):
    """Operation i of a fork run: ("append",) or ("rewind", k), as docs/PROTOCOL.md says."""
    if i % FORK_EVERY == FORK_EVERY - 1 and length >= 2:
        return ("rewind", (seed + i) % (length - 1))
    return ("append",)


def op_fork(a):
    """Session `main`, rewound as Hermes's /rewind does it: the live transcript
    is what get_messages loads (the active rows, in id order), and a rewind
    that keeps the first k live messages is
    rewind_to_message(main, id of the (k+1)-th), which soft-deletes that row
    and every later active one (active = 0) and bumps sessions.rewind_count,
    in one _execute_write transaction. It leaves sessions.message_count as it
    was (cell 4 does not read it). Appends are append_message, as in
    `append`."""
    store = Store(a.db)
    db = store.db
    db.create_session(APPEND_SESSION, SOURCE)
    acks = Acks(a.acks)
    acks.ready(store, "fork")
    for i in ops(a.stop_after):
        live = db.get_messages(APPEND_SESSION)
        step = fork_step(a.seed, i, len(live))
        if step[0] == "append":
            db.append_message(APPEND_SESSION, "user", "m%d" % i)
            acks.ack("append", i)
        else:
            k = step[1]
            # The target is itself soft-deleted: rewinding to the (k+1)-th
            # live message keeps the k before it. Every message here is a
            # `user` turn, the only role rewind_to_message accepts.
            db.rewind_to_message(APPEND_SESSION, live[k]["id"])
            acks.ack("rewind", i, k=k)
    return 0


# --- deliver and catch-up: the gateway's delivery ledger ------------------------


def ledger_home(db):
    """A HERMES_HOME for the delivery ledger. The ledger connects to
    `get_hermes_home() / "state.db"` (`_db_path`), the file Hermes's
    SessionDB uses by default; the driver names its database otherwise
    (`store.db`, `s3.db`, ...). So the home is a folder beside the database,
    `<db>.hermes-home/`, whose `state.db` is a relative symbolic link to it:
    SQLite resolves the link on open, so the ledger's connections use the
    very file (and its `-wal`) the SessionDB holds. Set before Hermes is
    imported, so the whole process sees one home (nothing reads the user's
    ~/.hermes)."""
    db = os.path.abspath(db)
    home = db + LEDGER_HOME_SUFFIX
    link = os.path.join(home, "state.db")
    target = os.path.join(os.pardir, os.path.basename(db))
    os.makedirs(home, exist_ok=True)
    if not (os.path.islink(link) and os.readlink(link) == target):
        # Missing, or not our link: a copy of the folder that followed the
        # link (crashcells' evidence folders do) holds a plain file here.
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    os.environ["HERMES_HOME"] = home
    return home


def import_ledger(site=SITE):
    """gateway.delivery_ledger from the unpacked wheel, standard library only.

    The module itself needs only the standard library and hermes_constants,
    but its package's __init__ (gateway/__init__.py) imports the gateway's
    config, session store and delivery router, which import PyYAML. So the
    package is registered as a bare package whose path is the wheel's
    gateway folder, and the ledger module, unmodified, is imported from it.

    The ledger tells a dead owner from a live one by its pid and process
    start time (`_owner_stamp`, `_owner_alive`), read with
    gateway.status.get_process_start_time (/proc/<pid>/stat). Without
    gateway.status it falls back to the pid alone, which a recycled pid
    fools: a catch-up then takes a dead deliver's obligation for a live
    gateway's and leaves it undelivered (seen here under load, pids
    wrapping at 32768 within a sweep). gateway.status is standard library
    but for `from utils import atomic_json_write` (utils imports PyYAML),
    which only its status-file writer calls. So the adapter imports the
    real gateway.status with a stand-in `utils` whose atomic_json_write
    refuses to run, on every machine alike, PyYAML or not: the ledger runs
    as in a gateway, with the pid-reuse guard."""
    if "gateway" not in sys.modules:
        package = types.ModuleType("gateway")
        package.__path__ = [os.path.join(site, "gateway")]
        sys.modules["gateway"] = package
    if "utils" not in sys.modules:
        stand_in = types.ModuleType("utils")

        def atomic_json_write(*args, **kwargs):
            raise RuntimeError("utils.atomic_json_write is a stand-in in this adapter: no gateway status file is written")

        stand_in.atomic_json_write = atomic_json_write
        sys.modules["utils"] = stand_in
    import gateway.delivery_ledger as ledger
    import gateway.status

    if gateway.status.get_process_start_time(os.getpid()) is None:
        raise RuntimeError("gateway.status cannot read this process's start time: the ledger would fall back to bare pids")
    return ledger


def send(path, key, payload):
    """The platform's send: one delivery line appended to the driver's
    transport with a single write(2) on an O_APPEND descriptor."""
    line = (json.dumps({"key": key, "payload": payload}, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        n = os.write(fd, line)
    finally:
        os.close(fd)
    if n != len(line):
        raise OSError("short write of a send: %d of %d bytes" % (n, len(line)))


def op_deliver(a):
    """The gateway's final-response delivery (gateway/platforms/base.py, the
    ledger block around `_send_with_retry`), one obligation at a time:
    record_obligation (state `pending`), mark_attempting, the send, then
    mark_delivered on success or mark_failed on a failed send. Every ledger
    call opens its own connection (`_connect`: PRAGMA journal_mode=WAL,
    CREATE TABLE IF NOT EXISTS) and commits its own transaction;
    record_obligation is followed by `_prune`, a transaction of its own. The
    obligation id is the protocol's key `o<j>` (the gateway hashes the turn
    into one with compute_obligation_id; record_obligation takes any id)."""
    ledger_home(a.db)
    store = Store(a.db)
    ledger = import_ledger()
    acks = Acks(a.acks)
    acks.ready(store, "deliver")
    for j in ops(a.stop_after):
        key = "o%d" % j
        content = "effect of %s" % key
        ledger.record_obligation(
            obligation_id=key,
            session_key=LEDGER_SESSION_KEY,
            platform=LEDGER_PLATFORM,
            chat_id=LEDGER_CHAT,
            thread_id=None,
            content=content,
        )
        ledger.mark_attempting(key)
        try:
            send(a.transport, key, content)
        except OSError as e:
            # The gateway marks a send that did not succeed failed; the
            # protocol makes it an error, never an ack.
            ledger.mark_failed(key, str(e))
            raise
        ledger.mark_delivered(key)
        acks.ack("deliver", j, key=key)
    return 0


def op_catch_up(a):
    """The gateway's restart path (`_redeliver_pending_obligations` in
    gateway/run.py): sweep_recoverable claims every row left `pending`,
    `attempting` or `failed` by a dead owner (re-stamping the owner and
    counting the attempt, one transaction), then each claimed row is sent,
    with Hermes's RECOVERED_MARKER in front when it was not `pending`, and
    marked delivered (or failed). Hermes never asks the platform whether an
    `attempting` row arrived: its contract is at-least-once with a visible
    marker, so a kill between the send and mark_delivered makes this send
    the obligation a second time. That is Hermes's design and cell 5's
    question; the adapter does what the gateway does.

    With several --db and --transport (catch-up-batch), each store's restart
    in turn: the ledger finds its database through HERMES_HOME on every
    call (`_db_path`), so pointing the home at the next store is all a
    second restart needs."""
    if len(a.db) != len(a.transport):
        print("adapter.py: error: --db and --transport come in pairs", file=sys.stderr)
        return EXIT_CONFIG
    ledger = None
    for db, transport in zip(a.db, a.transport):
        ledger_home(db)
        Store(db)
        ledger = ledger or import_ledger()
        restart(ledger, transport)
    return 0


def restart(ledger, transport):
    """One store's `_redeliver_pending_obligations`, to the transport given."""
    claimed = ledger.sweep_recoverable(None, deliverable_platforms={LEDGER_PLATFORM})
    failed = []
    for row in claimed:
        content = row["content"]
        if row.get("needs_marker"):
            content = ledger.RECOVERED_MARKER + content
        try:
            send(transport, row["obligation_id"], content)
        except OSError as e:
            ledger.mark_failed(row["obligation_id"], str(e))
            failed.append("%s (%s)" % (row["obligation_id"], e))
            continue
        ledger.mark_delivered(row["obligation_id"])
    if failed:
        raise RuntimeError("could not redeliver %s" % ", ".join(failed))


# --- dump ----------------------------------------------------------------------


def op_dump(a):
    """Recovery pass, with the standard sqlite3 module only: the file is opened
    read-write (a read-only connection cannot roll back a hot journal) and no
    pragma is applied, so recovery never changes the mode under audit.
    SessionDB itself is not opened: its __init__ would set WAL and write.
    With several --db (dump-batch), one line per database, in the order
    given, each from a fresh connection closed before the next one opens;
    every file is checked before any line is printed."""
    for db in a.db:
        if not os.path.isfile(db):
            raise FileNotFoundError("no database at %s" % db)
    lines = [json.dumps(recovered_state(db), separators=(",", ":"), ensure_ascii=False) + "\n" for db in a.db]
    sys.stdout.write("".join(lines))
    return 0


def recovered_state(db):
    try:
        return read_state(db)
    except sqlite3.DatabaseError as e:
        if not isinstance(e, sqlite3.OperationalError) or "malformed" in str(e) or "not a database" in str(e):
            # A file SQLite calls corrupt is a finding, not a failed pass.
            return empty_state("corrupt: %s" % e)
        raise


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
# message  <- every row of `messages`, in id order (AUTOINCREMENT: commit
#   order for Hermes's single writer at a time). Content is stored as given
#   for a string (our operations write only strings).
#   session_id, role, content  messages.session_id, .role, .content
#   active             "active": false only for a row with active = 0, which
#                      rewind_to_message soft-deleted (the protocol's
#                      soft-delete form of a rewind; archive_and_compact
#                      also sets it, and no operation here calls it). The
#                      live transcript (what get_messages loads) is the rows
#                      without it. Absent for an active row.
#
# plus one derived message per landed handoff claim, after the stored ones:
#   {"session_id": <id>, "role": "system", "content": "claimed by <NAME>"} for
#   each session whose handoff_state left "pending" through a claim
#   ("running", and the later "completed"/"failed" of the gateway). Hermes's
#   claim_handoff changes only handoff_state and records no claimant, so the
#   count of claims is the state itself; <NAME> is the winner's state_meta note
#   (see op_claim), "(unnamed)" when the kill took it.
#
# outbox  <- the rows of the delivery ledger's `delivery_obligations` table
#   (created in the same file by `deliver`), sorted by key; omitted when the
#   table is missing or empty:
#   key                obligation_id (the adapter records `o<j>`)
#   state              Hermes's state, mapped to the protocol's three:
#                      pending -> recorded (never sent);
#                      attempting -> attempting (the send may have arrived);
#                      failed -> attempting (a send that did not succeed,
#                        which sweep_recoverable sends again, with the marker);
#                      abandoned -> attempting (given up after MAX_ATTEMPTS or
#                        24 h: never known delivered);
#                      delivered -> delivered.
#   Hermes's `_prune` deletes delivered rows after 7 days and the oldest ones
#   beyond 500 rows; runs here are far shorter than either.
SESSIONS_SQL = (
    "SELECT id, parent_session_id, ended_at IS NOT NULL, end_reason, message_count, handoff_state "
    "FROM sessions ORDER BY id"
)
MESSAGES_SQL = "SELECT session_id, role, content, active FROM messages ORDER BY id"
OUTBOX_SQL = "SELECT obligation_id, state FROM delivery_obligations ORDER BY obligation_id"
OUTBOX_STATES = {
    "pending": "recorded",
    "attempting": "attempting",
    "failed": "attempting",
    "abandoned": "attempting",
    "delivered": "delivered",
}
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
        messages = [message(*row) for row in conn.execute(MESSAGES_SQL)]
        names = claimant_names(conn, tables)
        for s in sessions:
            if s["handoff_state"] in CLAIMED_STATES:
                name = names.get(s["id"], "(unnamed)")
                messages.append({"session_id": s["id"], "role": "system", "content": "claimed by %s" % name})
        state = {"protocol": PROTOCOL, "integrity": integrity, "sessions": sessions, "messages": messages}
        if "delivery_obligations" in tables:
            outbox = [{"key": key, "state": outbox_state(st)} for key, st in conn.execute(OUTBOX_SQL)]
            if outbox:
                # Omitted when empty: a default is not canonical.
                state["outbox"] = outbox
        return state
    finally:
        conn.close()


def message(sid, role, content, active):
    m = {"session_id": sid, "role": role, "content": content}
    if not active:
        m["active"] = False
    return m


def outbox_state(state):
    if state not in OUTBOX_STATES:
        raise ValueError("delivery_obligations has a row in state %r, which this adapter does not know" % state)
    return OUTBOX_STATES[state]


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
    s.add_argument("--db", required=True, action="append")
    for name in ("fork", "deliver"):
        s = sub.add_parser(name)
        s.add_argument("--db", required=True)
        s.add_argument("--acks", required=True)
        s.add_argument("--mutant")
        s.add_argument("--stop-after", type=int)
    sub.choices["fork"].add_argument("--seed", type=int, required=True)
    sub.choices["deliver"].add_argument("--transport", required=True)
    s = sub.add_parser("catch-up")
    s.add_argument("--db", required=True, action="append")
    s.add_argument("--transport", required=True, action="append")
    s.add_argument("--mutant")
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
    run = {
        "append": op_append,
        "rotate": op_rotate,
        "park": op_park,
        "claim": op_claim,
        "fork": op_fork,
        "deliver": op_deliver,
        "catch-up": op_catch_up,
        "dump": op_dump,
    }[a.op]
    try:
        return run(a)
    except ConfigError as e:
        print("adapter.py: error: %s" % e, file=sys.stderr)
        return EXIT_CONFIG
    except (OSError, ImportError, RuntimeError, ValueError, sqlite3.Error) as e:
        print("adapter.py: error: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return EXIT_ERROR


def preload():
    """The fork server's imports, done once before it forks: hermes_state
    (with the agent modules it imports) and the gateway's delivery ledger.
    Neither opens a database or a file at import: SessionDB connects in its
    __init__, the ledger in each call, so a forked process starts as fresh
    as an exec'd one. The config home is still read by each operation,
    before it touches the store."""
    import_hermes()
    import_ledger()


if __name__ == "__main__":
    if crashcells_forkserver is not None and sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.serve(main, preload=preload)
    sys.exit(main())
