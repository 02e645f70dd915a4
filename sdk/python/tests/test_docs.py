"""The complete small store of docs/adapters/python.md runs as the page says:
its appends are acked and dumped, its claim wins once, and it runs the
journal mode each leg asks for, decided by its config (#53: the page once
taught the reference resolver, which skips the `wal` leg on a SQLite with
the WAL-reset bug)."""

import json
import os
import re
import unittest

from helpers import SDK, Scratch, journal, run

PAGE = os.path.join(SDK, os.pardir, os.pardir, "docs", "adapters", "python.md")


class DocsStore(unittest.TestCase):
    def setUp(self):
        self.s = Scratch()
        self.addCleanup(self.s.close)
        with open(PAGE, encoding="utf-8") as f:
            code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
        self.script = self.s.path("notes.py")
        with open(self.script, "w") as f:
            f.write("import sys\nsys.path.insert(0, %r)\n" % SDK + code)

    def op(self, *argv):
        code, out, err = run(list(argv), script=self.script)
        self.assertEqual(code, 0, err)
        return out

    def test_the_pages_store_appends_claims_and_dumps(self):
        db = self.s.path("s.db")
        self.op("append", "--db", db, "--acks", self.s.path("a"), "--stop-after", "2")
        self.assertEqual(len(journal(self.s.path("a"))), 3)
        self.op("park", "--db", db, "--session", "h")
        barrier = self.s.path("barrier")
        open(barrier, "w").close()
        self.op("claim", "--db", db, "--acks", self.s.path("c"), "--session", "h", "--barrier", barrier, "--claimant", "r0")
        state = json.loads(self.op("dump", "--db", db))
        self.assertEqual([m["content"] for m in state["messages"]], ["m0", "m1", "claimed by r0"])
        self.assertEqual([s["handoff_state"] for s in state["sessions"]], ["running", None])

    def test_the_pages_store_runs_the_mode_each_leg_asks_for(self):
        for asked, by in (("wal", "config"), ("delete", "config"), (None, "default")):
            home = self.s.path("home-%s" % asked)
            os.mkdir(home)
            if asked:
                with open(os.path.join(home, "config.toml"), "w") as f:
                    f.write('[database]\njournal_mode = "%s"\n' % asked)
            acks = self.s.path("acks-%s" % asked)
            code, _, err = run(["append", "--db", self.s.path("%s.db" % asked), "--acks", acks, "--stop-after", "1"],
                               env={"CRASHCELLS_HOME": home}, script=self.script)
            self.assertEqual(code, 0, err)
            ready = journal(acks)[0]
            self.assertEqual(ready["journal_mode"], asked or "delete")
            self.assertEqual((ready["resolver"]["decided_by"], ready["resolver"]["requested"]), (by, asked))
