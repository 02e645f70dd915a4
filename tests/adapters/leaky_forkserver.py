#!/usr/bin/env python3
"""A deliberately broken fork server (docs/PROTOCOL.md, "Fork server"), for
the tests: the Python example store, served by the helper with its
descriptor hygiene switched off and a SQLite database held open since its
preload, so that every process it forks inherits that descriptor. The
driver must refuse each one before its operation runs, naming the
descriptor; `child-check` must fail its `fork-server` check. Its warm
processes (docs/PROTOCOL.md, "Warm pool") hold the same database open from
their preload, and must be refused the same way.

Operations run exec'd (everything but `fork-server` and `warm-pool`) are
the store's own.
"""

import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402

held = None


def preload():
    """A cache database opened at start, as a careless adapter might: the
    file is removed at once (nothing is left behind), the descriptor stays."""
    global held
    folder = tempfile.mkdtemp(prefix="leaky-forkserver-")
    path = os.path.join(folder, "cache.db")
    held = sqlite3.connect(path)
    held.execute("CREATE TABLE IF NOT EXISTS cached (x)")
    os.unlink(path)
    os.rmdir(folder)


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        # The bug under test: the forked processes keep every descriptor.
        crashcells_forkserver.close_inherited = lambda: None
        crashcells_forkserver.serve(store.main, preload=preload)
    if sys.argv[-1:] == ["warm-pool"]:
        crashcells_forkserver.close_inherited = lambda: None
        crashcells_forkserver.warm(store.main, preload=preload)
    sys.exit(store.main())
