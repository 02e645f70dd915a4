"""The fork server's old place, kept for adapters that import it by path: the
helper now lives in the Python library as `crashcells.forkserver`
(docs/PROTOCOL.md, "Fork server"). This module is that module itself, not a
copy, so an adapter that replaces one of its functions (the tests do) changes
what the server runs."""

import os
import sys

# The library of this checkout first (an installed one may be older), then
# whatever `import crashcells` finds.
_here = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python")
if os.path.isdir(os.path.join(_here, "crashcells")):
    sys.path.insert(0, _here)
import crashcells.forkserver as _forkserver  # noqa: E402

sys.modules[__name__] = _forkserver
