#!/usr/bin/env python3
"""A fork server that stops answering mid-run (docs/PROTOCOL.md, "Fork
server", "A server that fails"), for the tests: the Python example store,
served by the helper, whose server serves five requests, then reads every
later one and answers none, while it still reaps and reports the
processes it forked, as a server stuck on a lock (or starved on a loaded
runner) would. The driver must not end a result on it: the request that
got no reply is exec'd, and so is every later one, the report saying why.
Exec'd, the store is the example's own.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402

# Requests a server answers; it ignores every later one.
SERVES = 5


class StallingServer(crashcells_forkserver.Server):
    served = 0

    def handle(self, line):
        if self.served >= SERVES:
            sys.stderr.write("stalling_forkserver: served %d requests, ignoring the rest\n" % SERVES)
            sys.stderr.flush()
            return
        self.served += 1
        super().handle(line)


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.Server = StallingServer
        crashcells_forkserver.serve(store.main)
    sys.exit(store.main())
