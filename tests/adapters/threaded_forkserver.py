#!/usr/bin/env python3
"""A fork server with a second thread running when it says it is ready
(docs/PROTOCOL.md, "Fork server", "Who should not"), for the tests: the
Python example store, whose preload starts a thread through `_thread`, below
`threading`, so that the helper's own check (which counts `threading`'s
threads) does not see it. A fork copies only the thread that forks: a lock
the other thread held would stay held for ever in every forked process. The
driver counts the server's threads in /proc when its ready line comes and
refuses it; exec'd, the store is the example's own.
"""

import _thread
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402


def start_a_thread():
    """A background worker an SDK might start at import."""
    _thread.start_new_thread(time.sleep, (3600,))


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.serve(store.main, preload=start_a_thread)
    sys.exit(store.main())
