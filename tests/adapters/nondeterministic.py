#!/usr/bin/env python3
"""A store that does not make the same system calls twice (docs/PROTOCOL.md
§1, "The same bytes twice"), for the tests: the Python example store, with a
stand-in for a background flusher that commits a random number of rows to a
statistics table after each append (0 to 9: two runs agree on all three
appends about once in a thousand). `dump` never shows the table, so every
protocol check passes; `child-check`'s `syscall-determinism` must warn,
naming the first call that differs.
"""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))

import store  # noqa: E402

class Flushing(store.PythonStore):
    # Exec'd only: this store's point is its calls, not a fast path.
    launchers = ()

    def append(self, name, role, content):
        super().append(name, role, content)
        for _ in range(random.SystemRandom().randint(0, 9)):
            self.conn.execute("CREATE TABLE IF NOT EXISTS flusher_stats (n INTEGER)")
            self.conn.execute("INSERT INTO flusher_stats VALUES (1)")


if __name__ == "__main__":
    store.adapter.run(Flushing)
