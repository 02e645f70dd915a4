#!/usr/bin/env python3
"""The thread-pool test store (tests/adapters/pooled.py) served by its fork
server, for the tests: its calls differ from run to run, so a fire found
through the server must be found again exec'd as the recorded confirmation
found it (by the state or the write, not by a fixed point), or a real bug
would read as an artefact of the fast path. The server forks before the
store is opened, so no worker thread exists at the fork.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pooled  # noqa: E402


class ServedPooled(pooled.Pooled):
    launchers = ("fork-server",)


if __name__ == "__main__":
    pooled.store.adapter.run(ServedPooled)
