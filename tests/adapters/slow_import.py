#!/usr/bin/env python3
"""A store whose import takes over a second, for the tests: the Python
example store (examples/python-store/store.py) behind an import that sleeps
IMPORT_S seconds (a stand-in for a framework's imports: ADK's adapter
starts in 0.19 s forked and about 1.5 s exec'd). Through its fork server
the import is paid once and an operation starts in milliseconds; exec'd,
every operation pays it. A deadline scaled from the forked start would
then cut short every exec'd child that confirms a fire found forked: the
exec'd check must scale its waits from the exec'd start.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "examples", "python-store"))

# The imports' cost, paid by every exec'd process and once by the server.
IMPORT_S = 1.2
time.sleep(IMPORT_S)

import store  # noqa: E402


class SlowImport(store.PythonStore):
    launchers = ("fork-server",)


if __name__ == "__main__":
    store.adapter.run(SlowImport)
