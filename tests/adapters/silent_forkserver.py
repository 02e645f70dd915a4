#!/usr/bin/env python3
"""A fork server that never reports its processes' ends (docs/PROTOCOL.md,
"Fork server", "Reaping"), for the tests: the Python example store, served
by the helper with its reaping changed to reap without writing the `exit`
line. The driver learns a forked process's end only from that line: it must
notice the process gone from /proc without one and name the missing line
within its deadline, then restart the server once and exec. Exec'd, the
store is the example's own.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402


class SilentServer(crashcells_forkserver.Server):
    def reap(self):
        """Reaps every process that ended, and says nothing of it."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.Server = SilentServer
        crashcells_forkserver.serve(store.main)
    sys.exit(store.main())
