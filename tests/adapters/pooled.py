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


def pooled_append(a):
    main = store.Store(a.db)
    main.create(store.APPEND_SESSION)
    main.transaction(lambda c: c.execute("CREATE TABLE IF NOT EXISTS pool_jobs (i INTEGER)"))
    acks = store.Acks(a.acks)
    acks.ready(main, "append")
    local = threading.local()
    rng = random.SystemRandom()

    def connection():
        if not hasattr(local, "store"):
            local.store = store.Store(a.db)
        return local.store

    def message(i):
        time.sleep(rng.random() * JITTER_S)
        early = a.mutant == "ack-before-commit"
        ack = (lambda: acks.ack("append", i)) if early else None
        connection().append(store.APPEND_SESSION, "user", "m%d" % i, before_commit=ack)

    def job(i):
        time.sleep(rng.random() * JITTER_S)
        for _ in range(rng.randint(0, 2)):
            connection().transaction(lambda c: c.execute("INSERT INTO pool_jobs VALUES (?)", (i,)))

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for i in store.ops(a.stop_after):
            for done in [pool.submit(message, i), pool.submit(job, i)]:
                done.result()
            if a.mutant != "ack-before-commit":
                acks.ack("append", i)
    return 0


store.op_append = pooled_append
# Exec'd only: this store's point is its calls, not a fast path.
store.OPERATIONS = tuple(o for o in store.OPERATIONS if o not in ("fork-server", "warm-pool"))

if __name__ == "__main__":
    sys.exit(store.main())
