"""crashcells.adapter: a store under the cells in one class.

An adapter is a class with one method per operation the store supports
(sdk/API.md lists them and what each must guarantee); `run(MyStore)` does
the rest of docs/PROTOCOL.md: the command line, the config home, the ready
record, the ack journal, --stop-after, the workloads and their rules (the
rotation shapes, the rewind rule, the barrier, the deliver steps and the
catch-up rule), the canonical dump and its batches, exit codes, the fork
server and the warm pool.

Crash model: the process may be killed with SIGKILL at any instant. The
library never acks before the store's method returned (the store committed),
and writes each ack with one write(2); what a crash leaves is the store's.

An adapter that breaks a rule (a misspelt method, a `state()` of the wrong
shape, a method that raises something that is not the store's own error) is
stopped with ONE line naming the rule and the method, exit 2.
"""

import difflib
import os
import sqlite3
import sys

from . import canonical, cli, config, forkserver, workload
from .config import Config, ConfigError, resolve  # noqa: F401 (the adapter's API)
from .canonical import ShapeError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_ERROR = 3
EXIT_UNAVAILABLE = 69

# Every public method an adapter class may define (sdk/API.md).
METHODS = (
    "open", "journal", "connection", "close", "create_session", "append", "rotate", "park", "claim",
    "rewind", "live_length", "record", "attempting", "delivered", "pending", "state", "preload",
)
# Set by the library on each instance, or given by the base class.
PROVIDED = ("ack_now", "op", "mutant", "writer", "index", "mutants", "store_errors", "launchers")
OUTBOX = ("record", "attempting", "delivered", "pending")
# Mutants the library implements itself for a class that names them.
LIBRARY_MUTANTS = ("stall", "drop-append", "resend-on-catch-up")


class Corrupt(Exception):
    """Raised by `state()` for a file the store's SQLite calls corrupt: the
    dump says `corrupt: <message>` and the cell fires on it."""


class AdapterError(Exception):
    """An adapter that breaks a rule of the protocol or the library."""

    def __init__(self, message, rule):
        super().__init__("%s (rule: %s)" % (message, rule))


class Store:
    """An optional base class: the names the library sets, documented.

    `op` is the operation being run, `mutant` the name given with --mutant
    (or None); `writer` which writer this process is (co-append's --writer,
    r0, r1, ...; None for an operation with one writer) and `index` the
    current acked step's index (its ack's i), so that ids the store makes
    can be unique per writer; `mutants` names the mutants the class implements;
    `store_errors` the exceptions that are the store's own failures (exit 3,
    a finding), any other being an adapter mistake (exit 2); `launchers`
    which of "fork-server" and "warm-pool" the ready record offers (a store
    whose imports start threads must not fork: leave "fork-server" out)."""

    op = None
    mutant = None
    writer = None
    index = 0
    mutants = ()
    store_errors = (OSError, sqlite3.Error)
    launchers = ("fork-server", "warm-pool")

    def ack_now(self):
        """Writes the current operation's ack now, inside your transaction
        (the ack-before-commit mutant); the library then does not write it
        again after the method returned."""


def run(cls):
    """The adapter's entry point: serves forks or a warm process when the
    driver asks for one, else runs the operation of sys.argv and exits."""
    code = check_or_exit_code(cls)
    if code is not None:
        sys.exit(code)
    preload = getattr(cls, "preload", None)
    if sys.argv[-1:] == [forkserver.FORK_SERVER]:
        forkserver.serve(lambda: main(cls), preload=preload)
    if sys.argv[-1:] == [forkserver.WARM_POOL]:
        forkserver.warm(lambda: main(cls), preload=preload)
    if preload is not None:
        preload()
    sys.exit(main(cls))


def main(cls, argv=None):
    """Runs one operation of `argv` (default sys.argv[1:]) on `cls`; its exit code."""
    prog = os.path.basename(sys.argv[0]) if sys.argv else "adapter"
    code = check_or_exit_code(cls)
    if code is not None:
        return code
    try:
        args = cli.parse(sys.argv[1:] if argv is None else argv)
        return operate(cls, args)
    except cli.UsageError as e:
        return fail("%s: error: %s" % (prog, e), EXIT_USAGE)
    except ConfigError as e:
        return fail("%s: error: %s" % (prog, e), EXIT_USAGE)
    except AdapterError as e:
        return fail("crashcells adapter: %s" % e, EXIT_USAGE)
    except workload.Unavailable as e:
        return fail("%s: %s" % (prog, e), EXIT_UNAVAILABLE)
    except (workload.StoreFailed, OSError, sqlite3.Error) as e:
        # The store's failure (or its files'): a finding once ready (§6).
        return fail("%s: error: %s" % (prog, e), EXIT_ERROR)


def fail(line, code):
    print(line.replace("\n", " "), file=sys.stderr)
    return code


def check_or_exit_code(cls):
    try:
        check_class(cls)
    except AdapterError as e:
        return fail("crashcells adapter: %s" % e, EXIT_USAGE)
    return None


def check_class(cls):
    """Every public method is one of METHODS: a misspelt `apend` would
    otherwise leave `append` undefined, or run with a default, silently."""
    for name in dir(cls):
        attr = getattr(cls, name)
        # A nested class (an exception for store_errors, say) is no method.
        if name.startswith("_") or name in PROVIDED or not callable(attr) or isinstance(attr, type):
            continue
        if name not in METHODS:
            near = difflib.get_close_matches(name, METHODS, n=1)
            hint = "; did you mean `%s`?" % near[0] if near else "; helpers start with `_`"
            raise AdapterError("%s.%s is no adapter method%s" % (cls.__name__, name, hint), "sdk/API.md methods")
    for name in ("open", "append", "state"):
        if not callable(getattr(cls, name, None)):
            raise AdapterError("%s has no `%s` method" % (cls.__name__, name), "sdk/API.md methods")
    if not (callable(getattr(cls, "journal", None)) or callable(getattr(cls, "connection", None))):
        raise AdapterError("%s has neither `journal` nor `connection`" % cls.__name__, "§3 ready record")
    mutants = getattr(cls, "mutants", ())
    if not isinstance(mutants, (tuple, list, set, frozenset)) or not all(isinstance(m, str) for m in mutants):
        raise AdapterError("%s.mutants is not a list of names" % cls.__name__, "sdk/API.md mutants")


def operations(cls):
    """The ready record's `operations`, derived from the methods defined."""
    has = lambda *names: all(callable(getattr(cls, n, None)) for n in names)  # noqa: E731
    # co-append is the store's own append run by several writers at once:
    # every store that appends offers it, and cell 6 judges what it does.
    ops = ["append", "co-append"]
    if has("rotate"):
        ops.append("rotate")
    if has("park", "claim"):
        ops += ["park", "claim"]
    ops += ["dump", "dump-batch"]
    if has("rotate"):
        ops.append("rotate-shapes")
    if has("rewind"):
        ops.append("fork")
    if has(*OUTBOX):
        ops += ["deliver", "catch-up", "catch-up-batch"]
    launchers = getattr(cls, "launchers", (forkserver.FORK_SERVER, forkserver.WARM_POOL))
    return ops + [name for name in (forkserver.FORK_SERVER, forkserver.WARM_POOL) if name in launchers]


def operate(cls, args):
    mutant = args.flags.get("mutant")
    if mutant is not None and mutant not in cls.mutants:
        implemented = ", ".join(cls.mutants) or "none"
        raise cli.UsageError("unknown mutant `%s` (this store implements: %s)" % (mutant, implemented))
    needs = workload.NEEDS[args.op]
    if not all(callable(getattr(cls, n, None)) for n in needs):
        raise workload.Unavailable("the store does not implement `%s`" % args.op)
    if args.op == "dump":
        return dump(cls, args.flags["db"])
    return workload.OPERATIONS[args.op](workload.Session(cls, args, operations(cls)))


def dump(cls, dbs):
    """The recovery pass: one canonical line per --db, each from a fresh
    instance; every file checked before anything is printed."""
    for db in dbs:
        if not os.path.isfile(db):
            raise workload.StoreFailed("no database at %s" % db)
    lines = [canonical.serialize(recovered(cls, db)) + "\n" for db in dbs]
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    return EXIT_OK


def recovered(cls, db):
    store = cls()
    try:
        data = workload.call(store, "state", db)
        integrity = None if isinstance(data, dict) and "integrity" in data else integrity_of(db)
        return canonical.canonical(data, integrity)
    except ShapeError as e:
        raise AdapterError("state() %s" % e, canonical.RULE)
    except Corrupt as e:
        return canonical.empty("corrupt: %s" % e)
    except workload.StoreFailed as e:
        corrupt = corrupt_cause(e.__cause__)
        if corrupt is not None:
            # A file SQLite calls corrupt is a finding, not a failed pass.
            return canonical.empty("corrupt: %s" % corrupt)
        raise


def corrupt_cause(e):
    """sqlite3's error calling the file corrupt: `e`, or the error it was
    raised from (the driver's, under an ORM's class); None if neither."""
    return next((c for c in workload.causes(e) if is_corrupt(c)), None)


def is_corrupt(e):
    if not isinstance(e, sqlite3.DatabaseError):
        return False
    return not isinstance(e, sqlite3.OperationalError) or "malformed" in str(e) or "not a database" in str(e)


def integrity_of(db):
    """`PRAGMA integrity_check` on a connection of the library's own, for a
    `state()` that gave none: the rows joined with "; "."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    except sqlite3.DatabaseError as e:
        if is_corrupt(e):
            raise Corrupt(str(e))
        raise workload.StoreFailed(str(e))
    finally:
        conn.close()
