#!/usr/bin/env python3
"""A fork server whose forks share a random generator (docs/PROTOCOL.md,
"Fork server"), for the tests: the Python example store, whose `claim`
takes the handoff with a random token (insert the token if none is there,
then read back whose token won). The token comes from a `random.Random()`
instance made at import: Python reseeds its module functions after a fork,
but not an instance, so every process the server forks draws the same
token, and every racer reads back its own: they all win. Exec'd, each
process seeds its own generator and exactly one wins.
"""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir, os.pardir)
sys.path.insert(0, os.path.join(ROOT, "examples", "python-store"))
sys.path.insert(0, os.path.join(ROOT, "examples", "forkserver"))

import crashcells_forkserver  # noqa: E402
import store  # noqa: E402

TOKENS = random.Random()


def token_claim(self, name, claimant):
    token = "%016x" % TOKENS.getrandbits(64)

    def body(c):
        c.execute("CREATE TABLE IF NOT EXISTS claim_tokens (session TEXT PRIMARY KEY, token TEXT NOT NULL)")
        c.execute("INSERT OR IGNORE INTO claim_tokens VALUES (?, ?)", (name, token))
        (winner,) = c.execute("SELECT token FROM claim_tokens WHERE session=?", (name,)).fetchone()
        if winner != token:
            return False
        c.execute("UPDATE conversations SET handoff='running' WHERE name=?", (name,))
        store.insert_turn(c, name, "system", "claimed by %s" % claimant)
        return True

    return self._transaction(body)


store.PythonStore.claim = token_claim

if __name__ == "__main__":
    if sys.argv[-1:] == ["fork-server"]:
        crashcells_forkserver.serve(store.main)
    if sys.argv[-1:] == ["warm-pool"]:
        # Each warm process imports, and seeds its own generator: no bug.
        crashcells_forkserver.warm(store.main)
    sys.exit(store.main())
