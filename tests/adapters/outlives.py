#!/usr/bin/env python3
"""A store that leaves a process behind, for the tests: the Python example
store, but every exec'd operation first forks a child that stays in the
operation's process group and sleeps on after the operation ended, as a
worker nobody waits for would. PROTOCOL.md §1: a process that outlives its
operation is named (a note in `run`, `own-group` fails in `child-check`).
The tests run it with the fast paths off, so every operation is exec'd.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "examples", "python-store"))

import store  # noqa: E402

# Longer than any test: the driver kills it.
SLEEP_S = 300

if __name__ == "__main__":
    if sys.argv[1:2] not in (["fork-server"], ["warm-pool"]) and os.fork() == 0:
        # Its own streams closed: it holds nothing the driver reads.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(SLEEP_S)
        os._exit(0)
    sys.exit(store.main())
