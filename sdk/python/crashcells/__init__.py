"""crashcells for Python: the adapter library (`crashcells.adapter`), the fork
server and warm process (`crashcells.forkserver`) and the pytest plugin
(`crashcells.pytest_plugin`) of the crashcells child protocol
(docs/PROTOCOL.md). Standard library only, Python 3.9+."""

import os
import shutil
import sysconfig


def binary():
    """The crashcells binary, or None: $CRASHCELLS_BIN, then the running
    interpreter's scripts folder (where the wheel puts it), then PATH."""
    named = os.environ.get("CRASHCELLS_BIN")
    if named:
        return named
    beside = os.path.join(sysconfig.get_path("scripts"), "crashcells")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("crashcells")
