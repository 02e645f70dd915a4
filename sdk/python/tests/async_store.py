#!/usr/bin/env python3
"""mini_store.py with every method `async def`: each awaits the event loop
once, then does the same transaction, as a store on an async API would. The
library awaits each on the child's one event loop. ASYNC_BREAK breaks it:
`nowrite` makes `append` a coroutine that writes nothing (cell 1 and
child-check's append-state must see the acked messages missing), `returns`
makes `append` a plain method that returns its coroutine (awaited all the
same).

Crash model: each method is one transaction on the store's own connection,
committed before its coroutine returns; the library acks after it resolved.
"""

import asyncio
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mini_store  # noqa: E402
from mini_store import adapter  # noqa: E402


def asynchronous(method):
    @functools.wraps(method)
    async def run(self, *args):
        # A real suspension: the loop runs before the write, as an async driver's would.
        await asyncio.sleep(0)
        return method(self, *args)

    return run


class AsyncStore(mini_store.MiniStore):
    pass


for name in adapter.METHODS:
    method = mini_store.MiniStore.__dict__.get(name)
    if callable(method) and name != "preload":
        setattr(AsyncStore, name, asynchronous(method))


if __name__ == "__main__":
    broken = os.environ.get("ASYNC_BREAK")
    if broken == "nowrite":

        async def append(self, session, role, content):
            await asyncio.sleep(0)

        AsyncStore.append = append
    elif broken == "returns":
        AsyncStore.append = lambda self, *args: asynchronous(mini_store.MiniStore.append)(self, *args)
    adapter.run(AsyncStore)
