"""A tiny adapter written from docs/PROTOCOL.md alone: no resolver, no
mutants, the smallest store that keeps protocol 1. The integration tests run
`crashcells child-check` on it; if the document leaves out something an
adapter needs, this file is where it shows."""

import fcntl, json, os, sqlite3, sys

MODES = ("delete", "truncate", "persist", "memory", "wal", "off")


def flags(argv):
    return {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2)}


def config():
    path = os.path.join(os.environ.get("CRASHCELLS_HOME", "/nonexistent"), "config.toml")
    if not os.path.exists(path):
        return {}
    out = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line or line == "[database]":
            continue
        key, _, value = (p.strip() for p in line.partition("="))
        value = value.strip('"')
        known = MODES if key == "journal_mode" else ("off", "normal", "full", "extra") if key == "synchronous" else ()
        if value not in known:
            sys.exit("tiny: bad config line: %s" % line)
        out[key] = value
    return out


def open_store(db):
    cfg = config()
    conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    if "journal_mode" in cfg:
        conn.execute("PRAGMA journal_mode=" + cfg["journal_mode"]).fetchone()
    if "synchronous" in cfg:
        conn.execute("PRAGMA synchronous=" + cfg["synchronous"])
    conn.execute("CREATE TABLE IF NOT EXISTS s (id TEXT PRIMARY KEY, parent TEXT, ended INT DEFAULT 0, reason TEXT, n INT DEFAULT 0, state TEXT)")
    conn.execute("CREATE TABLE IF NOT EXISTS m (k INTEGER PRIMARY KEY AUTOINCREMENT, sid TEXT, role TEXT, body TEXT)")
    return conn


def tx(conn, *statements):
    conn.execute("BEGIN IMMEDIATE")
    rows = [conn.execute(sql, args).rowcount for sql, args in statements]
    conn.execute("COMMIT")
    return rows


def msg(sid, role, body):
    return [("INSERT INTO m (sid, role, body) VALUES (?, ?, ?)", (sid, role, body)), ("UPDATE s SET n = n + 1 WHERE id = ?", (sid,))]


def journal(path, conn, op):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0].lower()

    def put(rec):
        line = (json.dumps(rec) + "\n").encode()
        assert os.write(fd, line) == len(line)

    put({"kind": "ready", "protocol": 1, "pid": os.getpid(), "op": op, "sqlite_version": sqlite3.sqlite_version, "journal_mode": mode})
    return put


def main(op, f):
    if op == "dump":
        if not os.path.isfile(f["db"]):
            sys.exit("tiny: no database at " + f["db"])
        conn = sqlite3.connect(f["db"], timeout=10)
        integrity = "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
        sessions = [dict(zip(("id", "parent_session_id", "ended", "end_reason", "message_count", "handoff_state"), (r[0], r[1], bool(r[2]), r[3], r[4], r[5])))
                    for r in conn.execute("SELECT id, parent, ended, reason, n, state FROM s ORDER BY id")]
        messages = [dict(zip(("session_id", "role", "content"), r)) for r in conn.execute("SELECT sid, role, body FROM m ORDER BY k")]
        print(json.dumps({"protocol": 1, "integrity": integrity, "sessions": sessions, "messages": messages}, separators=(",", ":"), ensure_ascii=False))
        return 0
    if "mutant" in f:
        sys.exit("tiny: no mutants here")
    conn = open_store(f["db"])
    if op == "park":
        tx(conn, ("INSERT INTO s (id, state) VALUES (?, 'pending')", (f["session"],)))
        return 0
    if op == "claim":
        barrier = open(f["barrier"])
        put = journal(f["acks"], conn, op)
        fcntl.flock(barrier, fcntl.LOCK_SH)
        conn.execute("BEGIN IMMEDIATE")
        won = conn.execute("UPDATE s SET state = 'running' WHERE id = ? AND state = 'pending'", (f["session"],)).rowcount == 1
        if won:
            for sql, args in msg(f["session"], "system", "claimed by " + f["claimant"]):
                conn.execute(sql, args)
        conn.execute("COMMIT")
        put({"kind": "ack", "op": "claim", "i": 0})
        return 0 if won else 10
    if op == "append":
        tx(conn, ("INSERT OR IGNORE INTO s (id) VALUES ('main')", ()))
    put = journal(f["acks"], conn, op)
    i, stop = 0, int(f.get("stop-after", -1))
    while i != stop:
        if op == "append":
            tx(conn, *msg("main", "user", "m%d" % i))
            put({"kind": "ack", "op": "append", "i": i})
        else:
            p, c = "p%d" % i, "c%d" % i
            tx(conn, ("INSERT INTO s (id) VALUES (?)", (p,)))
            tx(conn, ("INSERT INTO s (id, parent) VALUES (?, ?)", (c, p)), *msg(c, "system", "from " + p),
               ("UPDATE s SET ended = 1, reason = 'compression' WHERE id = ?", (p,)))
            put({"kind": "ack", "op": "rotate", "i": i, "parent": p, "child": c})
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], flags(sys.argv[2:])))
