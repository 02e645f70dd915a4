"""The ack journal and the fake provider's transport (docs/PROTOCOL.md §3,
`deliver`).

Crash model: the child is killed with SIGKILL at any instant. Each line is
put down with ONE write(2) on an O_APPEND descriptor, so a kill tears at
most the final line; a short write is an error, never completed by a second
call that the kill could separate from the first.
"""

import json
import os


def line(obj):
    return (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def write_once(fd, data, what):
    n = os.write(fd, data)
    if n != len(data):
        raise OSError("short write of %s: %d of %d bytes" % (what, n, len(data)))


class Acks:
    """The ack journal of one operation. `pending` is the ack of the call in
    progress: written after the call returned, unless the store wrote it
    itself inside its transaction (`ack_now`, the ack-before-commit mutant)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pending = None

    def record(self, obj):
        write_once(self.fd, line(obj), "an ack")

    def expect(self, obj):
        self.pending = obj

    def now(self):
        """Writes the pending ack at once (a no-op when there is none)."""
        obj, self.pending = self.pending, None
        if obj is not None:
            self.record(obj)

    def close(self):
        os.close(self.fd)


def send(path, key, payload):
    """Appends one delivery line to the transport with a single write(2)."""
    data = line({"key": key, "payload": payload})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        write_once(fd, data, "a send")
    finally:
        os.close(fd)


def arrived(path):
    """The keys the provider accepted: every complete line of the transport
    (a final line without its newline is a send the kill cut short)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return set()
    complete = data[: data.rfind(b"\n") + 1]
    return {json.loads(raw)["key"] for raw in complete.splitlines() if raw}
