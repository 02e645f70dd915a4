"""The canonical dump (docs/PROTOCOL.md §4): the plain data a store's
`state()` returns, checked and turned into the one line of JSON the driver
compares byte for byte across recovery passes.

A store describes what it holds; the library owns the bytes: field order,
sorting, the fields left out at their default. A `state()` that does not have
the shape is an adapter mistake, reported as one line naming the field.
"""

import json

PROTOCOL = 2
OBLIGATION_STATES = ("recorded", "attempting", "delivered")
RULE = "§4 canonical dump"

# field: (types allowed, required, default). The order is §4's.
SESSION_FIELDS = (
    ("id", (str,), True, None),
    ("parent_session_id", (str, type(None)), False, None),
    ("ended", (bool,), False, False),
    ("end_reason", (str, type(None)), False, None),
    ("message_count", (int,), False, None),
    ("handoff_state", (str, type(None)), False, None),
    ("branch_of", (str, type(None)), False, None),
)
MESSAGE_FIELDS = (
    ("session_id", (str,), True, None),
    ("role", (str,), True, None),
    ("content", (str,), True, None),
    # The store's own order in the session (a sequence or index column); None: not reported.
    ("position", (int, type(None)), False, None),
    ("active", (bool,), False, True),
)
OBLIGATION_FIELDS = (
    ("key", (str,), True, None),
    ("state", (str,), True, None),
)
TOP_FIELDS = ("sessions", "messages", "obligations", "integrity")


class ShapeError(Exception):
    """`state()` returned data of the wrong shape: the message names where."""


def serialize(state):
    """§4's bytes of a canonical state (a dict in §4's field order)."""
    return json.dumps(state, separators=(",", ":"), ensure_ascii=False)


def empty(integrity):
    return {"protocol": PROTOCOL, "integrity": integrity, "sessions": [], "messages": []}


def canonical(data, integrity):
    """The canonical state of `data` (what `state()` returned). `integrity`
    is used where `data` has none."""
    if not isinstance(data, dict):
        raise ShapeError("returned %s, not a dict" % type(data).__name__)
    unknown = sorted(set(data) - set(TOP_FIELDS))
    if unknown:
        raise ShapeError('returned an unknown field "%s" (known: %s)' % (unknown[0], ", ".join(TOP_FIELDS)))
    integrity = data.get("integrity", integrity)
    if not isinstance(integrity, str):
        raise ShapeError('returned "integrity" that is not a string')
    messages = [record(m, "messages", i, MESSAGE_FIELDS) for i, m in enumerate(items(data, "messages"))]
    sessions = [record(s, "sessions", i, SESSION_FIELDS) for i, s in enumerate(items(data, "sessions"))]
    outbox = [record(o, "obligations", i, OBLIGATION_FIELDS) for i, o in enumerate(items(data, "obligations"))]
    check_obligations(outbox)
    state = {
        "protocol": PROTOCOL,
        "integrity": integrity,
        "sessions": sorted((session(s, messages) for s in sessions), key=lambda s: s["id"].encode()),
        "messages": [message(m) for m in messages],
    }
    if outbox:
        # Omitted when empty: a store that never delivers prints version 1's bytes.
        state["outbox"] = sorted(({"key": o["key"], "state": o["state"]} for o in outbox), key=lambda o: o["key"].encode())
    return state


def items(data, name):
    value = data.get(name, [])
    if not isinstance(value, (list, tuple)):
        raise ShapeError('returned "%s" that is not a list' % name)
    return value


def record(value, where, index, fields):
    """One entry of a list, every field checked, defaults filled in."""
    here = "%s[%d]" % (where, index)
    if not isinstance(value, dict):
        raise ShapeError("returned %s that is not a dict" % here)
    known = [f[0] for f in fields]
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ShapeError('returned %s with an unknown field "%s" (known: %s)' % (here, unknown[0], ", ".join(known)))
    out = {}
    for name, types, required, default in fields:
        if name not in value:
            if required:
                raise ShapeError('returned %s without "%s"' % (here, name))
            out[name] = default
            continue
        v = value[name]
        # bool is an int in Python: a count of True is a mistake, not 1.
        if not isinstance(v, types) or (bool not in types and isinstance(v, bool)):
            raise ShapeError('returned %s with "%s" of type %s' % (here, name, type(v).__name__))
        out[name] = v
    return out


def check_obligations(outbox):
    seen = set()
    for i, o in enumerate(outbox):
        if o["state"] not in OBLIGATION_STATES:
            raise ShapeError(
                'returned obligations[%d] with "state" "%s" (one of %s)' % (i, o["state"], ", ".join(OBLIGATION_STATES))
            )
        if o["key"] in seen:
            raise ShapeError('returned obligations[%d] with a key seen before, "%s"' % (i, o["key"]))
        seen.add(o["key"])


def session(s, messages):
    count = s["message_count"]
    if count is None:
        # Derived (§4, "Checkpoint-shaped stores"): the live messages dump shows.
        count = sum(1 for m in messages if m["session_id"] == s["id"] and m["active"])
    if count < 0:
        raise ShapeError('returned session "%s" with a negative "message_count"' % s["id"])
    out = {
        "id": s["id"],
        "parent_session_id": s["parent_session_id"],
        "ended": s["ended"],
        "end_reason": s["end_reason"],
        "message_count": count,
        "handoff_state": s["handoff_state"],
    }
    if s["branch_of"] is not None:
        out["branch_of"] = s["branch_of"]
    return out


def message(m):
    out = {"session_id": m["session_id"], "role": m["role"], "content": m["content"]}
    if m["position"] is not None:
        out["position"] = m["position"]
    if not m["active"]:
        out["active"] = False
    return out


def live_length(state, session):
    """The length of `session`'s live transcript (§4, "The live transcript")
    in a canonical state: follow `branch_of` to the head, count its active
    messages."""
    head, seen = session, {session}
    while True:
        nxt = [s["id"] for s in state["sessions"] if s.get("branch_of") == head]
        if not nxt or nxt[0] in seen:
            break
        head = nxt[0]
        seen.add(head)
    return sum(1 for m in state["messages"] if m["session_id"] == head and m.get("active", True))
