#!/usr/bin/env python3
"""A fork server that dies after a few requests (docs/PROTOCOL.md, "Fork
server", "A server that fails"), for the tests: the Python example store,
served by the helper, whose server exits when its sixth request comes:
it lets the processes it forked end, reports them, and exits without
answering (as a server with a limit on its requests would). The
driver must start it again once, then exec every later operation: a run
gets verdicts, not errors, and its report says what happened. Exec'd, the
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

# Requests a server serves before it dies at the next one.
SERVES = 5


class DyingServer(crashcells_forkserver.Server):
    served = 0

    def handle(self, line):
        if self.served == SERVES:
            self.die()
        self.served += 1
        super().handle(line)

    def die(self):
        """Lets the processes it forked end (their ends reported), then
        exits without answering: the operations it served keep their
        results, the one it was asked for must be forked elsewhere."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if os.WIFSIGNALED(status):
                crashcells_forkserver.send({"kind": "exit", "pid": pid, "signal": os.WTERMSIG(status)})
            elif os.WIFEXITED(status):
                crashcells_forkserver.send({"kind": "exit", "pid": pid, "code": os.WEXITSTATUS(status)})
        sys.stderr.write("dying_forkserver: served %d requests, dying at the next\n" % SERVES)
        sys.stderr.flush()
        os._exit(3)


if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.Server = DyingServer
        crashcells_forkserver.serve(store.main)
    sys.exit(store.main())
