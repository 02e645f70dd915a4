"""The workloads of docs/PROTOCOL.md §2, run on an adapter's methods: the
loops, the rotation shapes, the rewind rule, the claim's barrier, the deliver
steps with the transport and the catch-up rule.

Crash model: SIGKILL at any instant. Each step is one call of the store's
method, which returns only once its transaction committed; the ack follows
with one write(2). Clause served: whatever cell the operation feeds (1
append, 2 claim, 3 rotate, 4 fork, 5 deliver/catch-up, 6 co-append): the library keeps
the rule, the store keeps the atomicity.
"""

import asyncio
import fcntl
import inspect
import os
import signal
import sqlite3

from . import canonical, config, journal
from .config import ConfigError

MAIN = "main"
EXIT_WON = 0
EXIT_LOST = 10
# A fork run rewinds at every FORK_EVERY-th operation.
FORK_EVERY = 4
# A carrying rotation carries the parent's last CARRIED messages.
CARRIED = 2
# The mutants the library plays (the reference's numbers, protocol/corpus/mutants.json):
# drop-append acks without writing one append in DROP_EVERY, from the second
# (m1, m65, ...); stall blocks at append STALL_AFTER, having acked the five before.
DROP_EVERY = 64
DROP_FIRST = 1
STALL_AFTER = 5
ACK_RULE = "§3 ack journal"


class StoreFailed(Exception):
    """The store's own error during an operation: exit 3, a finding (§6)."""


class Unavailable(Exception):
    """An operation the class does not implement: exit 69 (§2)."""


def call(store, method, *args):
    """store.method(*args), awaited when it returns an awaitable (an `async
    def` method): the store's own errors become StoreFailed, any other
    exception is the adapter's mistake."""
    from .adapter import AdapterError

    try:
        return settle(getattr(store, method)(*args))
    except (AdapterError, StoreFailed, ConfigError):
        raise
    except getattr(store, "store_errors", (OSError, sqlite3.Error)) as e:
        raise StoreFailed(str(e)) from e
    except Exception as e:
        if store_error_in_causes(e, getattr(store, "store_errors", (OSError, sqlite3.Error))):
            raise StoreFailed(str(e)) from e
        raise AdapterError(
            "%s() raised %s: %s" % (method, type(e).__name__, e),
            "an operation returns, or fails with one of the store's own errors (store_errors)",
        ) from e


def causes(e):
    """`e`, then what it was raised from (`raise ... from`, its __cause__),
    and so on: an ORM's error names the driver's error it wraps there."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__


def store_error_in_causes(e, store_errors):
    """Whether `e` was raised from one of the store's own errors: an ORM
    (SQLAlchemy, say) wraps sqlite3's error in a class of its own, and an
    adapter that did not name that class in store_errors would otherwise
    have a store failure reported as its own mistake. Only an explicit
    cause counts: an exception raised while handling a store error (its
    __context__) is a bug of the handler."""
    return any(isinstance(c, store_errors) for c in causes(e))


# The child's one event loop, made at the first awaitable and reused by
# every later operation (an async store's connection is bound to the loop
# that opened it), with the pid that made it: a child forked from a fork
# server or warm process makes its own (a loop's selector does not survive
# fork).
_loop = None
_loop_pid = None


def settle(result):
    """`result`, or what it resolves to when it is awaitable. Every result of
    a store's method passes here, so a coroutine is never taken for a
    finished write: an `async def append` acked unawaited would be a store
    that writes nothing, acked."""
    global _loop, _loop_pid
    if not inspect.isawaitable(result):
        return result
    if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
        _loop, _loop_pid = asyncio.new_event_loop(), os.getpid()
        asyncio.set_event_loop(_loop)
    return _loop.run_until_complete(awaited(result))


async def awaited(awaitable):
    """Any awaitable (a coroutine, a future, an object with __await__) as a coroutine."""
    return await awaitable


class Session:
    """One operation's run: the class, its flags, the config home."""

    def __init__(self, cls, args, operations):
        self.cls = cls
        self.op = args.op
        self.flags = args.flags
        self.mutant = args.flags.get("mutant")
        self.operations = operations
        self.config = config.read_config()
        self.acks = None

    def open(self, db):
        store = self.cls()
        store.op, store.mutant = self.op, self.mutant
        store.writer, store.index = self.flags.get("writer"), 0
        store.ack_now = lambda: self.acks.now() if self.acks is not None else None
        decision = call(store, "open", db, self.config)
        check_resolver(decision)
        store._crashcells_resolver = decision
        return store

    def ready(self, store, path):
        """Opens the ack journal and writes the ready record (§3)."""
        info = ready_info(store)
        self.acks = journal.Acks(path)
        self.acks.record(
            {
                "kind": "ready",
                "protocol": canonical.PROTOCOL,
                "pid": os.getpid(),
                "op": self.op,
                "sqlite_version": info["sqlite_version"],
                "sqlite_source_id": info["sqlite_source_id"],
                "journal_mode": info["journal_mode"],
                "synchronous": info["synchronous"],
                "resolver": store._crashcells_resolver,
                "operations": self.operations,
            }
        )

    def step(self, store, method, args, ack):
        """store.method(*args), then its ack unless the store wrote it inside
        its transaction (ack_now)."""
        self.acks.expect(ack)
        store.index = ack["i"]
        result = call(store, method, *args)
        self.acks.now()
        return result

    def ops(self):
        i, stop = 0, self.flags.get("stop-after")
        while stop is None or i < stop:
            yield i
            i += 1


def ready_info(store):
    from .adapter import AdapterError

    if callable(getattr(store, "journal", None)):
        info = call(store, "journal")
    else:
        info = journal_of(call(store, "connection"))
    if not isinstance(info, dict):
        raise AdapterError("journal() returned %s, not a dict" % type(info).__name__, "§3 ready record")
    mode = info.get("journal_mode")
    if mode not in config.JOURNAL_MODES:
        raise AdapterError(
            "journal() returned journal_mode %r (one of %s)" % (mode, ", ".join(config.JOURNAL_MODES)),
            "§3 ready record",
        )
    if info.get("synchronous") not in config.SYNC_LEVELS + (None,):
        raise AdapterError("journal() returned synchronous %r" % info.get("synchronous"), "§3 ready record")
    if not isinstance(info.get("sqlite_version"), str):
        raise AdapterError("journal() returned no sqlite_version string", "§3 ready record")
    info.setdefault("sqlite_source_id", None)
    return info


def journal_of(conn):
    """What the store's own connection reports (§3): its journal mode and
    synchronous level as it runs, and the SQLite it links."""
    mode = pragma(conn, "PRAGMA journal_mode")
    level = pragma(conn, "PRAGMA synchronous")
    return {
        "journal_mode": str(mode).lower(),
        "synchronous": config.SYNC_LEVELS[level] if 0 <= level < len(config.SYNC_LEVELS) else None,
        "sqlite_version": sqlite3.sqlite_version,
        "sqlite_source_id": pragma(conn, "SELECT sqlite_source_id()"),
    }


def pragma(conn, sql):
    """The first column of `sql`'s first row on the store's connection: a
    `sqlite3` one, or an async one (aiosqlite's) whose execute and fetchone
    are awaited."""
    return settle(settle(conn.execute(sql)).fetchone())[0]


def check_resolver(decision):
    """A resolver with §3's exact shape, or None."""
    from .adapter import AdapterError

    if decision is None:
        return
    keys = ("requested", "applied", "synchronous", "decided_by", "reason")
    if not isinstance(decision, dict) or sorted(decision) != sorted(keys):
        raise AdapterError("open() returned a resolver without exactly the fields %s" % ", ".join(keys), "§3 resolver")
    if decision["applied"] not in config.JOURNAL_MODES or decision["requested"] not in config.JOURNAL_MODES + (None,):
        raise AdapterError("open() returned a resolver whose modes are not of %s" % "|".join(config.JOURNAL_MODES), "§3 resolver")
    if not isinstance(decision["decided_by"], str) or not isinstance(decision["reason"], str):
        raise AdapterError("open() returned a resolver whose decided_by or reason is not a string", "§3 resolver")


def close(store):
    if callable(getattr(store, "close", None)):
        call(store, "close")


# --- the operations -----------------------------------------------------------


def drops_append(i):
    """Whether the drop-append mutant acks append i without writing it."""
    return i % DROP_EVERY == DROP_FIRST


def stalls_at(i):
    """Whether the stall mutant blocks at append i, before writing or acking it."""
    return i >= STALL_AFTER


def op_append(s):
    store = s.open(s.flags["db"])
    if callable(getattr(store, "create_session", None)):
        call(store, "create_session", MAIN)
    s.ready(store, s.flags["acks"])
    for i in s.ops():
        ack = {"kind": "ack", "op": "append", "i": i}
        if s.mutant == "stall" and stalls_at(i):
            # The stall mutant: alive, silent, until the driver's deadline kills it.
            while True:
                signal.pause()
        if s.mutant == "drop-append" and drops_append(i):
            s.acks.record(ack)
            continue
        s.step(store, "append", (MAIN, "user", "m%d" % i), ack)
    close(store)
    return 0


def op_co_append(s):
    """One of several writers on session `main` (§2, `co-append`): the store's
    own `append`, run by each writer's process at once, after the barrier."""
    barrier = open(s.flags["barrier"], "rb")
    store = s.open(s.flags["db"])
    if callable(getattr(store, "create_session", None)):
        call(store, "create_session", MAIN)
    s.ready(store, s.flags["acks"])
    # Blocks while the driver holds its exclusive lock: the writers start together.
    fcntl.flock(barrier.fileno(), fcntl.LOCK_SH)
    writer = s.flags["writer"]
    for i in s.ops():
        s.step(store, "append", (MAIN, "user", "%s-m%d" % (writer, i)), {"kind": "ack", "op": "co-append", "i": i})
    close(store)
    return 0


def rotation(k, shapes):
    """Rotation k: (parent, child, carried, new_parent). With shapes, odd
    rotations rotate the last continuation again, and rotations 1 and 2 of
    every four carry the parent's last CARRIED messages (§2, `rotate`)."""
    parent = "c%d" % (k - 1) if shapes and k % 2 == 1 else "p%d" % k
    carried = CARRIED if shapes and k % 4 in (1, 2) else 0
    return parent, "c%d" % k, carried, parent.startswith("p")


def op_rotate(s):
    store = s.open(s.flags["db"])
    s.ready(store, s.flags["acks"])
    shapes = s.flags.get("shapes") == "on"
    for k in s.ops():
        parent, child, carried, new = rotation(k, shapes)
        work = [("user", "work %d" % k)] + ([("assistant", "reply %d" % k)] if shapes else [])
        ack = {"kind": "ack", "op": "rotate", "i": k, "parent": parent, "child": child}
        if shapes:
            ack["carried"] = carried
        s.step(store, "rotate", (parent, child, work, carried, new), ack)
    close(store)
    return 0


def op_park(s):
    store = s.open(s.flags["db"])
    call(store, "park", s.flags["session"])
    close(store)
    return 0


def op_claim(s):
    from .adapter import AdapterError

    barrier = open(s.flags["barrier"], "rb")
    # Open before the barrier, so that released claimants race on the claim itself.
    store = s.open(s.flags["db"])
    s.ready(store, s.flags["acks"])
    # Blocks while the driver holds its exclusive lock; its deadline bounds the wait.
    fcntl.flock(barrier.fileno(), fcntl.LOCK_SH)
    won = s.step(store, "claim", (s.flags["session"], s.flags["claimant"]), {"kind": "ack", "op": "claim", "i": 0})
    if not isinstance(won, bool):
        raise AdapterError("claim() returned %r, not True (won) or False (lost)" % (won,), "§2 claim")
    close(store)
    return EXIT_WON if won else EXIT_LOST


def fork_step(seed, i, length):
    """Operation i of a fork run: None (an append) or the k of a rewind (§2, `fork`)."""
    if i % FORK_EVERY == FORK_EVERY - 1 and length >= 2:
        return (seed + i) % (length - 1)
    return None


def live_length(store):
    from .adapter import AdapterError

    if callable(getattr(store, "live_length", None)):
        n = call(store, "live_length", MAIN)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise AdapterError("live_length() returned %r, not a count" % (n,), "§2 fork")
        return n
    # No count of its own: read the live transcript as the driver does.
    try:
        state = canonical.canonical(call(store, "state", store._crashcells_db), "ok")
    except canonical.ShapeError as e:
        raise AdapterError("state() %s" % e, canonical.RULE)
    return canonical.live_length(state, MAIN)


def op_fork(s):
    store = s.open(s.flags["db"])
    store._crashcells_db = s.flags["db"]
    if callable(getattr(store, "create_session", None)):
        call(store, "create_session", MAIN)
    s.ready(store, s.flags["acks"])
    for i in s.ops():
        k = fork_step(s.flags["seed"], i, live_length(store))
        if k is None:
            s.step(store, "append", (MAIN, "user", "m%d" % i), {"kind": "ack", "op": "append", "i": i})
        else:
            s.step(store, "rewind", (MAIN, k, i), {"kind": "ack", "op": "rewind", "i": i, "k": k})
    close(store)
    return 0


def op_deliver(s):
    store = s.open(s.flags["db"])
    s.ready(store, s.flags["acks"])
    for j in s.ops():
        key = "o%d" % j
        payload = "effect of %s" % key
        store.index = j
        call(store, "record", key, payload)
        call(store, "attempting", key)
        try:
            journal.send(s.flags["transport"], key, payload)
        except OSError as e:
            # A send that fails is an error, never an ack.
            raise StoreFailed("send of %s: %s" % (key, e))
        s.step(store, "delivered", (key,), {"kind": "ack", "op": "deliver", "i": j, "key": key})
    close(store)
    return 0


def op_catch_up(s):
    """The restart step, per --db/--transport pair in order (catch-up-batch):
    one left recorded was never sent; one left attempting may have arrived,
    so the transport is asked first (resend-on-catch-up does not ask)."""
    for db, transport in zip(s.flags["db"], s.flags["transport"]):
        catch_up_one(s, db, transport)
    return 0


def catch_up_one(s, db, transport):
    from .adapter import AdapterError

    store = s.open(db)
    there = journal.arrived(transport)
    pending = call(store, "pending")
    if not isinstance(pending, (list, tuple)) or not all(
        isinstance(p, (list, tuple)) and len(p) == 3 and p[2] in ("recorded", "attempting") for p in pending
    ):
        raise AdapterError("pending() returned something else than (key, payload, state) triples", "sdk/API.md pending")
    for key, payload, state in pending:
        if state == "recorded":
            call(store, "attempting", key)
        asked = s.mutant != "resend-on-catch-up"
        if not (asked and state == "attempting" and key in there):
            journal.send(transport, key, payload)
        call(store, "delivered", key)
    close(store)


OPERATIONS = {
    "append": op_append,
    "rotate": op_rotate,
    "park": op_park,
    "claim": op_claim,
    "fork": op_fork,
    "deliver": op_deliver,
    "catch-up": op_catch_up,
    "co-append": op_co_append,
}
# The methods an operation needs; without them it exits 69.
NEEDS = {
    "append": ("append",),
    "rotate": ("rotate",),
    "park": ("park", "claim"),
    "claim": ("park", "claim"),
    "fork": ("rewind", "append"),
    "deliver": ("record", "attempting", "delivered", "pending"),
    "catch-up": ("record", "attempting", "delivered", "pending"),
    "co-append": ("append",),
    "dump": ("state",),
}
