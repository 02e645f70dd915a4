"""The command line of every operation (docs/PROTOCOL.md §2): the operation,
then flags as two arguments each, in no guaranteed order. A mistake is one
line and exit 2, never a half-run operation."""

import collections

# op: (required flags, optional flags, flags that may repeat)
FLAGS = {
    "append": ({"db", "acks"}, {"mutant", "stop-after"}, set()),
    "rotate": ({"db", "acks"}, {"mutant", "stop-after", "shapes"}, set()),
    "park": ({"db", "session"}, set(), set()),
    "claim": ({"db", "acks", "session", "barrier", "claimant"}, {"mutant"}, set()),
    "fork": ({"db", "acks", "seed"}, {"mutant", "stop-after"}, set()),
    "deliver": ({"db", "acks", "transport"}, {"mutant", "stop-after"}, set()),
    "catch-up": ({"db", "transport"}, {"mutant"}, {"db", "transport"}),
    "co-append": ({"db", "acks", "writer", "barrier"}, {"mutant", "stop-after"}, set()),
    "dump": ({"db"}, set(), {"db"}),
}
INTEGER_FLAGS = ("stop-after", "seed")

Args = collections.namedtuple("Args", "op flags")


class UsageError(Exception):
    """A command line the protocol does not allow: exit 2."""


def parse(argv):
    """Args(op, {flag: value or [values]}) of `argv` (the operation first)."""
    if not argv:
        raise UsageError("no operation given (one of %s)" % ", ".join(FLAGS))
    op, rest = argv[0], argv[1:]
    if op not in FLAGS:
        raise UsageError("unknown operation `%s` (one of %s)" % (op, ", ".join(FLAGS)))
    required, optional, repeated = FLAGS[op]
    flags = {name: [] for name in repeated}
    for i in range(0, len(rest), 2):
        name = rest[i][2:] if rest[i].startswith("--") else None
        if name not in required | optional:
            raise UsageError("%s: unknown argument `%s`" % (op, rest[i]))
        if i + 1 == len(rest):
            raise UsageError("%s: `%s` needs a value" % (op, rest[i]))
        if name in repeated:
            flags[name].append(rest[i + 1])
        elif name in flags:
            raise UsageError("%s: `--%s` given twice" % (op, name))
        else:
            flags[name] = value(op, name, rest[i + 1])
    missing = sorted(f for f in required if not flags.get(f))
    if missing:
        raise UsageError("%s: `--%s` is required" % (op, missing[0]))
    if flags.get("shapes", "on") != "on":
        raise UsageError("%s: `--shapes` takes only `on`" % op)
    if op == "catch-up" and len(flags["db"]) != len(flags["transport"]):
        raise UsageError("catch-up: --db and --transport come in pairs")
    return Args(op, flags)


def value(op, name, text):
    if name not in INTEGER_FLAGS:
        return text
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise UsageError("%s: `--%s` takes a whole number, not `%s`" % (op, name, text))
    return n
