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
    "hermes_adapter", os.path.join(HERE, "..", "..", "examples", "hermes-store", "adapter.py")
)
hermes = importlib.util.module_from_spec(spec)
sys.modules["hermes_adapter"] = hermes
spec.loader.exec_module(hermes)


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


class AtomicRotation(hermes.HermesStore):
    """The adapter's rotation with its four publishing writes in one transaction."""

    def _publish(self, parent, child, compressed):
        with one_transaction(self.db):
            super()._publish(parent, child, compressed)


class AckEarly(hermes.HermesStore):
    """The adapter's append, its ack written before append_message."""

    def append(self, session, role, content):
        self.ack_now()
        super().append(session, role, content)


VARIANTS = {"atomic-rotation": AtomicRotation, "ack-early": AckEarly}

if __name__ == "__main__":
    variant = sys.argv.pop(1) if len(sys.argv) > 1 else None
    if variant not in VARIANTS:
        sys.exit("hermes_variant: unknown variant %s" % variant)
    # Chosen before the server forks: every forked process runs the variant.
    hermes.adapter.run(VARIANTS[variant])
