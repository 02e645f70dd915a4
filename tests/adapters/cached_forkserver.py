#!/usr/bin/env python3
"""A fork server with state made before the fork (docs/PROTOCOL.md, "Fork
server"), for the tests: the Python example store, with a module-level
cache of the sessions it has created, which the server's warm-up fills.
Each fork inherits the filled cache, so a forked `append` believes its
session exists and never creates it in the trial's store: its acked
appends belong to no session. Exec'd, the cache starts empty and the store
is the example's own.

The driver's freshness check cannot see a cache (it is memory, not a
descriptor): a fire found through this server must be confirmed exec'd, and
is not; the run must say so as an error naming the fork server.
"""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402

# The sessions this process has created: a create it has done is skipped.
created = set()
create = store.PythonStore._create


def cached_create(self, name, continues=None, handoff=None):
    if name in created:
        return
    create(self, name, continues, handoff)
    created.add(name)


store.PythonStore._create = cached_create


def warm_up():
    """Runs the store once in a scratch folder, as a careful adapter might
    to load its code paths; everything it opened is closed and removed, so
    the forked processes hold no descriptor. The cache stays filled."""
    folder = tempfile.mkdtemp(prefix="cached-forkserver-")
    try:
        warm = store.PythonStore()
        warm.open(os.path.join(folder, "warm.db"), store.adapter.Config(None, None))
        warm.create_session(store.APPEND_SESSION)
        warm.close()
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.serve(store.main, preload=warm_up)
    if sys.argv[-1:] == ["warm-pool"]:
        # A warm process warms up too: its cache is filled the same way.
        crashcells_forkserver.warm(store.main, preload=warm_up)
    sys.exit(store.main())
