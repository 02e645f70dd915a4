"""What the library's tests share: running mini_store.py (or a broken
variant of it) as the driver would, in a scratch folder, and finding a
crashcells binary for the tests that need one."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MINI = os.path.join(HERE, "mini_store.py")
SDK = os.path.dirname(HERE)
sys.path.insert(0, SDK)
import crashcells  # noqa: E402  (the library under test, from this checkout)
# Every child of these tests ends well within this; a hang fails the test.
DEADLINE_S = 60


class Scratch:
    """A scratch folder, removed by `close`."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="crashcells-sdk-")

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def run(argv, env=None, broken=None, script=MINI):
    """The adapter with `argv`: (exit code, stdout, stderr lines)."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("MINI_BREAK", None)
    if broken:
        full_env["MINI_BREAK"] = broken
    done = subprocess.run(
        [sys.executable, script] + argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        timeout=DEADLINE_S,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode().splitlines()


def journal(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def crashcells_binary():
    """The binary the plugin would find (`crashcells.binary`); None if none."""
    return crashcells.binary()
