#!/usr/bin/env python3
"""A second session store behind the crashcells child protocol, on the Python
adapter library (`crashcells.adapter`, sdk/python; docs/adapters/python.md).

What is left here is the store: its schema (`conversations` and `turns`, its
own), its SQL and its mutants. The library runs the protocol around it (the
command line, the config home, the ack journal, the workloads, the canonical
dump, the fork server and the warm pool).

Crash model: the process may be killed with SIGKILL at any instant. Every
write is one `BEGIN IMMEDIATE` transaction; the library writes an ack only
after the method that made the write returned, so after its commit.

It rewinds (`fork`) by branching, where the reference store soft-deletes: a
rewind creates a conversation that copies the kept prefix and names the one
it branches from, in one transaction. `dump` shows it as `branch_of`, and the
driver follows those links to the live transcript.

Run as: python3 store.py <append|rotate|park|claim|fork|deliver|catch-up|dump> [flags],
or python3 store.py fork-server, or python3 store.py warm-pool.
"""

import hashlib
import os
import sqlite3
import sys
import time

# The library of this checkout first (an installed one may be older).
_sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python")
if os.path.isdir(os.path.join(_sdk, "crashcells")):
    sys.path.insert(0, _sdk)
from crashcells import adapter  # noqa: E402

APPEND_SESSION = "main"
BUSY_TIMEOUT_S = 5.0
BUSY_RETRIES = 8
# Mutant unsynced-body-file: a message whose body is kept in a file beside
# the database holds this prefix and the file's name.
BODY_FILE = "body-file:"

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    name TEXT PRIMARY KEY,
    continues TEXT REFERENCES conversations(name),
    opened REAL NOT NULL,
    closed REAL,
    close_reason TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    handoff TEXT,
    branched_from TEXT REFERENCES conversations(name)
);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(name),
    speaker TEXT NOT NULL,
    body TEXT NOT NULL,
    -- The turn's place in its conversation, from 0, numbered inside the
    -- transaction that inserts it: dump reports it as `position`.
    pos INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation, pos);
"""

# Created by `deliver` and `catch-up` only, so the other operations keep their schema.
OUTBOX_SCHEMA = """
CREATE TABLE IF NOT EXISTS obligations (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    state TEXT NOT NULL
);
"""

# Only the split- and late-position-read mutants': the collision their INSERT OR IGNORE drops.
UNIQUE_POSITIONS = "CREATE UNIQUE INDEX IF NOT EXISTS turns_at_position ON turns(conversation, pos)"
# The two-file layout's attached file: where a rotation records the parent's
# end (see PythonStore._two_files).
ARCHIVE_SCHEMA = """
CREATE TABLE IF NOT EXISTS archive.closures (
    name TEXT PRIMARY KEY,
    closed REAL NOT NULL,
    close_reason TEXT NOT NULL
);
"""

# The layout whose rotation writes both files, asked for without a mutant.
TWO_FILES_ENV = "CRASHCELLS_EXAMPLE_TWO_FILES"

# Only the open-sweeps-orphans mutant's: its open's "repair".
SWEEP_ORPHANS = "DELETE FROM turns WHERE conversation NOT IN (SELECT name FROM conversations)"

CLAIM = "UPDATE conversations SET handoff='running' WHERE name=? AND handoff='pending'"
LEASE = "UPDATE conversations SET handoff='compressing' WHERE name=? AND handoff IS NULL"


class PythonStore(adapter.Store):
    mutants = (
        "ack-before-commit",
        "racy-claim",
        "split-rotation",
        "split-claim",
        "torn-fork",
        "resend-on-catch-up",
        "split-continuation",
        "torn-branch",
        "split-position-read",
        "late-position-read",
        "unsynced-body-file",
        "open-sweeps-orphans",
        "split-attached-rotation",
    )

    def open(self, db, config):
        self.db = db
        decision = adapter.resolve(config, db, sqlite3.sqlite_version)
        # isolation_level=None: no implicit transactions; each write says BEGIN IMMEDIATE itself.
        self.conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        if self._two_files():
            # Attached first: journal_mode without a schema sets every attached file's.
            self.conn.execute("ATTACH DATABASE ? AS archive", (archive_of(db),))
        with_retry(lambda: self.conn.execute("PRAGMA journal_mode=%s" % decision["applied"]).fetchone())
        if config.synchronous is not None:
            for schema in ("main", "archive") if self._two_files() else ("main",):
                self.conn.execute("PRAGMA %s.synchronous=%s" % (schema, config.synchronous))
        with_retry(lambda: self.conn.executescript(SCHEMA))
        if self.mutant in ("split-position-read", "late-position-read"):
            with_retry(lambda: self.conn.execute(UNIQUE_POSITIONS))
        if self.mutant == "open-sweeps-orphans":
            # Mutant open-sweeps-orphans: "repairs" turns whose conversation row is missing, taken for a crash's leftovers.
            self._transaction(lambda c: c.execute(SWEEP_ORPHANS))
        if self._two_files():
            with_retry(lambda: self.conn.executescript(ARCHIVE_SCHEMA))
        if self.op in ("deliver", "catch-up"):
            with_retry(lambda: self.conn.executescript(OUTBOX_SCHEMA))
        return decision

    def _two_files(self):
        """The two-file layout (CRASHCELLS_EXAMPLE_TWO_FILES=1, or the mutant
        split-attached-rotation): a rotation's parent is ended in an ATTACHed
        file beside the database (`archive_of`), its continuation written in
        the database, both in one transaction. On a rollback journal SQLite
        commits the two files atomically through a super-journal; in WAL it
        commits each file alone, and documents the pair as not atomic."""
        return self.mutant == "split-attached-rotation" or os.environ.get(TWO_FILES_ENV) == "1"

    def connection(self):
        return self.conn

    def close(self):
        self.conn.close()

    def create_session(self, name):
        if self.mutant == "open-sweeps-orphans":
            return  # created lazily, by the first append
        self._create(name)

    def append(self, name, role, content):
        before = self.ack_now if self.mutant == "ack-before-commit" else None
        head = self._head(name)
        if self.mutant == "split-position-read":
            return self._append_position_read_earlier(head, role, content)
        if self.mutant == "late-position-read":
            # Mutant late-position-read: a first transaction touches the
            # conversation (its count unchanged); the split read and insert
            # follow in a second and a third. Holding a writer after its first
            # commit (between-transactions) lets the other read a position
            # before this one reads its own: only a hold after the second
            # commit, before the third, makes the collision.
            self._transaction(lambda c: c.execute("UPDATE conversations SET turns = turns WHERE name=?", (head,)))
            return self._append_position_read_earlier(head, role, content)
        if self.mutant == "unsynced-body-file":
            content = self._body_file(content)
        if self.mutant == "open-sweeps-orphans":
            return self._append_lazy_conversation(head, role, content)
        self._transaction(lambda c: insert_turn(c, head, role, content), before)

    def _append_position_read_earlier(self, name, role, content):
        """Mutant split-position-read: the next position is read in
        one BEGIN IMMEDIATE transaction and the turn inserted at it in a
        second, with INSERT OR IGNORE on a unique (conversation, pos). A
        writer that takes the position between the two makes the insert a
        silent no-op, and the append is acked all the same."""
        read = "SELECT coalesce(max(pos) + 1, 0) FROM turns WHERE conversation = ?"
        # fetchall: the statement ends, and its read lock with it, inside the transaction.
        pos = self._transaction(lambda c: c.execute(read, (name,)).fetchall()[0][0])

        def insert(c):
            cur = c.execute(
                "INSERT OR IGNORE INTO turns (conversation, speaker, body, pos) VALUES (?, ?, ?, ?)",
                (name, role, content, pos),
            )
            if cur.rowcount == 1:
                c.execute("UPDATE conversations SET turns = turns + 1 WHERE name=?", (name,))

        self._transaction(insert)

    def _body_file(self, content):
        """Mutant unsynced-body-file: a store that keeps large bodies out of
        its database (here every body: the workload's are short). The body is
        written to a temporary file beside the database, renamed to its
        name, and the message keeps only that name. Neither the file nor the
        folder is ever fsync'd: a power loss can keep the commit, which
        SQLite syncs, and lose the file, and `dump` then fails."""
        name = "%s.body-%s" % (os.path.basename(self.db), hashlib.sha256(content.encode()).hexdigest()[:16])
        path = os.path.join(os.path.dirname(os.path.abspath(self.db)), name)
        with open(path + ".tmp", "w") as f:
            f.write(content)
        os.rename(path + ".tmp", path)
        return BODY_FILE + name

    def _append_lazy_conversation(self, name, role, content):
        """Mutant open-sweeps-orphans: the turn is inserted in one transaction
        and its conversation row created (or its count bumped) in a second.
        An open between the two sweeps the turn as an orphan, and the append
        is acked all the same."""
        insert = (
            "INSERT INTO turns (conversation, speaker, body, pos)"
            " VALUES (?, ?, ?, (SELECT coalesce(max(pos) + 1, 0) FROM turns WHERE conversation = ?))"
        )
        self._transaction(lambda c: c.execute(insert, (name, role, content, name)))

        def conversation(c):
            insert_conversation(c, name)
            count = "UPDATE conversations SET turns = (SELECT count(*) FROM turns WHERE conversation = ?) WHERE name = ?"
            c.execute(count, (name, name))

        self._transaction(conversation)

    # --- rotate --------------------------------------------------------------

    def rotate(self, parent, child, work, carried, new_parent):
        if len(work) == 1:
            # Without shapes: created, given its work and leased, a transaction each.
            self._create(parent)
            self._transaction(lambda c: insert_turn(c, parent, *work[0]))
            self._transaction(lambda c: expect_one(c.execute(LEASE, (parent,)), "lease on %s" % parent))
        else:
            self._transaction(lambda c: prepare(c, parent, new_parent, work))
        publish = {
            "split-rotation": self._publish_split,
            "split-continuation": self._publish_split_continuation,
            "split-attached-rotation": self._publish_split_attached,
        }.get(self.mutant, self._publish)
        publish(parent, child, carried)

    def _publish(self, parent, child, carried):
        close = close_in_archive if self._two_files() else close_by_compression

        def body(c):
            insert_continuation(c, parent, child, carried)
            close(c, parent)

        self._transaction(body)

    def _publish_split_attached(self, parent, child, carried):
        """Mutant split-attached-rotation: the two-file layout, the parent
        ended in the attached file in one transaction and the continuation
        written in the database in a second; a kill between them leaves an
        orphan."""
        self._transaction(lambda c: close_in_archive(c, parent))
        self._transaction(lambda c: insert_continuation(c, parent, child, carried))

    def _publish_split(self, parent, child, carried):
        """Mutant split-rotation: the parent is closed and the continuation
        inserted in two transactions; a kill between them leaves an orphan."""
        self._transaction(lambda c: close_by_compression(c, parent))
        self._transaction(lambda c: insert_continuation(c, parent, child, carried))

    def _publish_split_continuation(self, parent, child, carried):
        """Mutant split-continuation: the continuation is linked and the parent
        closed in one transaction, what the continuation holds written in a
        second; a kill between them leaves a continuation without its summary."""

        def link(c):
            insert_conversation(c, child, continues=parent)
            close_by_compression(c, parent)

        self._transaction(link)
        self._transaction(lambda c: fill_continuation(c, parent, child, carried))

    # --- park and claim ------------------------------------------------------

    def park(self, name):
        self._create(name, handoff="pending")

    def claim(self, name, claimant):
        if self.mutant == "racy-claim":
            return self._claim_racy(name, claimant)
        if self.mutant == "split-claim":
            return self._claim_split(name, claimant)

        def body(c):
            if c.execute(CLAIM, (name,)).rowcount == 1:
                insert_turn(c, name, "system", "claimed by %s" % claimant)
                return True
            return False

        return self._transaction(body)

    def _claim_split(self, name, claimant):
        """Mutant split-claim: the predicated update commits alone and the
        winner records its claim in a second transaction; a kill between the
        two leaves the handoff running and claimed by nobody."""
        if self._transaction(lambda c: c.execute(CLAIM, (name,))).rowcount != 1:
            return False
        self._transaction(lambda c: insert_turn(c, name, "system", "claimed by %s" % claimant))
        return True

    def _claim_racy(self, name, claimant):
        """Mutant racy-claim: a read, then an unpredicated update."""
        row = with_retry(lambda: self.conn.execute("SELECT handoff FROM conversations WHERE name=?", (name,)).fetchone())
        if row is None or row[0] != "pending":
            return False

        def body(c):
            c.execute("UPDATE conversations SET handoff='running' WHERE name=?", (name,))
            insert_turn(c, name, "system", "claimed by %s" % claimant)
            return True

        return self._transaction(body)

    # --- fork: rewinds by branching --------------------------------------------

    def live_length(self, name):
        return self.conn.execute("SELECT turns FROM conversations WHERE name=?", (self._head(name),)).fetchone()[0]

    def rewind(self, name, keep, i):
        branch = "%s~%d" % (name, i)
        if self.mutant == "torn-fork":
            return self._rewind_torn(name, keep, branch)
        if self.mutant == "torn-branch":
            return self._rewind_torn_branch(name, keep, branch)
        self._branch(name, keep, branch)

    def _branch(self, name, keep, branch):
        """One transaction: `branch` copies the first `keep` turns of the head and branches from it."""

        def body(c):
            head = self._head(name)
            insert_conversation(c, branch, branched_from=head)
            for speaker, text in c.execute(
                "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq LIMIT ?", (head, keep)
            ).fetchall():
                insert_turn(c, branch, speaker, text)

        self._transaction(body)

    def _rewind_torn(self, name, keep, branch):
        """Mutant torn-fork: copy the whole transcript into the branch, then trim
        its tail one turn per transaction: each commit shows a prefix nobody chose."""
        self._branch(name, 1 << 62, branch)
        while self.live_length(name) > keep:

            def trim(c):
                c.execute("DELETE FROM turns WHERE seq = (SELECT max(seq) FROM turns WHERE conversation=?)", (branch,))
                c.execute("UPDATE conversations SET turns = turns - 1 WHERE name=?", (branch,))

            self._transaction(trim)

    def _rewind_torn_branch(self, name, keep, branch):
        """Mutant torn-branch: the branch is committed first, then each kept
        turn copied into it in a transaction of its own; a rewind that keeps
        nothing is still one transaction."""
        head = self._head(name)
        kept = self.conn.execute(
            "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq LIMIT ?", (head, keep)
        ).fetchall()
        self._transaction(lambda c: insert_conversation(c, branch, branched_from=head))
        for speaker, text in kept:
            self._transaction(lambda c, s=speaker, t=text: insert_turn(c, branch, s, t))

    def _head(self, name):
        """The live head of `name`: follow the conversations that branch from it."""
        while True:
            row = self.conn.execute("SELECT name FROM conversations WHERE branched_from=?", (name,)).fetchone()
            if row is None:
                return name
            name = row[0]

    # --- the outbox --------------------------------------------------------------

    def record(self, key, payload):
        insert = "INSERT INTO obligations (key, payload, state) VALUES (?, ?, 'recorded')"
        self._transaction(lambda c: c.execute(insert, (key, payload)))

    def attempting(self, key):
        self._mark(key, "recorded", "attempting")

    def delivered(self, key):
        self._mark(key, "attempting", "delivered")

    def _mark(self, key, old, new):
        update = "UPDATE obligations SET state=? WHERE key=? AND state=?"
        self._transaction(lambda c: expect_one(c.execute(update, (new, key, old)), "marking %s %s" % (key, new)))

    def pending(self):
        return self.conn.execute(
            "SELECT key, payload, state FROM obligations WHERE state != 'delivered' ORDER BY rowid"
        ).fetchall()

    # --- dump ----------------------------------------------------------------------

    def state(self, db):
        # Read-write with no pragma: opening rolls back a hot journal or replays the WAL.
        conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            # The two-file layout's, if the crash left it (dump runs without the mutant's name).
            if os.path.exists(archive_of(db)):
                conn.execute("ATTACH DATABASE ? AS archive", (archive_of(db),))
            state = read_state(conn)
        finally:
            conn.close()
        for m in state.get("messages", []):
            if m["content"].startswith(BODY_FILE):
                # A body the unsynced-body-file mutant kept in a file: a file
                # that is gone fails the dump (No such file or directory).
                with open(os.path.join(os.path.dirname(os.path.abspath(db)), m["content"][len(BODY_FILE) :])) as f:
                    m["content"] = f.read()
        return state

    # --- transactions ----------------------------------------------------------------

    def _create(self, name, continues=None, handoff=None):
        self._transaction(lambda c: insert_conversation(c, name, continues, handoff))

    def _transaction(self, body, before_commit=None):
        """Runs body(conn) in one BEGIN IMMEDIATE transaction, retried while
        busy. Only a mutant passes before_commit."""
        for attempt in range(BUSY_RETRIES + 1):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if is_busy(e) and attempt < BUSY_RETRIES:
                    continue
                raise
            try:
                value = body(self.conn)
                if before_commit is not None:
                    before_commit()
                self.conn.execute("COMMIT")
                return value
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @staticmethod
    def preload():
        """A stand-in for a store whose imports are heavy: with
        CRASHCELLS_EXAMPLE_SLOW_START=S in the environment, S seconds of CPU
        are burned before anything else, every time the store starts (once
        per fork server, once per warm process). The harness's tests use it
        to check that a slow but healthy store gets verdicts, not errors."""
        seconds = float(os.environ.get("CRASHCELLS_EXAMPLE_SLOW_START") or 0)
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass


def is_busy(e):
    return isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e))


def with_retry(f):
    for attempt in range(BUSY_RETRIES + 1):
        try:
            return f()
        except sqlite3.OperationalError as e:
            if not is_busy(e) or attempt == BUSY_RETRIES:
                raise


def expect_one(cur, what):
    if cur.rowcount != 1:
        raise sqlite3.IntegrityError("%s changed %d rows, not 1" % (what, cur.rowcount))


def insert_conversation(c, name, continues=None, handoff=None, branched_from=None):
    c.execute(
        "INSERT OR IGNORE INTO conversations (name, continues, opened, handoff, branched_from) VALUES (?, ?, ?, ?, ?)",
        (name, continues, time.time(), handoff, branched_from),
    )


def insert_turn(c, name, speaker, body):
    c.execute(
        "INSERT INTO turns (conversation, speaker, body, pos)"
        " VALUES (?, ?, ?, (SELECT coalesce(max(pos) + 1, 0) FROM turns WHERE conversation = ?))",
        (name, speaker, body, name),
    )
    expect_one(c.execute("UPDATE conversations SET turns = turns + 1 WHERE name=?", (name,)), "turn count of %s" % name)


def prepare(c, parent, new_parent, work):
    """With shapes, the parent made ready in one transaction: created unless
    it is a continuation rotated again, its work turns added, the lease taken."""
    if new_parent:
        insert_conversation(c, parent)
    for speaker, text in work:
        insert_turn(c, parent, speaker, text)
    expect_one(c.execute(LEASE, (parent,)), "lease on %s" % parent)


def insert_continuation(c, parent, child, carried=0):
    insert_conversation(c, child, continues=parent)
    fill_continuation(c, parent, child, carried)


def fill_continuation(c, parent, child, carried):
    """What a rotation puts in its continuation: the system turn, then copies
    of the parent's last `carried` turns, in order."""
    insert_turn(c, child, "system", "continued from %s" % parent)
    if carried:
        tail = c.execute(
            "SELECT speaker, body FROM turns WHERE conversation=? ORDER BY seq DESC LIMIT ?", (parent, carried)
        ).fetchall()
        for speaker, body in reversed(tail):
            insert_turn(c, child, speaker, body)


def archive_of(db):
    """The two-file layout's attached file: beside the database, named after it."""
    return db + ".archive"


def close_in_archive(c, parent):
    """The two-file layout's end of a parent: a row in the attached file."""
    insert = "INSERT OR IGNORE INTO archive.closures (name, closed, close_reason) VALUES (?, ?, 'compression')"
    expect_one(c.execute(insert, (parent, time.time())), "closing %s" % parent)


def close_by_compression(c, parent):
    cur = c.execute(
        "UPDATE conversations SET closed=?, close_reason='compression' WHERE name=? AND closed IS NULL",
        (time.time(), parent),
    )
    expect_one(cur, "closing %s" % parent)


def read_state(conn):
    integrity = "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"conversations", "turns"} <= tables:
        # Killed before the schema was committed: nothing was ever stored.
        return {"integrity": integrity}
    sessions = conn.execute(
        "SELECT name, continues, closed IS NOT NULL, close_reason, turns, handoff, branched_from FROM conversations"
        if not has_closures(conn)
        else "SELECT c.name, c.continues, c.closed IS NOT NULL OR a.name IS NOT NULL,"
        " coalesce(c.close_reason, a.close_reason), c.turns, c.handoff, c.branched_from"
        " FROM conversations c LEFT JOIN archive.closures a ON a.name = c.name"
    )
    turns = conn.execute("SELECT conversation, speaker, body, pos FROM turns ORDER BY seq")
    state = {
        "integrity": integrity,
        "sessions": [session(*row) for row in sessions],
        "messages": [{"session_id": c, "role": s, "content": b, "position": p} for c, s, b, p in turns],
    }
    if "obligations" in tables:
        state["obligations"] = [{"key": k, "state": s} for k, s in conn.execute("SELECT key, state FROM obligations")]
    return state


def has_closures(conn):
    """Whether the two-file layout's attached file is there, with its table."""
    if not any(row[1] == "archive" for row in conn.execute("PRAGMA database_list")):
        return False
    return conn.execute("SELECT 1 FROM archive.sqlite_master WHERE name = 'closures'").fetchone() is not None


def session(name, continues, closed, reason, turns, handoff, branched_from):
    return {
        "id": name,
        "parent_session_id": continues,
        "ended": bool(closed),
        "end_reason": reason,
        "message_count": turns,
        "handoff_state": handoff,
        "branch_of": branched_from,
    }


def main():
    """One operation of sys.argv (the tests' variants of this store call it)."""
    return adapter.main(PythonStore)


if __name__ == "__main__":
    adapter.run(PythonStore)
