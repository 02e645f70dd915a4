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
no-rotate       the ready record does not list `rotate`, which is refused
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


def always_wal(requested, synchronous, version, file_is_wal):
    return {
        "requested": requested,
        "applied": "wal",
        "synchronous": synchronous,
        "decided_by": "applies-wal-on-open",
        "reason": "this store applies WAL on open whatever it is asked",
    }


def fail(what):
    def op(a):
        print("variant: %s is broken here" % what, file=sys.stderr)
        if what == "rotate":
            s = store.Store(a.db)
            store.Acks(a.acks).ready(s, "rotate")
        return store.EXIT_ERROR

    return op


def resending(catch_up):
    def op(a):
        a.mutant = "resend-on-catch-up"
        return catch_up(a)

    return op


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


def readonly_state(db):
    """`dump` on a read-only connection."""
    conn = store.sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=store.BUSY_TIMEOUT_S, isolation_level=None)
    try:
        return store.read_state_with(conn)
    finally:
        conn.close()


def no_ready(a):
    print("variant: claim fails before its ready record", file=sys.stderr)
    return store.EXIT_ERROR


def silent(store_init):
    def init(self, path):
        store_init(self, path)
        self.decision = None

    return init


for variant in sys.argv.pop(1).split(","):
    if variant in ("refuse-delete", "silent-wal"):
        store.resolve = always_wal
        if variant == "silent-wal":
            store.Store.__init__ = silent(store.Store.__init__)
    elif variant == "rotate-fails":
        store.op_rotate = fail("rotate")
    elif variant == "park-fails":
        store.op_park = fail("park")
    elif variant == "deferred-claim":
        store.Store.claim = deferred_claim
    elif variant == "readonly-dump":
        store.read_state = readonly_state
    elif variant == "claim-no-ready":
        store.op_claim = no_ready
    elif variant == "resend":
        store.op_catch_up = resending(store.op_catch_up)
    elif variant == "ignore-shapes":
        rotate = store.op_rotate

        def op_rotate(a, rotate=rotate):
            a.shapes = None
            return rotate(a)

        store.op_rotate = op_rotate
    elif variant == "no-rotate":
        store.OPERATIONS = tuple(o for o in store.OPERATIONS if o != "rotate")
        store.op_rotate = fail("rotate (not implemented)")
    else:
        sys.exit("variant: unknown variant %s" % variant)

# main() looks the operations up in its own table, built from the module's
# globals at call time.
if sys.argv[-1:] == ["fork-server"] and store.crashcells_forkserver is not None:
    # Patched before the server forks: every forked process runs the variant.
    store.crashcells_forkserver.serve(store.main)
if sys.argv[-1:] == ["warm-pool"] and store.crashcells_forkserver is not None:
    # Patched before the request: the warm process runs the variant.
    store.crashcells_forkserver.warm(store.main)
sys.exit(store.main())
