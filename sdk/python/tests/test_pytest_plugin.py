"""The pytest plugin: a test file of a few lines collects a test per cell x
leg x kill mode; with a mutant, exactly the tests of the cell it breaks
fail, and pytest's JUnit carries it. Needs pytest and a crashcells binary."""

import importlib.util
import os
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

from helpers import MINI, SDK, Scratch, crashcells_binary

TEST_FILE = """\
crashcells_child = "{python} {mini}"
crashcells_args = ["--cell", "1", "--cell", "2", "--leg", "default", "--kill", "timed", "--trials", "4", "--seed", "11"{more}]
"""


@unittest.skipIf(importlib.util.find_spec("pytest") is None, "pytest is not installed")
@unittest.skipIf(crashcells_binary() is None, "no crashcells binary (CRASHCELLS_BIN, scripts folder, PATH)")
class PytestPlugin(unittest.TestCase):
    def setUp(self):
        self.s = Scratch()
        self.addCleanup(self.s.close)

    def pytest(self, more=""):
        with open(self.s.path("test_cells.py"), "w") as f:
            f.write(TEST_FILE.format(python=sys.executable, mini=MINI, more=more))
        junit = self.s.path("junit.xml")
        env = dict(os.environ, PYTHONPATH=SDK, CRASHCELLS_BIN=crashcells_binary())
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "crashcells.pytest_plugin", "-q", "-p", "no:cacheprovider",
             "--junitxml", junit, "test_cells.py"],
            cwd=self.s.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
        )
        cases = {c.get("name"): [x.tag for x in c] for c in ET.parse(junit).iter("testcase")}
        return done.returncode, done.stdout.decode(), cases

    def test_the_good_store_passes_and_a_mutant_fails_exactly_its_cell(self):
        code, text, cases = self.pytest()
        self.assertEqual(code, 0, text)
        self.assertEqual(
            sorted(cases), ["test_cell1_prefix_durability[default-timed]", "test_cell2_consume_once[default-none]"], text
        )
        self.assertTrue(all(tags == [] for tags in cases.values()), cases)
        # The library's drop-append: m1, m65, ... acked, never written.
        code, text, cases = self.pytest(', "--mutant", "drop-append"')
        self.assertEqual(code, 1, text)
        failed = sorted(name for name, tags in cases.items() if "failure" in tags)
        self.assertEqual(failed, ["test_cell1_prefix_durability[default-timed]"], text)
        for words in ("FIRE: prefix-durability", "fingerprint: prefix-durability/", "evidence: "):
            self.assertIn(words, text)
        # The repro names the binary as it ran: `crashcells` where that is
        # the one on PATH, else its path.
        self.assertRegex(text, r"repro: (\S*/)?crashcells run --cell prefix-durability ")
