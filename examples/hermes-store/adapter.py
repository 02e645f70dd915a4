#!/usr/bin/env python3
"""The Hermes agent's real `SessionDB` (hermes_state.py, hermes-agent 0.19.0)
behind the crashcells child protocol (docs/PROTOCOL.md), on the Python
adapter library (`crashcells.adapter`, sdk/python; sdk/API.md).

An integration, not a re-implementation: every write goes through
SessionDB's public methods (own connection, `_execute_write` transactions,
journal mode) or the gateway's delivery ledger; nothing in Hermes is patched.
Where Hermes spends more transactions than the protocol asks, the adapter does
what Hermes does and lets the cell judge; the library runs the protocol.

Crash model: SIGKILL at any instant. The library acks only after the method
that made the writes returned, so after Hermes committed them.

The wheel comes from `./fetch`, unpacked into `.wheel/site/` next to this file.

Run as: python3 adapter.py <append|rotate|park|claim|fork|deliver|catch-up|dump> [flags],
or python3 adapter.py fork-server (docs/PROTOCOL.md, "Fork server").
"""

import os
import sqlite3
import sys
import types
from pathlib import Path

# The library of this checkout first (an installed one may be older).
_sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "sdk", "python")
if os.path.isdir(os.path.join(_sdk, "crashcells")):
    sys.path.insert(0, _sdk)
from crashcells import adapter, config, journal, workload  # noqa: E402

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".wheel", "site")
# Written by ./fetch once the wheel is verified, unpacked and compiled.
SITE_STAMP = os.path.join(SITE, ".complete")
# What the sessions are tagged with (Hermes's `source` column).
SOURCE = "cli"
MODEL = "crashcells-adapter"
# The platform a parked handoff is headed for (request_handoff's argument).
HANDOFF_PLATFORM = "telegram"
# state_meta key where the winner of a handoff leaves its name (see `claim`).
CLAIMANT_KEY = "crashcells.handoff_claimant:"
# Where `deliver`'s obligations are headed, as the gateway records them:
# the driver's transport file stands for this platform and chat.
LEDGER_PLATFORM = "crashcells"
LEDGER_CHAT = "transport"
LEDGER_SESSION_KEY = "agent:main:crashcells:dm:transport"
# The folder, beside the database, that serves as the ledger's HERMES_HOME.
LEDGER_HOME_SUFFIX = ".hermes-home"


class HermesStore(adapter.Store):
    # Hermes's failures, the wheel's absence included, are the store's: exit 3.
    store_errors = (OSError, ImportError, RuntimeError, ValueError, sqlite3.Error)
    # A fork server, not a warm pool (examples/hermes-store/ci-check expects so).
    launchers = ("fork-server",)

    @staticmethod
    def preload():
        """hermes_state and the ledger, once. Neither opens anything at import,
        so a forked process starts fresh. A missing wheel: `open` says so, exit 3."""
        try:
            _import_hermes()
            import_ledger()
        except (ImportError, RuntimeError):
            pass

    def open(self, db, cfg):
        if self.op in ("deliver", "catch-up"):
            _ledger_home(db)
        self.hs = _import_hermes()
        self.ledger = import_ledger() if self.op in ("deliver", "catch-up") else None
        # SessionDB.__init__ connects, applies WAL (apply_wal_with_fallback),
        # turns on foreign keys and creates or reconciles its schema.
        self.db = self.hs.SessionDB(db_path=Path(db))
        return self._resolver(cfg)

    def _resolver(self, cfg):
        """Hermes has no journal-mode setting: apply_wal_with_fallback sets WAL
        on every open (DELETE where the filesystem refuses WAL), and it never
        sets `synchronous` off macOS. The config is reported as asked, next to
        what the store did; the driver skips a leg asking otherwise."""
        info = self.journal()
        mode = info["journal_mode"]
        if mode not in config.JOURNAL_MODES:
            return None
        if mode == "wal":
            why = "Hermes's SessionDB sets journal_mode=WAL on every open (hermes_state.apply_wal_with_fallback), whatever is asked"
        else:
            why = "Hermes's SessionDB asks for WAL on every open; apply_wal_with_fallback fell back to %s here" % mode
        if cfg.journal_mode is not None:
            why += "; the config asked for %s" % cfg.journal_mode
        if cfg.synchronous is not None:
            why += "; Hermes never sets synchronous, which runs at SQLite's default (%s)" % info["synchronous"]
        return {
            "requested": cfg.journal_mode,
            "applied": mode,
            "synchronous": cfg.synchronous,
            "decided_by": "hermes-wal-on-open",
            "reason": why,
        }

    def journal(self):
        """What SessionDB's connection reports, its mode read with Hermes's own
        probe (a read of PRAGMA journal_mode, no assignment)."""
        info = workload.journal_of(self.db._conn)
        info["journal_mode"] = self.hs._on_disk_journal_mode(self.db._conn) or "unknown"
        return info

    # --- append and fork -----------------------------------------------------------

    def create_session(self, session):
        self.db.create_session(session, SOURCE)

    def append(self, session, role, content):
        """One append_message: one _execute_write transaction that inserts the
        row and bumps sessions.message_count."""
        self.db.append_message(session, role, content)

    def live_length(self, session):
        # The live transcript is what get_messages loads: the active rows.
        return len(self.db.get_messages(session))

    def rewind(self, session, keep, i):
        """Hermes's /rewind: rewind_to_message(id of the (keep+1)-th live
        message) soft-deletes it and every later active row in one
        _execute_write (message_count stays; cell 4 does not read it)."""
        live = self.db.get_messages(session)
        self.db.rewind_to_message(session, live[keep]["id"])

    # --- rotate ----------------------------------------------------------------------

    def rotate(self, parent, child, work, carried, new_parent):
        """A compression with rotation as `compress_context` does it with
        `compression.in_place` off, call for call: the session, the lease,
        the turn's messages flushed to the old session, the title read,
        `_publish`, the lease released. The tail carried is read back with
        get_messages (Hermes's `protect_last_n`)."""
        if new_parent:
            self.db.create_session(parent, SOURCE, model=MODEL)
        holder = "pid=%d:crashcells:rotate=%s" % (os.getpid(), child)
        if not self.db.try_acquire_compression_lock(parent, holder, ttl_seconds=300.0):
            raise RuntimeError("could not take the compression lock on %s" % parent)
        try:
            for role, content in work:
                self.db.append_message(parent, role, content)
            held = self.db.get_messages(parent)
            tail = held[len(held) - carried :] if carried else []
            self.db.get_session_title(parent)
            compressed = [{"role": "system", "content": "continued from %s" % parent}]
            compressed += [{"role": m["role"], "content": m["content"]} for m in tail]
            self._publish(parent, child, compressed)
        finally:
            self.db.release_compression_lock(parent, holder)

    def _publish(self, parent, child, compressed):
        """FOUR transactions, not one: a kill between them leaves a parent
        ended without its continuation, or a continuation without its summary.
        That is Hermes's behaviour and cell 3's finding."""
        self.db.end_session(parent, "compression")
        self.db.create_session(child, SOURCE, model=MODEL, parent_session_id=parent)
        self.db.update_system_prompt(child, "You are a crashcells probe (continuation of %s)." % parent)
        self.db.replace_messages(child, compressed)

    # --- park and claim ----------------------------------------------------------------

    def park(self, session):
        """create_session, then request_handoff (park is never killed)."""
        self.db.create_session(session, SOURCE)
        if not self.db.request_handoff(session, HANDOFF_PLATFORM):
            raise RuntimeError("request_handoff(%s) found no session to park or one already in flight" % session)

    def claim(self, session, claimant):
        """claim_handoff: one predicated UPDATE. Hermes records no claimant,
        so the winner leaves its name with set_meta, a second transaction: a
        kill between loses the name (`claimed by (unnamed)`), not the claim."""
        won = bool(self.db.claim_handoff(session))
        if won:
            self.db.set_meta(CLAIMANT_KEY + session, claimant)
        return won

    # --- deliver and catch-up: the gateway's delivery ledger ----------------------------

    def record(self, key, payload):
        """record_obligation (then `_prune`), each ledger call on a connection
        and in a transaction of its own; the id is the protocol's key."""
        self.ledger.record_obligation(
            obligation_id=key,
            session_key=LEDGER_SESSION_KEY,
            platform=LEDGER_PLATFORM,
            chat_id=LEDGER_CHAT,
            thread_id=None,
            content=payload,
        )

    def attempting(self, key):
        self.ledger.mark_attempting(key)

    def delivered(self, key):
        self.ledger.mark_delivered(key)

    def pending(self):
        rows = self.db._conn.execute(
            "SELECT obligation_id, content, state FROM delivery_obligations WHERE state != 'delivered' ORDER BY rowid"
        )
        return [(key, content, "recorded" if st == "pending" else "attempting") for key, content, st in rows]

    def _restart(self, transport):
        """The gateway's `_redeliver_pending_obligations`: sweep_recoverable
        claims the rows a dead owner left, each is sent (RECOVERED_MARKER in
        front unless it was `pending`) and marked delivered. Hermes never asks
        the platform whether an `attempting` row arrived (at-least-once): cell
        5's finding. Hence `catch-up` runs this, not the library's rule."""
        claimed = self.ledger.sweep_recoverable(None, deliverable_platforms={LEDGER_PLATFORM})
        failed = []
        for row in claimed:
            key, content = row["obligation_id"], row["content"]
            if row.get("needs_marker"):
                content = self.ledger.RECOVERED_MARKER + content
            try:
                journal.send(transport, key, content)
            except OSError as e:
                self.ledger.mark_failed(key, str(e))
                failed.append("%s (%s)" % (key, e))
                continue
            self.ledger.mark_delivered(key)
        if failed:
            raise RuntimeError("could not redeliver %s" % ", ".join(failed))

    # --- dump ------------------------------------------------------------------------------

    def state(self, db):
        """Hermes's schema with the standard sqlite3 module, no pragma
        (SessionDB's __init__ would set WAL). message_count is Hermes's own
        counter, not recounted (cell 1 sees one that disagrees); messages in
        id order, soft-deleted ones inactive, then a derived `claimed by
        <name>` per claimed handoff; ledger states mapped to the protocol's
        (failed and abandoned were never known delivered: attempting). A file
        killed before the schema was committed is the empty store."""
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            integrity = "; ".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"sessions", "messages"} <= tables:
                return {"integrity": integrity}
            return dict(_read(conn, tables), integrity=integrity)
        finally:
            conn.close()


SESSIONS_SQL = (
    "SELECT id, parent_session_id, ended_at IS NOT NULL, end_reason, message_count, handoff_state "
    "FROM sessions ORDER BY id"
)
MESSAGES_SQL = "SELECT session_id, role, content, active FROM messages ORDER BY id"
OUTBOX_SQL = "SELECT obligation_id, state FROM delivery_obligations ORDER BY obligation_id"
OUTBOX_STATES = {"pending": "recorded", "attempting": "attempting", "failed": "attempting",
                 "abandoned": "attempting", "delivered": "delivered"}
CLAIMED_STATES = ("running", "completed", "failed")
SESSION_KEYS = ("id", "parent_session_id", "ended", "end_reason", "message_count", "handoff_state")


def _read(conn, tables):
    sessions = [dict(zip(SESSION_KEYS, row), ended=bool(row[2])) for row in conn.execute(SESSIONS_SQL)]
    messages = [
        {"session_id": sid, "role": role, "content": content, "active": bool(active)}
        for sid, role, content, active in conn.execute(MESSAGES_SQL)
    ]
    names = {}
    if "state_meta" in tables:
        rows = conn.execute("SELECT key, value FROM state_meta WHERE substr(key, 1, ?) = ?", (len(CLAIMANT_KEY), CLAIMANT_KEY))
        names = {key[len(CLAIMANT_KEY) :]: value for key, value in rows}
    for s in sessions:
        if s["handoff_state"] in CLAIMED_STATES:
            name = names.get(s["id"], "(unnamed)")
            messages.append({"session_id": s["id"], "role": "system", "content": "claimed by %s" % name})
    obligations = []
    if "delivery_obligations" in tables:
        for key, st in conn.execute(OUTBOX_SQL):
            if st not in OUTBOX_STATES:
                raise ValueError("delivery_obligations has a row in state %r, which this adapter does not know" % st)
            obligations.append({"key": key, "state": OUTBOX_STATES[st]})
    return {"sessions": sessions, "messages": messages, "obligations": obligations}


def _catch_up(s):
    """`catch-up` (and its batch): each store's restart in turn, Hermes's way;
    the ledger reads HERMES_HOME on every call, so `open` re-points it."""
    for db, transport in zip(s.flags["db"], s.flags["transport"]):
        store = s.open(db)
        workload.call(store, "_restart", transport)
        workload.close(store)
    return 0


workload.OPERATIONS["catch-up"] = _catch_up


def _import_hermes():
    """hermes_state from the unpacked wheel."""
    if not os.path.isfile(SITE_STAMP):
        raise RuntimeError("no unpacked hermes-agent wheel at %s: run examples/hermes-store/fetch first" % SITE)
    if SITE not in sys.path:
        sys.path.insert(0, SITE)
    import hermes_state

    return hermes_state


def _ledger_home(db):
    """The ledger connects to `$HERMES_HOME/state.db`: a home `<db>.hermes-home/`
    whose `state.db` is a relative link to the database, so the ledger uses
    the very file (and `-wal`) the SessionDB holds, never ~/.hermes."""
    db = os.path.abspath(db)
    home = db + LEDGER_HOME_SUFFIX
    link = os.path.join(home, "state.db")
    target = os.path.join(os.pardir, os.path.basename(db))
    os.makedirs(home, exist_ok=True)
    if not (os.path.islink(link) and os.readlink(link) == target):
        # Missing, or not our link: a copy of the folder that followed the
        # link (crashcells' evidence folders do) holds a plain file here.
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    os.environ["HERMES_HOME"] = home


def import_ledger(site=SITE):
    """gateway.delivery_ledger, standard library only: `gateway`'s __init__
    imports PyYAML, so it is a bare package on the wheel's folder. The ledger
    needs gateway.status (pid plus start time: a recycled pid fooled the pid
    alone under load), whose `utils` import serves only its status-file
    writer: a stand-in `utils` refuses to run it. `fetch` passes the folder it
    unpacks (on its sys.path already) before it stamps it."""
    if site == SITE:
        _import_hermes()
    if "gateway" not in sys.modules:
        package = types.ModuleType("gateway")
        package.__path__ = [os.path.join(site, "gateway")]
        sys.modules["gateway"] = package
    if "utils" not in sys.modules:
        stand_in = types.ModuleType("utils")

        def atomic_json_write(*args, **kwargs):
            raise RuntimeError("utils.atomic_json_write is a stand-in in this adapter: no gateway status file is written")

        stand_in.atomic_json_write = atomic_json_write
        sys.modules["utils"] = stand_in
    import gateway.delivery_ledger as ledger
    import gateway.status

    if gateway.status.get_process_start_time(os.getpid()) is None:
        raise RuntimeError("gateway.status cannot read this process's start time: the ledger would fall back to bare pids")
    return ledger


if __name__ == "__main__":
    adapter.run(HermesStore)
