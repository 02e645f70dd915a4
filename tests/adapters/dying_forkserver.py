#!/usr/bin/env python3
"""A fork server that dies after a few requests (docs/PROTOCOL.md, "Fork
server", "A server that fails"), for the tests: the Python example store,
served by the helper, whose server exits a moment after it forked its fifth
process, while that process runs its operation (as a server with a limit
on its requests, written by an outside author, did): the process dies with
it (its parent-death signal), and the server writes nothing more. The
driver must start it again once, then exec every later operation, and
retry exec'd the work the deaths cut short: a run gets verdicts, not
errors, and its report says what happened. Exec'd, the store is the
example's own.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402

# Requests a server serves; it dies a moment after forking the last.
SERVES = 5

# How long after its last fork it dies: its process is then inside its
# operation (a forked Python store starts in milliseconds).
DIES_AFTER_S = 0.05


class DyingServer(crashcells_forkserver.Server):
    served = 0
    forked = None

    def handle(self, line):
        super().handle(line)
        self.served += 1
        if self.served == SERVES:
            self.die()

    def die(self):
        """Exits, once its last process runs its operation (the driver
        continued it), without reaping or reporting what it forked: that
        process dies with it (PR_SET_PDEATHSIG), as an operation in flight
        does when a real server crashes."""
        for _ in range(500):
            if self.forked is None or running(self.forked):
                break
            time.sleep(0.01)
        time.sleep(DIES_AFTER_S)
        sys.stderr.write("dying_forkserver: served %d requests, dying\n" % SERVES)
        sys.stderr.flush()
        os._exit(3)


def running(pid):
    """Whether `pid` left the stop it made before its operation."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("T", "t")


def sending(send):
    """The helper's `send`, noting the pid of each process forked."""

    def noted(obj):
        if obj.get("kind") == "forked":
            DyingServer.forked = obj["pid"]
        send(obj)

    return noted


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.Server = DyingServer
        crashcells_forkserver.send = sending(crashcells_forkserver.send)
        crashcells_forkserver.serve(store.main)
    sys.exit(store.main())
