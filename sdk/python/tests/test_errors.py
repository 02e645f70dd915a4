"""An adapter that breaks a rule gets ONE line naming the rule and the method,
exit 2: alone, and as `crashcells child-check` shows it."""

import subprocess
import sys
import unittest

from helpers import MINI, Scratch, crashcells_binary, run


class OneLineErrors(unittest.TestCase):
    def setUp(self):
        self.s = Scratch()
        self.addCleanup(self.s.close)

    def append(self, broken=None, *more):
        return run(["append", "--db", self.s.path("s.db"), "--acks", self.s.path("a"), "--stop-after", "2"] + list(more), broken=broken)

    def test_a_misspelt_method_is_named_with_a_did_you_mean(self):
        code, _, err = self.append("apend")
        self.assertEqual((code, len(err)), (2, 1), err)
        self.assertIn("MiniStore.apend is no adapter method; did you mean `append`?", err[0])
        self.assertIn("(rule: sdk/API.md methods)", err[0])

    def test_a_state_of_the_wrong_shape_names_the_field(self):
        self.assertEqual(self.append()[0], 0)
        code, out, err = run(["dump", "--db", self.s.path("s.db")], broken="shape")
        self.assertEqual((code, out, len(err)), (2, "", 1), err)
        self.assertEqual(
            err[0], 'crashcells adapter: state() returned messages[0] without "role" (rule: §4 canonical dump)'
        )

    def test_an_operation_that_raises_is_named(self):
        code, _, err = self.append("raise")
        self.assertEqual((code, len(err)), (2, 1), err)
        self.assertTrue(err[0].startswith("crashcells adapter: append() raised KeyError"), err)
        self.assertIn("(rule: ", err[0])

    def test_a_store_error_wrapped_by_an_orm_is_the_stores_failure(self):
        # No store_errors names OrmError: its cause, sqlite3's error, does.
        code, _, err = self.append("wrapped")
        self.assertEqual((code, len(err)), (3, 1), err)
        self.assertIn("error: (sqlite3.OperationalError) no such table: no_such_table", err[0])
        self.assertNotIn("crashcells adapter", err[0])

    def test_a_corrupt_file_under_an_orms_error_is_a_corrupt_dump(self):
        self.assertEqual(self.append()[0], 0)
        code, out, err = run(["dump", "--db", self.s.path("s.db")], broken="corrupt-wrapped")
        self.assertEqual((code, err), (0, []), err)
        self.assertIn('"integrity":"corrupt: database disk image is malformed"', out)

    def test_an_error_raised_while_handling_a_store_error_is_the_adapters(self):
        # A KeyError whose __context__ (not __cause__) is sqlite3's error.
        code, _, err = self.append("handler")
        self.assertEqual((code, len(err)), (2, 1), err)
        self.assertTrue(err[0].startswith("crashcells adapter: append() raised KeyError"), err)

    def test_an_unknown_mutant_is_refused_naming_those_implemented(self):
        code, _, err = self.append(None, "--mutant", "split-claim")
        self.assertEqual((code, len(err)), (2, 1), err)
        self.assertIn("unknown mutant `split-claim` (this store implements: racy-claim, drop-append)", err[0])

    def test_a_bad_config_home_is_refused_before_the_ready_record(self):
        with open(self.s.path("config.toml"), "w") as f:
            f.write('[database]\njournal_mode = "wall"\n')
        code, _, err = run(
            ["append", "--db", self.s.path("s.db"), "--acks", self.s.path("a")], env={"CRASHCELLS_HOME": self.s.dir}
        )
        self.assertEqual((code, len(err)), (2, 1), err)
        self.assertIn("unknown journal_mode `wall`", err[0])
        with open(self.s.path("a"), "a+") as f:
            f.seek(0)
            self.assertEqual(f.read(), "")

    def test_a_bad_command_line_is_one_line(self):
        for argv in (["append", "--db"], ["append", "--db", "x", "--acks", "y", "--bogus", "1"], ["fork", "--db", "x", "--acks", "y"], ["nothing"]):
            code, _, err = run(argv)
            self.assertEqual((code, len(err)), (2, 1), (argv, err))


@unittest.skipIf(crashcells_binary() is None, "no crashcells binary (CRASHCELLS_BIN, scripts folder, PATH)")
class UnderChildCheck(unittest.TestCase):
    """child-check shows the library's line and the child's exit code 2."""

    def child_check(self, broken, only):
        done = subprocess.run(
            [crashcells_binary(), "child-check", "--only", only, "--child", "env MINI_BREAK=%s %s %s" % (broken, sys.executable, MINI)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
        return done.returncode, done.stdout.decode()

    def test_each_broken_rule_fails_child_check_with_its_line(self):
        cases = (
            ("apend", "ready", "did you mean `append`?"),
            ("shape", "dump-canonical", 'state() returned messages[0] without "role"'),
            ("raise", "ready", "append() raised KeyError"),
        )
        for broken, only, line in cases:
            code, text = self.child_check(broken, only)
            self.assertEqual(code, 1, text)
            fails = [l for l in text.splitlines() if l.startswith("FAIL")]
            self.assertTrue(any(line in l and "exit code 2" in l and "(rule: " in l for l in fails), text)
