#!/usr/bin/env python3
"""A fork server that is not ready in time, for the tests: the Python
example store, whose `fork-server` sleeps LATE_S seconds before it starts
serving (a stand-in for a server on a loaded machine, or one whose imports
outgrow the wait). Exec'd, the store is the example's own and starts at
once. The run must not end in an error for the server's lateness: it execs
every operation, says so in the report's `launcher`, and gives the verdict
the exec'd store earns.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "examples", "python-store"))

import store  # noqa: E402

# Longer than any wait the driver scales from the exec'd start: the server
# is never ready in time (the driver kills it when it gives up on it).
LATE_S = 600

if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        time.sleep(LATE_S)
    sys.exit(store.main())
