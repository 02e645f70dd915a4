"""crashcells.pytest_plugin: the cells as pytest tests.

A test module that names its adapter collects one test per cell x leg x
kill mode of a `crashcells run` against it:

    # test_crash.py
    crashcells_child = "python3 store.py"     # run from this file's folder
    crashcells_args = ["--seed", "11"]         # optional: any `crashcells run` flags
    crashcells_known = "known.toml"            # optional: known findings (xfail)

A fire fails with the report's text (reason, fingerprint, evidence, repro),
a skip skips with its reason, a known finding is an expected failure, and
pytest's own --junitxml carries each. The plugin is registered by the
package's `pytest11` entry point; without it, `-p crashcells.pytest_plugin`.

The run happens once per module, while pytest collects it: the tests are
exactly the results the driver planned (which cell runs which kill modes on
which legs is the driver's, e.g. cell 2's race under `none`), so the plugin
never writes a second copy of the plan, and one run shares its recordings
and its --jobs across every test. The cost: `--collect-only` runs the cells
too.

The binary is found as ruff's wheel finds its own: $CRASHCELLS_BIN, then the
scripts folder of the running interpreter (where `pip install` put it), then
PATH.
"""

import json
import os
import subprocess
import sys

import pytest

import crashcells

CHILD = "crashcells_child"
# A run that outlives this is killed (its children die with it: their
# parent-death signal); the driver's own deadlines bound each trial.
DEFAULT_TIMEOUT_S = 3600
_runs = {}


def find_binary():
    """The crashcells binary (`crashcells.binary`), or a usage error."""
    found = crashcells.binary()
    if found is None:
        raise pytest.UsageError(
            "crashcells: no `crashcells` binary (set CRASHCELLS_BIN, or install the crashcells wheel)"
        )
    return found


def pytest_pycollect_makeitem(collector, name, obj):
    if name != CHILD or not isinstance(collector, pytest.Module):
        return None
    if not isinstance(obj, str) or not obj.strip():
        raise collector.CollectError("%s must be the adapter's command line, a string" % CHILD)
    module = collector.obj
    folder = os.path.dirname(os.path.abspath(str(collector.path)))
    report = run_cells(obj, folder, module)
    return [CellItem.from_parent(collector, name=item_name(r), result=r) for r in report["results"]]


def run_cells(child, folder, module):
    args = list(getattr(module, "crashcells_args", []))
    known = getattr(module, "crashcells_known", None)
    if known is not None:
        args += ["--known", os.path.join(folder, known)]
    command = [find_binary(), "run", "--child", child, "--cwd", folder, "--format", "json"] + args
    key = tuple(command)
    if key not in _runs:
        _runs[key] = execute(command, getattr(module, "crashcells_timeout", DEFAULT_TIMEOUT_S))
    return _runs[key]


def execute(command, timeout):
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise pytest.UsageError("crashcells: the run did not end within %s s: %s" % (timeout, " ".join(command)))
    except OSError as e:
        raise pytest.UsageError("crashcells: cannot start %s: %s" % (command[0], e))
    # 0 nothing fired, 1 a fire, 3 nothing ran: each has a report. 2 is bad input.
    try:
        report = json.loads(done.stdout)
    except ValueError:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise pytest.UsageError("crashcells run exited %d without a report: %s" % (done.returncode, last))
    # The report's paths are relative to the folder the run started in.
    for r in report.get("results", []):
        if r.get("evidence"):
            r["evidence"] = os.path.abspath(r["evidence"])
    return report


def item_name(result):
    """test_cell1_prefix_durability[default-syscall]: the seed's names, one per leg and kill mode."""
    cell = result["cell"].replace("-", "_")
    return "test_cell%s_%s[%s-%s]" % (result.get("number"), cell, result["leg"], result["kill"])


class CellFired(Exception):
    """A cell fired (or the run could not judge it): the report's text."""


class CellItem(pytest.Item):
    def __init__(self, *, result, **kwargs):
        super().__init__(**kwargs)
        self.result = result

    def runtest(self):
        r = self.result
        verdict = r.get("verdict")
        if verdict == "pass":
            return
        if verdict == "skip":
            pytest.skip(r.get("reason") or "skipped")
        if verdict == "known":
            pytest.xfail("known finding %s%s" % (r.get("fingerprint"), issue(r)))
        raise CellFired(describe(r))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, CellFired):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, self.name


def issue(result):
    known = result.get("known")
    if isinstance(known, dict) and known.get("issue"):
        return " (%s)" % known["issue"]
    return ""


def describe(r):
    """What a fire's report says, in the order a reader acts on it."""
    lines = ["%s: %s on leg %s, kill %s" % (r.get("verdict", "?").upper(), r["cell"], r["leg"], r["kill"])]
    lines.append("reason: %s" % r.get("reason"))
    for field in ("fingerprint", "evidence", "repro"):
        if r.get(field):
            lines.append("%s: %s" % (field, r[field]))
    points = r.get("kill_points") or []
    if points:
        lines.append("kill point: %s" % json.dumps(points[-1], sort_keys=True))
    for detail in r.get("details") or []:
        lines.append("  %s" % detail)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit("crashcells.pytest_plugin is a pytest plugin: `pytest -p crashcells.pytest_plugin`")
