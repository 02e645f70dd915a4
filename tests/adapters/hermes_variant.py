"""Variants of the Hermes adapter (examples/hermes-store/adapter.py), for the
tests of its CI check (examples/hermes-store/ci-check): each changes one
thing, so that the check must notice a known finding gone or a new one.

  python3 hermes_variant.py VARIANT <op> [flags]
  python3 hermes_variant.py VARIANT fork-server

atomic-rotation  publishes a compression rotation in ONE transaction: the end
                 of the parent, the continuation, its prompt and its messages,
                 through SessionDB's own methods with their writes joined
                 (Hermes's finding 1 fixed: cell 3 no longer fires)
ack-early        `append` acks each message before append_message commits it
                 (a new finding: cell 1 loses an acknowledged append)

Needs the wheel examples/hermes-store/fetch unpacks, as the adapter does.
"""

import contextlib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "adapter", os.path.join(HERE, "..", "..", "examples", "hermes-store", "adapter.py")
)
adapter = importlib.util.module_from_spec(spec)
sys.modules["adapter"] = adapter
spec.loader.exec_module(adapter)


@contextlib.contextmanager
def one_transaction(db):
    """SessionDB's writes inside the block join one transaction: each
    `_execute_write(fn)` runs `fn` on the open transaction instead of its own
    BEGIN IMMEDIATE ... COMMIT, and the block commits once."""
    conn = db._conn
    db._execute_write = lambda fn: fn(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        del db._execute_write


def atomic_rotate(hs, db, parent, child, k, shapes=False, carried=0):
    """adapter.rotate with its four publishing writes in one transaction."""
    if not parent.startswith("c"):
        db.create_session(parent, adapter.SOURCE, model=adapter.MODEL)
    holder = "pid=%d:crashcells:rotate=%d" % (os.getpid(), k)
    if not db.try_acquire_compression_lock(parent, holder, ttl_seconds=300.0):
        raise RuntimeError("could not take the compression lock on %s" % parent)
    try:
        db.append_message(parent, "user", "work %d" % k)
        if shapes:
            db.append_message(parent, "assistant", "reply %d" % k)
        held = db.get_messages(parent)
        tail = held[len(held) - carried :] if carried else []
        db.get_session_title(parent)
        compressed = [{"role": "system", "content": "continued from %s" % parent}]
        compressed += [{"role": m["role"], "content": m["content"]} for m in tail]
        with one_transaction(db):
            db.end_session(parent, "compression")
            db.create_session(child, adapter.SOURCE, model=adapter.MODEL, parent_session_id=parent)
            db.update_system_prompt(child, "You are a crashcells probe (continuation of %s)." % parent)
            db.replace_messages(child, compressed)
    finally:
        db.release_compression_lock(parent, holder)


def ack_early_append(a):
    """adapter.op_append with each ack written before its append."""
    store = adapter.Store(a.db)
    db = store.db
    db.create_session(adapter.APPEND_SESSION, adapter.SOURCE)
    acks = adapter.Acks(a.acks)
    acks.ready(store, "append")
    for i in adapter.ops(a.stop_after):
        acks.ack("append", i)
        db.append_message(adapter.APPEND_SESSION, "user", "m%d" % i)
    return 0


variant = sys.argv.pop(1)
if variant == "atomic-rotation":
    adapter.rotate = atomic_rotate
elif variant == "ack-early":
    adapter.op_append = ack_early_append
else:
    sys.exit("hermes_variant: unknown variant %s" % variant)

if adapter.crashcells_forkserver is not None and sys.argv[-1:] == ["fork-server"]:
    # Patched before the server forks: every forked process runs the variant.
    adapter.crashcells_forkserver.serve(adapter.main, preload=adapter.preload)
sys.exit(adapter.main())
