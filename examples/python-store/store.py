#!/usr/bin/env python3
"""A second session store behind the crashcells child protocol (docs/PROTOCOL.md).

It uses only the standard library: `sqlite3` (so the system's SQLite, whatever
version python3 links), `json`, `fcntl` and `argparse`. Its schema is its own
(`conversations` and `turns`); the driver sees it only through the ack journal
and `dump`'s canonical JSON, which is the point: any store can stand here.

Crash model: the process may be killed with SIGKILL at any instant. Every write
is one `BEGIN IMMEDIATE` transaction; an ack is written with one `write(2)`
only after the transaction that it acknowledges committed.

It rewinds (`fork`) by branching, where the reference store soft-deletes: a
rewind creates a conversation that copies the kept prefix and names the one it
branches from, in one transaction. `dump` shows it as `branch_of`, and the
driver follows those links to the live transcript.

Run as: python3 store.py <append|rotate|park|claim|fork|deliver|catch-up|dump> [flags],
or python3 store.py fork-server (docs/PROTOCOL.md, "Fork server"),
or python3 store.py warm-pool (docs/PROTOCOL.md, "Warm pool").
"""

import argparse
import fcntl
import json
import os
import sqlite3
import sys
import time

# The fork server's helper (docs/PROTOCOL.md, "Fork server"), beside the
# examples; a copy of this file without it runs every operation exec'd.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "forkserver"))
try:
    import crashcells_forkserver
except ImportError:
    crashcells_forkserver = None
del sys.path[0]

PROTOCOL = 2
# What this store implements; protocol 2 lists it in the ready record, with
# "dump-batch": its dump takes several --db and prints a line for each,
# "catch-up-batch": its catch-up takes several --db/--transport pairs,
# "rotate-shapes": its rotate takes --shapes on (docs/PROTOCOL.md, `rotate`),
# and "fork-server" and "warm-pool" when the helper is there to serve forks
# and warm processes (a run prefers the fork server; the warm pool is for
# runtimes that cannot fork, and this store offers it for the tests).
OPERATIONS = (
    "append",
    "rotate",
    "park",
    "claim",
    "dump",
    "dump-batch",
    "rotate-shapes",
    "fork",
    "deliver",
    "catch-up",
    "catch-up-batch",
) + (
    ("fork-server", "warm-pool") if crashcells_forkserver is not None else ()
)
EXIT_WON = 0
EXIT_LOST = 10
EXIT_CONFIG = 2
EXIT_ERROR = 3
APPEND_SESSION = "main"
BUSY_TIMEOUT_S = 5.0
BUSY_RETRIES = 8
JOURNAL_MODES = ("delete", "truncate", "persist", "memory", "wal", "off")
SYNC_LEVELS = ("off", "normal", "full", "extra")
MUTANTS = (
    "ack-before-commit",
    "racy-claim",
    "split-rotation",
    "split-claim",
    "torn-fork",
    "resend-on-catch-up",
    "split-continuation",
    "torn-branch",
)
# A fork run rewinds at every FORK_EVERY-th operation (docs/PROTOCOL.md, `fork`).
FORK_EVERY = 4
# A carrying rotation carries the parent's last CARRIED turns (docs/PROTOCOL.md, `rotate`).
CARRIED = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    name TEXT PRIMARY KEY,
    continues TEXT REFERENCES conversations(name),
    opened REAL NOT NULL,
    closed REAL,
    close_reason TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    handoff TEXT,
    branched_from TEXT REFERENCES conversations(name)
);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(name),
    speaker TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation);
"""

# Created by `deliver` and `catch-up` only, so the other operations keep their schema.
OUTBOX_SCHEMA = """
CREATE TABLE IF NOT EXISTS obligations (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    state TEXT NOT NULL
);
"""


class ConfigError(Exception):
    """A config home the store cannot honour: exit 2, never a silent fallback."""


# --- config home -------------------------------------------------------------


def parse_config(text):
    """The `[database]` table of config.toml. tomllib where there is one
    (Python 3.11+), else a reader for the flat `key = "value"` lines this file
    holds."""
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
    unknown = set(db) - {"journal_mode", "synchronous"}
    if unknown:
        raise ConfigError("unknown key `%s` in [database]" % sorted(unknown)[0])
    return check_value(db.get("journal_mode"), JOURNAL_MODES, "journal_mode"), check_value(
        db.get("synchronous"), SYNC_LEVELS, "synchronous"
    )


def parse_flat_toml(text):
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


# --- resolver ----------------------------------------------------------------


def version_tuple(text):
    return tuple(int(p) for p in text.split(".")[:3])


def wal_reset_affected(v):
    """The WAL-reset bug: 3.7.0 <= v < 3.51.3, except the backports
    3.44.6 <= v < 3.45.0 and 3.50.7 <= v < 3.51.0."""

    def within(lo, hi):
        return lo <= v < hi

    return (
        within((3, 7, 0), (3, 51, 3))
        and not within((3, 44, 6), (3, 45, 0))
        and not within((3, 50, 7), (3, 51, 0))
    )


def header_is_wal(path):
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def resolve(requested, synchronous, version, file_is_wal):
    """The journal mode to apply and why; the same gate as the reference store,
    applied to the SQLite this python3 links."""
    wanted = requested or "wal"
    shown = ".".join(str(p) for p in version)
    if wanted == "wal" and wal_reset_affected(version):
        if file_is_wal:
            applied, by = "wal", "already-wal"
            why = "SQLite %s has the WAL-reset bug, but the file is already in WAL and stays WAL" % shown
        else:
            applied, by = "delete", "wal-reset-gate"
            why = (
                "WAL-reset gate: SQLite %s is affected (3.7.0 <= v < 3.51.3 without the "
                "3.44.6/3.50.7 backports), so WAL is refused and DELETE applied" % shown
            )
    elif requested is not None:
        applied, by, why = wanted, "config", "config asked for %s" % wanted
    else:
        applied, by, why = wanted, "default", "nothing asked; resolver default %s" % wanted
    return {
        "requested": requested,
        "applied": applied,
        "synchronous": synchronous,
        "decided_by": by,
        "reason": why,
    }


# --- the store ---------------------------------------------------------------


def is_busy(e):
    return isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e))


def with_retry(f):
    for attempt in range(BUSY_RETRIES + 1):
        try:
            return f()
        except sqlite3.OperationalError as e:
            if not is_busy(e) or attempt == BUSY_RETRIES:
                raise


class Store:
    def __init__(self, path):
        requested, synchronous = read_config()
        version = version_tuple(sqlite3.sqlite_version)
        self.decision = resolve(requested, synchronous, version, header_is_wal(path))
        # isolation_level=None: no implicit transactions; each write says BEGIN IMMEDIATE itself.
        self.conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        mode = with_retry(lambda: self.conn.execute("PRAGMA journal_mode=%s" % self.decision["applied"]).fetchone())
        self.journal_mode = str(mode[0]).lower()
        if synchronous is not None:
            self.conn.execute("PRAGMA synchronous=%s" % synchronous)
        level = self.conn.execute("PRAGMA synchronous").fetchone()[0]
        self.synchronous = SYNC_LEVELS[level] if 0 <= level < len(SYNC_LEVELS) else None
        with_retry(lambda: self.conn.executescript(SCHEMA))

    def transaction(self, body, before_commit=None):
        """Runs body(conn) in one BEGIN IMMEDIATE transaction, retried while busy.
        Only a mutant passes before_commit."""
        for attempt in range(BUSY_RETRIES + 1):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if is_busy(e) and attempt < BUSY_RETRIES:
                    continue
                raise
            try:
                value = body(self.conn)
                if before_commit is not None:
                    before_commit()
                self.conn.execute("COMMIT")
                return value
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    def create(self, name, continues=None, handoff=None):
        self.transaction(lambda c: insert_conversation(c, name, continues, handoff))

    def append(self, name, speaker, body, before_commit=None):
        self.transaction(lambda c: insert_turn(c, name, speaker, body), before_commit)

    def claim(self, name, claimant):
        def body(c):
            cur = c.execute("UPDATE conversations SET handoff='running' WHERE name=? AND handoff='pending'", (name,))
            if cur.rowcount == 1:
                insert_turn(c, name, "system", "claimed by %s" % claimant)
                return True
            return False

        return self.transaction(body)

    def claim_split(self, name, claimant):
        """Mutant split-claim: the predicated update commits alone and the
        winner records its claim in a second transaction; a kill between the
        two leaves the handoff running and claimed by nobody."""
        cur = self.transaction(
            lambda c: c.execute("UPDATE conversations SET handoff='running' WHERE name=? AND handoff='pending'", (name,))
        )
        if cur.rowcount != 1:
            return False
        self.transaction(lambda c: insert_turn(c, name, "system", "claimed by %s" % claimant))
        return True

    def claim_racy(self, name, claimant):
        """Mutant racy-claim: a read, then an unpredicated update."""
        row = with_retry(lambda: self.conn.execute("SELECT handoff FROM conversations WHERE name=?", (name,)).fetchone())
        if row is None or row[0] != "pending":
            return False

        def body(c):
            c.execute("UPDATE conversations SET handoff='running' WHERE name=?", (name,))
            insert_turn(c, name, "system", "claimed by %s" % claimant)
            return True

        return self.transaction(body)

    def take_lease(self, parent):
        def body(c):
            cur = c.execute("UPDATE conversations SET handoff='compressing' WHERE name=? AND handoff IS NULL", (parent,))
            expect_one(cur, "lease on %s" % parent)

        self.transaction(body)

    def prepare_rotation(self, parent, create, work):
        """With shapes: the parent made ready in one transaction (created
        unless it is a continuation rotated again, its work turns added, the
        lease taken); the driver checks none of it."""

        def body(c):
            if create:
                insert_conversation(c, parent)
            for speaker, text in work:
                insert_turn(c, parent, speaker, text)
            cur = c.execute("UPDATE conversations SET handoff='compressing' WHERE name=? AND handoff IS NULL", (parent,))
            expect_one(cur, "lease on %s" % parent)

        self.transaction(body)

    def publish_rotation(self, parent, child, carried=0):
        def body(c):
            insert_continuation(c, parent, child, carried)
            close_by_compression(c, parent)

        self.transaction(body)

    def publish_rotation_split(self, parent, child, carried=0):
        """Mutant split-rotation: the parent is closed and the continuation
        inserted in two transactions; a kill between them leaves an orphan."""
        self.transaction(lambda c: close_by_compression(c, parent))
        self.transaction(lambda c: insert_continuation(c, parent, child, carried))

    def publish_rotation_split_continuation(self, parent, child, carried=0):
        """Mutant split-continuation: the continuation is linked and the parent
        closed in one transaction, what the continuation holds (its system turn
        and the carried turns) written in a second; a kill between them leaves
        a continuation without its summary."""

        def link(c):
            insert_conversation(c, child, continues=parent)
            close_by_compression(c, parent)

        self.transaction(link)
        self.transaction(lambda c: fill_continuation(c, parent, child, carried))

    # --- fork: rewinds by branching ---------------------------------------------

    def head(self, name):
        """The live head of `name`: follow the conversations that branch from it."""
        while True:
            row = self.conn.execute("SELECT name FROM conversations WHERE branched_from=?", (name,)).fetchone()
            if row is None:
                return name
            name = row[0]

    def live_len(self, name):
        return self.conn.execute("SELECT turns FROM conversations WHERE name=?", (self.head(name),)).fetchone()[0]

    def rewind(self, name, k, branch):
        """One transaction: `branch` copies the first k turns of the head and branches from it."""

        def body(c):
            head = self.head(name)
            insert_conversation(c, branch, branched_from=head)
            for speaker, text in c.execute(
                "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq LIMIT ?", (head, k)
            ).fetchall():
                insert_turn(c, branch, speaker, text)

        self.transaction(body)

    def rewind_torn(self, name, k, branch):
        """Mutant torn-fork: copy the whole transcript into the branch, then trim
        its tail one turn per transaction: each commit shows a prefix nobody chose."""
        self.rewind(name, 1 << 62, branch)
        while self.live_len(name) > k:

            def trim(c):
                c.execute("DELETE FROM turns WHERE seq = (SELECT max(seq) FROM turns WHERE conversation=?)", (branch,))
                c.execute("UPDATE conversations SET turns = turns - 1 WHERE name=?", (branch,))

            self.transaction(trim)

    def rewind_torn_branch(self, name, k, branch):
        """Mutant torn-branch: the branch is committed first, then each kept
        turn copied into it in a transaction of its own. A rewind that keeps
        nothing is still one transaction, so only a rewind that keeps some
        shows the tear."""
        head = self.head(name)
        kept = self.conn.execute(
            "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq LIMIT ?", (head, k)
        ).fetchall()
        self.transaction(lambda c: insert_conversation(c, branch, branched_from=head))
        for speaker, text in kept:
            self.transaction(lambda c, s=speaker, t=text: insert_turn(c, branch, s, t))

    # --- the outbox ---------------------------------------------------------------

    def open_outbox(self):
        with_retry(lambda: self.conn.executescript(OUTBOX_SCHEMA))

    def record_obligation(self, key, payload):
        self.transaction(
            lambda c: c.execute("INSERT INTO obligations (key, payload, state) VALUES (?, ?, 'recorded')", (key, payload))
        )

    def mark(self, key, old, new):
        def body(c):
            cur = c.execute("UPDATE obligations SET state=? WHERE key=? AND state=?", (new, key, old))
            expect_one(cur, "marking %s %s" % (key, new))

        self.transaction(body)

    def pending(self):
        return self.conn.execute(
            "SELECT key, payload, state FROM obligations WHERE state != 'delivered' ORDER BY rowid"
        ).fetchall()


def expect_one(cur, what):
    if cur.rowcount != 1:
        raise sqlite3.IntegrityError("%s changed %d rows, not 1" % (what, cur.rowcount))


def insert_conversation(c, name, continues=None, handoff=None, branched_from=None):
    c.execute(
        "INSERT OR IGNORE INTO conversations (name, continues, opened, handoff, branched_from) VALUES (?, ?, ?, ?, ?)",
        (name, continues, time.time(), handoff, branched_from),
    )


def insert_turn(c, name, speaker, body):
    c.execute("INSERT INTO turns (conversation, speaker, body) VALUES (?, ?, ?)", (name, speaker, body))
    expect_one(c.execute("UPDATE conversations SET turns = turns + 1 WHERE name=?", (name,)), "turn count of %s" % name)


def insert_continuation(c, parent, child, carried=0):
    insert_conversation(c, child, continues=parent)
    fill_continuation(c, parent, child, carried)


def fill_continuation(c, parent, child, carried):
    """What a rotation puts in its continuation: the system turn, then copies
    of the parent's last `carried` turns, in order."""
    insert_turn(c, child, "system", "continued from %s" % parent)
    if carried:
        tail = c.execute(
            "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq DESC LIMIT ?", (parent, carried)
        ).fetchall()
        for speaker, body in reversed(tail):
            insert_turn(c, child, speaker, body)


def close_by_compression(c, parent):
    cur = c.execute(
        "UPDATE conversations SET closed=?, close_reason='compression' WHERE name=? AND closed IS NULL",
        (time.time(), parent),
    )
    expect_one(cur, "closing %s" % parent)


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
        source_id = store.conn.execute("SELECT sqlite_source_id()").fetchone()[0]
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
                "resolver": store.decision,
                "operations": list(OPERATIONS),
            }
        )

    def ack(self, op, i, parent=None, child=None, **more):
        rec = {"kind": "ack", "op": op, "i": i}
        if parent is not None:
            rec["parent"], rec["child"] = parent, child
        rec.update(more)
        self.record(rec)


# --- the fake transport ----------------------------------------------------------


def send(path, key, payload):
    """Appends one delivery line to the transport with a single write(2)."""
    line = (json.dumps({"key": key, "payload": payload}, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        n = os.write(fd, line)
    finally:
        os.close(fd)
    if n != len(line):
        raise OSError("short write of a send: %d of %d bytes" % (n, len(line)))


def arrived(path):
    """The keys the provider accepted: every complete line of the transport
    (a final line without its newline is a send the kill cut short)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return set()
    complete = data[: data.rfind(b"\n") + 1]
    return {json.loads(line)["key"] for line in complete.splitlines() if line}


# --- the operations --------------------------------------------------------------


def ops(stop_after):
    i = 0
    while stop_after is None or i < stop_after:
        yield i
        i += 1


def op_append(a):
    store = Store(a.db)
    store.create(APPEND_SESSION)
    acks = Acks(a.acks)
    acks.ready(store, "append")
    for i in ops(a.stop_after):
        if a.mutant == "ack-before-commit":
            store.append(APPEND_SESSION, "user", "m%d" % i, before_commit=lambda: acks.ack("append", i))
        else:
            store.append(APPEND_SESSION, "user", "m%d" % i)
            acks.ack("append", i)
    return 0


def rotation(k, shapes):
    """Rotation k of a rotate run: (parent, child, carried), by the rule of
    docs/PROTOCOL.md (`rotate`). With shapes, odd rotations rotate the last
    continuation again, and rotations 1 and 2 of every four carry the parent's
    last CARRIED turns."""
    parent = "c%d" % (k - 1) if shapes and k % 2 == 1 else "p%d" % k
    carried = CARRIED if shapes and k % 4 in (1, 2) else 0
    return parent, "c%d" % k, carried


def op_rotate(a):
    store = Store(a.db)
    acks = Acks(a.acks)
    acks.ready(store, "rotate")
    shapes = a.shapes == "on"
    publish = {
        "split-rotation": store.publish_rotation_split,
        "split-continuation": store.publish_rotation_split_continuation,
    }.get(a.mutant, store.publish_rotation)
    for k in ops(a.stop_after):
        parent, child, carried = rotation(k, shapes)
        if shapes:
            work = [("user", "work %d" % k), ("assistant", "reply %d" % k)]
            store.prepare_rotation(parent, not parent.startswith("c"), work)
        else:
            store.create(parent)
            store.append(parent, "user", "work %d" % k)
            store.take_lease(parent)
        publish(parent, child, carried)
        if shapes:
            acks.ack("rotate", k, parent, child, carried=carried)
        else:
            acks.ack("rotate", k, parent, child)
    return 0


def op_park(a):
    Store(a.db).create(a.session, handoff="pending")
    return 0


def op_claim(a):
    barrier = open(a.barrier, "rb")
    # Open before the barrier, so that released claimants race on the claim itself.
    store = Store(a.db)
    acks = Acks(a.acks)
    acks.ready(store, "claim")
    # Blocks while the driver holds its exclusive lock; its deadline bounds the wait.
    fcntl.flock(barrier.fileno(), fcntl.LOCK_SH)
    if a.mutant == "racy-claim":
        won = store.claim_racy(a.session, a.claimant)
    elif a.mutant == "split-claim":
        won = store.claim_split(a.session, a.claimant)
    else:
        won = store.claim(a.session, a.claimant)
    acks.ack("claim", 0)
    return EXIT_WON if won else EXIT_LOST


def fork_step(seed, i, length):
    """Operation i of a fork run: ("append",) or ("rewind", k), as docs/PROTOCOL.md says."""
    if i % FORK_EVERY == FORK_EVERY - 1 and length >= 2:
        return ("rewind", (seed + i) % (length - 1))
    return ("append",)


def op_fork(a):
    store = Store(a.db)
    store.create(APPEND_SESSION)
    acks = Acks(a.acks)
    acks.ready(store, "fork")
    for i in ops(a.stop_after):
        step = fork_step(a.seed, i, store.live_len(APPEND_SESSION))
        if step[0] == "append":
            store.append(store.head(APPEND_SESSION), "user", "m%d" % i)
            acks.ack("append", i)
        else:
            rewind = {"torn-fork": store.rewind_torn, "torn-branch": store.rewind_torn_branch}.get(a.mutant, store.rewind)
            rewind(APPEND_SESSION, step[1], "%s~%d" % (APPEND_SESSION, i))
            acks.ack("rewind", i, k=step[1])
    return 0


def op_deliver(a):
    store = Store(a.db)
    store.open_outbox()
    acks = Acks(a.acks)
    acks.ready(store, "deliver")
    for j in ops(a.stop_after):
        key = "o%d" % j
        payload = "effect of %s" % key
        store.record_obligation(key, payload)
        store.mark(key, "recorded", "attempting")
        send(a.transport, key, payload)
        store.mark(key, "attempting", "delivered")
        acks.ack("deliver", j, key=key)
    return 0


def op_catch_up(a):
    """The restart step: finish what a crash left recorded or attempting. An
    attempting one may have arrived, so the provider is asked first (the
    resend-on-catch-up mutant does not ask). With several --db and
    --transport (catch-up-batch), each store with its transport, in order."""
    if len(a.db) != len(a.transport):
        print("store.py: error: --db and --transport come in pairs", file=sys.stderr)
        return EXIT_CONFIG
    for db, transport in zip(a.db, a.transport):
        catch_up_one(db, transport, a.mutant)
    return 0


def catch_up_one(db, transport, mutant):
    store = Store(db)
    store.open_outbox()
    there = arrived(transport)
    for key, payload, state in store.pending():
        if state == "recorded":
            store.mark(key, "recorded", "attempting")
        asked = mutant != "resend-on-catch-up"
        if not (asked and state == "attempting" and key in there):
            send(transport, key, payload)
        store.mark(key, "attempting", "delivered")
    store.conn.close()


def op_dump(a):
    """Recovery pass: opening the file rolls back a hot journal or replays the
    WAL. It never applies the resolver: recovery must not change the mode.
    With several --db (dump-batch), one line per database, in order, each from
    a fresh connection; every file is checked before any line is printed."""
    for db in a.db:
        if not os.path.isfile(db):
            raise FileNotFoundError("no database at %s" % db)
    lines = []
    for db in a.db:
        lines.append(json.dumps(recovered_state(db), separators=(",", ":"), ensure_ascii=False) + "\n")
    sys.stdout.write("".join(lines))
    return 0


def recovered_state(db):
    try:
        return read_state(db)
    except sqlite3.DatabaseError as e:
        if not isinstance(e, sqlite3.OperationalError) or "malformed" in str(e) or "not a database" in str(e):
            # A file SQLite calls corrupt is a finding about the store, not a
            # failed recovery pass: say so in `integrity`, with nothing recovered.
            return empty_state("corrupt: %s" % e)
        raise


def empty_state(integrity):
    return {"protocol": PROTOCOL, "integrity": integrity, "sessions": [], "messages": []}


def read_state(db):
    # A fresh connection per database, closed before the next one opens.
    conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        return read_state_with(conn)
    finally:
        conn.close()


def read_state_with(conn):
    integrity = "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"conversations", "turns"} <= tables:
        # Killed before the schema was committed: nothing was ever stored.
        return empty_state(integrity)
    sessions = [
        session(*row)
        for row in conn.execute(
            "SELECT name, continues, closed IS NOT NULL, close_reason, turns, handoff, branched_from "
            "FROM conversations ORDER BY name"
        )
    ]
    messages = [
        {"session_id": conv, "role": speaker, "content": body}
        for conv, speaker, body in conn.execute("SELECT conversation, speaker, body FROM turns ORDER BY seq")
    ]
    state = {"protocol": PROTOCOL, "integrity": integrity, "sessions": sessions, "messages": messages}
    if "obligations" in tables:
        outbox = [{"key": k, "state": s} for k, s in conn.execute("SELECT key, state FROM obligations ORDER BY key")]
        if outbox:
            # Omitted when empty, so a store without obligations prints version 1's bytes.
            state["outbox"] = outbox
    return state


def session(name, continues, closed, reason, turns, handoff, branched_from):
    s = {
        "id": name,
        "parent_session_id": continues,
        "ended": bool(closed),
        "end_reason": reason,
        "message_count": turns,
        "handoff_state": handoff,
    }
    if branched_from is not None:
        s["branch_of"] = branched_from
    return s


def parser():
    p = argparse.ArgumentParser(prog="store.py", description="A Python session store for crashcells.")
    sub = p.add_subparsers(dest="op", required=True)
    for name in ("append", "rotate"):
        s = sub.add_parser(name)
        s.add_argument("--db", required=True)
        s.add_argument("--acks", required=True)
        s.add_argument("--mutant", choices=MUTANTS)
        s.add_argument("--stop-after", type=int)
    sub.choices["rotate"].add_argument("--shapes", choices=("on",))
    s = sub.add_parser("park")
    s.add_argument("--db", required=True)
    s.add_argument("--session", required=True)
    s = sub.add_parser("claim")
    for flag in ("--db", "--acks", "--session", "--barrier", "--claimant"):
        s.add_argument(flag, required=True)
    s.add_argument("--mutant", choices=MUTANTS)
    s = sub.add_parser("dump")
    s.add_argument("--db", required=True, action="append")
    for name in ("fork", "deliver"):
        s = sub.add_parser(name)
        s.add_argument("--db", required=True)
        s.add_argument("--acks", required=True)
        s.add_argument("--mutant", choices=MUTANTS)
        s.add_argument("--stop-after", type=int)
    sub.choices["fork"].add_argument("--seed", type=int, required=True)
    sub.choices["deliver"].add_argument("--transport", required=True)
    s = sub.add_parser("catch-up")
    s.add_argument("--db", required=True, action="append")
    s.add_argument("--transport", required=True, action="append")
    s.add_argument("--mutant", choices=MUTANTS)
    return p


def main():
    a = parser().parse_args()
    run = {
        "append": op_append,
        "rotate": op_rotate,
        "park": op_park,
        "claim": op_claim,
        "dump": op_dump,
        "fork": op_fork,
        "deliver": op_deliver,
        "catch-up": op_catch_up,
    }[a.op]
    try:
        return run(a)
    except ConfigError as e:
        print("store.py: error: %s" % e, file=sys.stderr)
        return EXIT_CONFIG
    except (OSError, sqlite3.Error) as e:
        print("store.py: error: %s" % e, file=sys.stderr)
        return EXIT_ERROR


def heavy_start():
    """A stand-in for a store whose imports are heavy (an SDK that takes a
    second of CPU to import): with CRASHCELLS_EXAMPLE_SLOW_START=S in the
    environment, S seconds of CPU are burned before anything else, every
    time the store starts. The harness's tests use it to check that a slow
    but healthy store gets verdicts, not deadline errors."""
    seconds = float(os.environ.get("CRASHCELLS_EXAMPLE_SLOW_START") or 0)
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


if __name__ == "__main__":
    if crashcells_forkserver is not None and sys.argv[-1:] == ["fork-server"]:
        # The heavy start is paid once, by the server, before its first fork.
        crashcells_forkserver.serve(main, preload=heavy_start)
    if crashcells_forkserver is not None and sys.argv[-1:] == ["warm-pool"]:
        # Paid by each warm process before the driver needs it.
        crashcells_forkserver.warm(main, preload=heavy_start)
    heavy_start()
    sys.exit(main())
