"""The protocol the library runs around a store: the ready record and its
operations, acks after the effect, the workload rules, the dump's bytes and
batches, the claim's exit codes, exit 69 for what a class lacks."""

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import unittest

from helpers import MINI, SDK, Scratch, journal, run


class Plumbing(unittest.TestCase):
    def setUp(self):
        self.s = Scratch()
        self.addCleanup(self.s.close)
        self.db, self.acks = self.s.path("s.db"), self.s.path("acks")

    def dump(self, *dbs):
        argv = ["dump"]
        for db in dbs or (self.db,):
            argv += ["--db", db]
        code, out, err = run(argv)
        self.assertEqual(code, 0, err)
        return [json.loads(line) for line in out.splitlines()], out

    def test_append_writes_ready_then_one_ack_per_append(self):
        code, _, err = run(["append", "--db", self.db, "--acks", self.acks, "--stop-after", "3"])
        self.assertEqual(code, 0, err)
        ready, *acks = journal(self.acks)
        self.assertEqual(ready["kind"], "ready")
        self.assertEqual(ready["protocol"], 2)
        self.assertEqual(ready["pid"] > 0, True)
        self.assertEqual(
            ready["operations"],
            ["append", "co-append", "rotate", "park", "claim", "dump", "dump-batch", "rotate-shapes", "fork", "deliver", "catch-up", "catch-up-batch", "fork-server", "warm-pool"],
        )
        self.assertEqual(acks, [{"kind": "ack", "op": "append", "i": i} for i in range(3)])
        (state,), out = self.dump()
        self.assertEqual(
            out,
            '{"protocol":2,"integrity":"ok","sessions":[{"id":"main","parent_session_id":null,"ended":false,'
            '"end_reason":null,"message_count":3,"handoff_state":null}],"messages":[{"session_id":"main","role":"user",'
            '"content":"m0"},{"session_id":"main","role":"user","content":"m1"},{"session_id":"main","role":"user","content":"m2"}]}\n',
        )

    def test_rotate_with_shapes_follows_the_rule(self):
        code, _, err = run(["rotate", "--db", self.db, "--acks", self.acks, "--stop-after", "4", "--shapes", "on"])
        self.assertEqual(code, 0, err)
        acks = [(a["parent"], a["child"], a["carried"]) for a in journal(self.acks)[1:]]
        self.assertEqual(acks, [("p0", "c0", 0), ("c0", "c1", 2), ("p2", "c2", 2), ("c2", "c3", 0)])
        (state,), _ = self.dump()
        c1 = [(m["role"], m["content"]) for m in state["messages"] if m["session_id"] == "c1"]
        self.assertEqual(c1, [("system", "summary"), ("user", "work 1"), ("assistant", "reply 1")])

    def test_fork_rewinds_by_the_seeded_rule(self):
        code, _, err = run(["fork", "--db", self.db, "--acks", self.acks, "--seed", "8", "--stop-after", "9"])
        self.assertEqual(code, 0, err)
        rewinds = [(a["i"], a["k"]) for a in journal(self.acks)[1:] if a["op"] == "rewind"]
        self.assertEqual(rewinds, [(3, 1), (7, 0)])
        (state,), _ = self.dump()
        live = [m["content"] for m in state["messages"] if m.get("active", True)]
        self.assertEqual(live, ["m8"])
        self.assertEqual(state["sessions"][0]["message_count"], 1, "derived: the live messages")

    def test_deliver_sends_once_and_catch_up_asks_the_transport(self):
        transport = self.s.path("transport")
        code, _, err = run(["deliver", "--db", self.db, "--acks", self.acks, "--transport", transport, "--stop-after", "2"])
        self.assertEqual(code, 0, err)
        with open(transport) as f:
            self.assertEqual([json.loads(l)["key"] for l in f], ["o0", "o1"])
        # An obligation left attempting whose send arrived: catch-up must not send it again.
        import sqlite3

        conn = sqlite3.connect(self.db)
        conn.execute("UPDATE outbox SET state='attempting' WHERE key='o1'")
        conn.execute("INSERT INTO outbox VALUES ('o2', 'effect of o2', 'recorded')")
        conn.commit()
        conn.close()
        code, _, err = run(["catch-up", "--db", self.db, "--transport", transport])
        self.assertEqual(code, 0, err)
        with open(transport) as f:
            self.assertEqual([json.loads(l)["key"] for l in f], ["o0", "o1", "o2"])
        (state,), _ = self.dump()
        self.assertEqual(state["outbox"], [{"key": k, "state": "delivered"} for k in ("o0", "o1", "o2")])

    def test_dump_batch_prints_a_line_per_db_and_checks_every_file_first(self):
        other = self.s.path("t.db")
        for db in (self.db, other):
            run(["append", "--db", db, "--acks", self.acks, "--stop-after", "1"])
        states, _ = self.dump(self.db, other)
        self.assertEqual(len(states), 2)
        code, out, err = run(["dump", "--db", self.db, "--db", self.s.path("missing.db")])
        self.assertEqual((code, out), (3, ""), err)

    def test_claim_waits_at_the_barrier_and_exits_won_then_lost(self):
        code, _, err = run(["park", "--db", self.db, "--session", "h"])
        self.assertEqual(code, 0, err)
        barrier = self.s.path("barrier")
        open(barrier, "w").close()
        codes = []
        for name in ("r0", "r1"):
            with open(barrier) as held:
                fcntl.flock(held, fcntl.LOCK_EX)
                argv = ["claim", "--db", self.db, "--acks", self.s.path(name), "--session", "h", "--barrier", barrier, "--claimant", name]
                child = subprocess.Popen([sys.executable, MINI] + argv, stderr=subprocess.DEVNULL)
                try:
                    with self.assertRaises(subprocess.TimeoutExpired):
                        child.wait(timeout=1)
                finally:
                    fcntl.flock(held, fcntl.LOCK_UN)
                codes.append(child.wait(timeout=60))
        self.assertEqual(codes, [0, 10])
        (state,), _ = self.dump()
        self.assertEqual([m["content"] for m in state["messages"]], ["claimed by r0"])
        self.assertEqual(state["sessions"][0]["handoff_state"], "running")

    def test_drop_append_is_the_librarys_own_mutant(self):
        code, _, err = run(["append", "--db", self.db, "--acks", self.acks, "--stop-after", "65", "--mutant", "drop-append"])
        self.assertEqual(code, 0, err)
        self.assertEqual(len(journal(self.acks)), 66)
        (state,), _ = self.dump()
        self.assertEqual(len(state["messages"]), 64, "append 1 acked but never written")
        self.assertNotIn("m1", [m["content"] for m in state["messages"]])

    def test_a_store_without_an_operation_exits_69_and_does_not_list_it(self):
        script = self.s.path("norotate.py")
        with open(script, "w") as f:
            f.write(
                textwrap.dedent(
                    """
                    import sys
                    sys.path.insert(0, %r)
                    sys.path.insert(0, %r)
                    import mini_store
                    from crashcells import adapter
                    del mini_store.MiniStore.rotate
                    adapter.run(mini_store.MiniStore)
                    """
                    % (SDK, os.path.dirname(MINI))
                )
            )
        code, _, err = run(["rotate", "--db", self.db, "--acks", self.acks], script=script)
        self.assertEqual((code, len(err)), (69, 1), err)
        self.assertFalse(os.path.exists(self.acks), "nothing written before exit 69")
        code, _, err = run(["append", "--db", self.db, "--acks", self.acks, "--stop-after", "1"], script=script)
        self.assertEqual(code, 0, err)
        self.assertNotIn("rotate", journal(self.acks)[0]["operations"])
