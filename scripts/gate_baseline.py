#!/usr/bin/env python3
"""`scripts/gate-bench --baseline BIN|REV`: this build's gate against another build's, side by side.

Why: absolute seconds do not carry from one machine (or one hour of a shared
runner) to the next; a ratio measured in one session, with the two builds'
runs interleaved so that a change of load hits both alike, does. For every
store (the reference store, the Python example on the system's SQLite and on
the bundled one, Hermes once fetched) it runs
the whole gate (`run --seed S`, every cell, kill mode all) with each build,
round by round, and prints per build: wall time, CPU time (user + system of
the driver and every child it waited for), points landed, distinct crash
states, and cell 2's share of the summed result time; then the ratios
(this / baseline) and whether the verdicts are the same, result by result.

A gate that errors (exit 2 or more) stops the bench: a ratio of a run that
did not reach its verdicts would say nothing.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

STORES = [
    ("reference", []),
    ("python", ["--child", "python3 examples/python-store/store.py"]),
    ("hermes", ["--child", "python3 examples/hermes-store/adapter.py",
                "--known", "examples/hermes-store/known.toml"]),
    # The Python example on crashcells' own SQLite (3.54.1), whatever the
    # system's: the libraries matrix's bundled legs (docs/design/libraries.md).
    ("python-bundled", ["--child", "python3 examples/python-store/store.py", "--matrix", "libraries",
                        "--leg", "bundled-default", "--leg", "bundled-delete", "--leg", "bundled-wal"]),
]


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def gate(binary, args, seed, scratch):
    """One gate: (wall s, cpu s, report dict). Exits the bench on an error."""
    out = os.path.join(scratch, "run.json")
    if os.path.exists(out):
        os.remove(out)
    cmd = [binary, "run", "--seed", str(seed), "--evidence", os.path.join(scratch, "evidence"),
           "--format", "json", "--out", out] + args
    cpu0, t0 = children_cpu(), time.monotonic()
    with open(os.path.join(scratch, "log.txt"), "w") as log:
        code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if code >= 2:
        with open(os.path.join(scratch, "log.txt")) as log:
            tail = log.read().splitlines()[-5:]
        sys.exit("gate-bench: `%s` exited %d:\n%s" % (" ".join(cmd), code, "\n".join(tail)))
    with open(out) as f:
        return wall, cpu, json.load(f)


def figures(report):
    """Points landed, distinct states, cell 2's share of result time, verdicts by result."""
    results = report["results"]
    landed = sum(r.get("points_landed") or 0 for r in results)
    distinct = sum(r.get("states_distinct") or 0 for r in results)
    total = sum(r.get("duration_ms") or 0 for r in results) or 1
    cell2 = sum(r.get("duration_ms") or 0 for r in results if r.get("number") == 2)
    verdicts = {(r["cell"], r["leg"], r["kill"]): r["verdict"] for r in results}
    return landed, distinct, cell2 / total, verdicts


def bench(name, args, builds, rounds, seed, scratch, keep=None):
    runs = {b: [] for b in builds}
    for i in range(rounds):
        # Alternate which build goes first, so that neither always meets a
        # cold cache or the tail of the other's load.
        order = list(builds.items())
        for label, binary in order if i % 2 == 0 else reversed(order):
            runs[label].append(gate(binary, args, seed, scratch))
    rows = {}
    for label, got in runs.items():
        if keep:
            # The last round's report, for where each result's time went (duration_ms).
            with open(os.path.join(keep, "%s-%s.json" % (name, label)), "w") as f:
                json.dump(got[-1][2], f)
        wall = statistics.median(g[0] for g in got)
        cpu = statistics.median(g[1] for g in got)
        landed, distinct, share, verdicts = figures(got[-1][2])
        rows[label] = (wall, cpu, landed, distinct, share, verdicts)
        print("%-10s %-9s wall %7.2f s  cpu %7.2f s  landed %6d  distinct %6d  cell 2 %3.0f%%" %
              (name, label, wall, cpu, landed, distinct, 100 * share))
    base, this = rows["baseline"], rows["this"]
    same = base[5] == this[5]
    print("%-10s ratio     wall %.2f  cpu %.2f  landed %.2f  verdicts %s  (load %s)" % (
        name, this[0] / base[0], this[1] / base[1], this[2] / max(base[2], 1),
        "same" if same else "DIFFER", load()))
    if not same:
        for key in sorted(set(base[5]) | set(this[5])):
            if base[5].get(key) != this[5].get(key):
                print("  %s: baseline %s, this %s" % ("/".join(key), base[5].get(key), this[5].get(key)))
    return same


def built_at(rev):
    """The release binary of git revision `rev`, built in a detached worktree
    that is removed after; its target folder (target/baseline) is kept, so a
    second bench against the same or a near revision compiles little.
    Exits 2, one line, where `rev` is neither a binary nor a revision."""
    got = subprocess.run(["git", "rev-parse", "--verify", "--quiet", rev + "^{commit}"],
                         capture_output=True, text=True)
    if got.returncode != 0:
        print("gate-bench: --baseline %s is neither an executable file nor a git revision" % rev, file=sys.stderr)
        sys.exit(2)
    sha = got.stdout.strip()
    target = os.path.abspath(os.path.join("target", "baseline"))
    with tempfile.TemporaryDirectory() as tree:
        src = os.path.join(tree, "src")
        subprocess.run(["git", "worktree", "add", "--quiet", "--detach", src, sha], check=True)
        try:
            print("gate-bench: building the baseline %s (%s)" % (rev, sha[:12]), file=sys.stderr)
            built = subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path",
                                    os.path.join(src, "Cargo.toml"), "--target-dir", target])
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", src], check=False)
    if built.returncode != 0:
        print("gate-bench: the baseline %s did not build" % rev, file=sys.stderr)
        sys.exit(2)
    # Copied out under its commit: the next baseline build reuses the folder.
    binary = os.path.join(target, "crashcells-" + sha[:12])
    shutil.copy2(os.path.join(target, "release", "crashcells"), binary)
    return binary


def main():
    p = argparse.ArgumentParser(prog="gate-bench --baseline")
    p.add_argument("--baseline", required=True, metavar="BIN|REV",
                   help="the other build's crashcells binary, or a git revision to build one from")
    p.add_argument("--this", required=True, metavar="BIN", help="this build's crashcells binary")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--store", action="append", choices=[s[0] for s in STORES],
                   help="only these stores (default: every store that is there)")
    p.add_argument("--keep", metavar="DIR", help="write each build's last report per store there, as STORE-BUILD.json")
    a = p.parse_args()
    if not (os.path.isfile(a.baseline) and os.access(a.baseline, os.X_OK)):
        a.baseline = built_at(a.baseline)
    if a.keep:
        # Made before the first round: a folder that cannot be made fails
        # now, not after minutes of gates whose reports it was to hold.
        try:
            os.makedirs(a.keep, exist_ok=True)
        except OSError as e:
            print("gate-bench: --keep %s: %s" % (a.keep, e.strerror), file=sys.stderr)
            sys.exit(2)
    print("gate-bench: seed %d, %d round(s), %d cores, load %s" % (a.seed, a.rounds, os.cpu_count(), load()))
    same = True
    with tempfile.TemporaryDirectory() as scratch:
        # Copies taken now: a rebuild during the bench (minutes of it) must
        # not swap a build between its rounds.
        builds = {}
        for build, path in (("baseline", a.baseline), ("this", a.this)):
            builds[build] = os.path.join(scratch, "crashcells-" + build)
            shutil.copy2(path, builds[build])
        for name, args in STORES:
            if a.store and name not in a.store:
                continue
            if name == "hermes" and not os.path.isdir("examples/hermes-store/.wheel/site"):
                print("hermes     skipped: run examples/hermes-store/fetch first")
                continue
            same = bench(name, args, builds, a.rounds, a.seed, scratch, a.keep) and same
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
