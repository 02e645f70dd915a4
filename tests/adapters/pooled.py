#!/usr/bin/env python3
"""A store that writes from a thread pool, for the tests: the Python example
store (examples/python-store/store.py) whose `append` hands each append's
transaction to a `concurrent.futures.ThreadPoolExecutor`, beside a job that
commits 0 to 2 rows to a table of its own, a transaction each (a stand-in
for a checkpointer's pending writes, saved by another thread), each job
after a random jitter. The transactions take the store's lock in whatever
order the scheduler gives, so two runs do not make the same system calls
(docs/PROTOCOL.md §1, "The same bytes twice"): `child-check`'s
`syscall-determinism` warns, and a recorded fire's real kill at its point
lands elsewhere in about two runs of three.

Each worker has its own connection. The ack is written once both jobs are
done; with `--mutant ack-before-commit`, the message's worker writes it
before its COMMIT (a real bug: an acknowledged append a crash can lose),
which a run must report as a fire, never as an error. `dump` never shows
the job's table.
"""

import concurrent.futures
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "examples", "python-store"))

import store  # noqa: E402

# Up to this many seconds of jitter before each job: enough for either job to
# take the lock first.
JITTER_S = 0.002


class Pooled(store.PythonStore):
    # Exec'd only: this store's point is its calls, not a fast path.
    launchers = ()

    def open(self, db, config):
        decision = super().open(db, config)
        self._transaction(lambda c: c.execute("CREATE TABLE IF NOT EXISTS pool_jobs (i INTEGER)"))
        self._db, self._config = db, config
        self._local = threading.local()
        self._rng = random.SystemRandom()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        return decision

    def _connection(self):
        if not hasattr(self._local, "store"):
            self._local.store = store.PythonStore()
            self._local.store.open(self._db, self._config)
        return self._local.store

    def append(self, name, role, content):
        """The message's transaction and the job's, each on a worker; returns
        once both are done, so the library acks after both."""

        def message():
            time.sleep(self._rng.random() * JITTER_S)
            before = self.ack_now if self.mutant == "ack-before-commit" else None
            self._connection()._transaction(lambda c: store.insert_turn(c, name, role, content), before)

        def job():
            time.sleep(self._rng.random() * JITTER_S)
            for _ in range(self._rng.randint(0, 2)):
                self._connection()._transaction(lambda c: c.execute("INSERT INTO pool_jobs VALUES (1)"))

        for done in [self._pool.submit(message), self._pool.submit(job)]:
            done.result()

    def close(self):
        self._pool.shutdown()
        super().close()


if __name__ == "__main__":
    store.adapter.run(Pooled)
