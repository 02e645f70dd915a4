#!/usr/bin/env python3
"""A store whose `dump` hangs, for the tests: the Python example store, but
`dump` (exec'd: the tests run it with the fast paths off) sleeps HANG_S
seconds before anything, as a store whose recovery blocks on a lock would.
Every recovery of its crash states overstays the driver's deadline: the
result is an error that names the deadline once, not a wait of a deadline
per pass, per batch, per confirmation.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "examples", "python-store"))

import store  # noqa: E402

# Longer than any deadline the tests give it: the driver kills it.
HANG_S = 600

if __name__ == "__main__":
    if sys.argv[1:2] == ["dump"]:
        time.sleep(HANG_S)
    sys.exit(store.main())
