"""An `async def` operation is awaited, on one event loop per child: a store
whose every method is async runs, passes child-check and its gate; one whose
append coroutine writes nothing is refused by child-check and fires cell 1,
never acked as if it had written."""

import json
import os
import subprocess
import sys
import unittest

from helpers import HERE, Scratch, crashcells_binary, journal, run
from crashcells import workload

ASYNC = os.path.join(HERE, "async_store.py")


class Awaited(unittest.TestCase):
    def setUp(self):
        self.s = Scratch()
        self.addCleanup(self.s.close)

    def appended(self, broken=None):
        env = {"ASYNC_BREAK": broken} if broken else {"ASYNC_BREAK": ""}
        code, _, err = run(["append", "--db", self.s.path("s.db"), "--acks", self.s.path("a"), "--stop-after", "3"], env=env, script=ASYNC)
        self.assertEqual(code, 0, err)
        self.assertFalse([l for l in err if "never awaited" in l], err)
        code, out, err = run(["dump", "--db", self.s.path("s.db")], env=env, script=ASYNC)
        self.assertEqual(code, 0, err)
        return journal(self.s.path("a"))[1:], [m["content"] for m in json.loads(out)["messages"]]

    def test_async_methods_are_awaited_before_their_ack(self):
        acks, contents = self.appended()
        self.assertEqual([a["i"] for a in acks], [0, 1, 2])
        self.assertEqual(contents, ["m0", "m1", "m2"])

    def test_a_plain_method_returning_a_coroutine_is_awaited_too(self):
        self.assertEqual(self.appended("returns")[1], ["m0", "m1", "m2"])

    def test_a_coroutine_that_writes_nothing_is_acked_and_recovers_nothing(self):
        # Awaited, it ran: what it wrote (nothing) is what the cells judge.
        acks, contents = self.appended("nowrite")
        self.assertEqual((len(acks), contents), (3, []))

    def test_one_loop_serves_every_call_of_a_child(self):
        async def loop_id():
            import asyncio

            return id(asyncio.get_running_loop())

        self.assertEqual(workload.settle(loop_id()), workload.settle(loop_id()))
        self.assertEqual(workload.settle(41), 41)


@unittest.skipIf(crashcells_binary() is None, "no crashcells binary (CRASHCELLS_BIN, scripts folder, PATH)")
class UnderTheDriver(unittest.TestCase):
    def crashcells(self, broken, *argv):
        child = "env ASYNC_BREAK=%s %s %s" % (broken, sys.executable, ASYNC)
        scratch = Scratch()
        self.addCleanup(scratch.close)
        done = subprocess.run(
            [crashcells_binary()] + list(argv) + ["--child", child],
            cwd=scratch.dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
        return done.returncode, done.stdout.decode()

    def test_child_check_passes_the_async_store_and_refuses_one_that_writes_nothing(self):
        only = ["child-check", "--only", "append-state,co-append-state,claim-state,fork-state,deliver-state"]
        code, text = self.crashcells("none", *only)
        self.assertEqual(code, 0, text)
        code, text = self.crashcells("nowrite", *only)
        self.assertEqual(code, 1, text)
        self.assertTrue(any(l.startswith("FAIL") and "append-state" in l and "was lost" in l for l in text.splitlines()), text)

    def test_the_gate_passes_the_async_store_and_fires_on_one_that_writes_nothing(self):
        gate = ["run", "--cell", "1", "--leg", "default", "--seed", "11"]
        code, text = self.crashcells("none", *gate, "--kill", "syscall", "--points", "4")
        self.assertEqual(code, 0, text)
        code, text = self.crashcells("nowrite", *gate, "--kill", "timed", "--trials", "1")
        self.assertEqual(code, 1, text)
        self.assertIn("1 fire", text)


if __name__ == "__main__":
    unittest.main()
