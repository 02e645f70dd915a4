"""Variants of the Python example store (examples/python-store/store.py) that
keep or break one rule of docs/PROTOCOL.md, for the integration tests:

  python3 variant.py VARIANT[,VARIANT...] <op> [flags]
  python3 variant.py VARIANT[,VARIANT...] fork-server
  python3 variant.py VARIANT[,VARIANT...] warm-pool

refuse-delete   the resolver applies WAL whatever it is asked, and says so in
                its `resolver` (as a store that sets WAL on open does)
silent-wal      the same, but the ready record carries no `resolver`: a
                silent fallback
rotate-fails    `rotate` writes its ready record, then fails (exit 3)
park-fails      `park` fails (exit 3)
no-rotate       the store has no `rotate`: the ready record does not list
                it, and it is refused (exit 69)
deferred-claim  `claim` reads the handoff in a deferred transaction, then
                upgrades to write it: racing claimants get "database is
                locked" (a store's own failure, exit 3, after its ready record)
readonly-dump   `dump` opens the store read-only: it cannot roll back a hot
                journal ("attempt to write a readonly database")
claim-no-ready  `claim` exits 3 before it writes its ready record: a child
                that breaks the protocol, the harness's error
resend          `catch-up` resends an obligation left attempting without asking
                the transport (as the resend-on-catch-up mutant, always): a
                store at least once by design, as Hermes's gateway is
ignore-shapes   the ready record lists `rotate-shapes`, but `rotate` ignores
                `--shapes on` and rotates as version 1 does
checkpoint-truncate
                after each commit, before its ack, `PRAGMA
                wal_checkpoint(TRUNCATE)`: the checkpoint syncs the database,
                then truncates the WAL to 0 bytes and does not sync it (a
                no-op in a rollback journal)
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "store", os.path.join(HERE, "..", "..", "examples", "python-store", "store.py")
)
store = importlib.util.module_from_spec(spec)
spec.loader.exec_module(store)
from crashcells import journal, workload  # noqa: E402  (the library the store imported)

Store = store.PythonStore


def always_wal(config, db, version):
    return {
        "requested": config.journal_mode,
        "applied": "wal",
        "synchronous": config.synchronous,
        "decided_by": "applies-wal-on-open",
        "reason": "this store applies WAL on open whatever it is asked",
    }


def broken(what):
    def method(self, *args):
        raise store.sqlite3.OperationalError("variant: %s is broken here" % what)

    return method


def deferred_claim(self, name, claimant):
    """A claim as a careless store writes it: BEGIN (deferred), read, then
    write; a second claimant holding its read lock cannot upgrade."""
    c = self.conn
    c.execute("BEGIN")
    try:
        row = c.execute("SELECT handoff FROM conversations WHERE name=?", (name,)).fetchone()
        if row is None or row[0] != "pending":
            c.execute("COMMIT")
            return False
        c.execute("UPDATE conversations SET handoff='running' WHERE name=?", (name,))
        store.insert_turn(c, name, "system", "claimed by %s" % claimant)
        c.execute("COMMIT")
        return True
    except BaseException:
        c.execute("ROLLBACK")
        raise


def readonly_state(self, db):
    """`dump` on a read-only connection."""
    conn = store.sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=store.BUSY_TIMEOUT_S, isolation_level=None)
    try:
        return store.read_state(conn)
    finally:
        conn.close()


def checkpointed(transaction):
    def run(self, body, before_commit=None):
        value = transaction(self, body, before_commit)
        store.with_retry(lambda: self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        return value

    return run


def wrap_open(open_, silent=False, fail_op=None):
    def open(self, db, config):
        if self.op == fail_op:
            raise OSError("variant: %s fails before its ready record" % fail_op)
        decision = open_(self, db, config)
        return None if silent else decision

    return open


for variant in sys.argv.pop(1).split(","):
    if variant in ("refuse-delete", "silent-wal"):
        store.adapter.resolve = always_wal
        if variant == "silent-wal":
            Store.open = wrap_open(Store.open, silent=True)
    elif variant == "rotate-fails":
        Store.rotate = broken("rotate")
    elif variant == "park-fails":
        Store.park = broken("park")
    elif variant == "deferred-claim":
        Store.claim = deferred_claim
    elif variant == "readonly-dump":
        Store.state = readonly_state
    elif variant == "claim-no-ready":
        Store.open = wrap_open(Store.open, fail_op="claim")
    elif variant == "resend":
        # Catch-up never finds a key in the transport, so it sends again.
        journal.arrived = lambda path: set()
    elif variant == "ignore-shapes":
        rotate = workload.OPERATIONS["rotate"]
        workload.OPERATIONS["rotate"] = lambda s, rotate=rotate: (s.flags.pop("shapes", None), rotate(s))[1]
    elif variant == "checkpoint-truncate":
        Store._transaction = checkpointed(Store._transaction)
    elif variant == "no-rotate":
        del Store.rotate
    else:
        sys.exit("variant: unknown variant %s" % variant)

# Patched before the server forks or the warm process gets its request:
# every operation runs the variant.
store.adapter.run(Store)
