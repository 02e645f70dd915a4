#!/usr/bin/env python3
"""Reads a SQLite WAL file by hand, for the hand check of a fire's evidence.

Prints the WAL header, then walks the frames SQLite itself would accept on
recovery (salts equal to the header's and an unbroken checksum chain) and says
which are commit frames and what lies after the last commit: frames there were
written by a transaction that never committed, so recovery ignores them and the
kill landed inside that transaction's commit. With the main database file it
names the table or index of each such page (through the `dbstat` table, when
this SQLite has it).

Run it on a COPY of the evidence: opening the database through sqlite3 replays
and may checkpoint the WAL.

    python3 walscan.py COPY/store.db-wal [COPY/store.db]
"""

import sqlite3
import struct
import sys

WAL_HEADER = 32
FRAME_HEADER = 24


def checksum(data, s0, s1, big_endian):
    fmt = ">II" if big_endian else "<II"
    for i in range(0, len(data), 8):
        x0, x1 = struct.unpack(fmt, data[i : i + 8])
        s0 = (s0 + x0 + s1) & 0xFFFFFFFF
        s1 = (s1 + x1 + s0) & 0xFFFFFFFF
    return s0, s1


def frames(wal):
    """The valid frames: (number, page, database size if a commit frame else 0)."""
    magic, _, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", wal[:WAL_HEADER])
    big = magic == 0x377F0683
    s = checksum(wal[: WAL_HEADER - 8], 0, 0, big)
    if s != (c1, c2):
        return page_size, [], WAL_HEADER
    out, off = [], WAL_HEADER
    while off + FRAME_HEADER + page_size <= len(wal):
        page, db_size, f1, f2, k1, k2 = struct.unpack(">6I", wal[off : off + FRAME_HEADER])
        if (f1, f2) != (salt1, salt2):
            break
        s = checksum(wal[off : off + 8], *s, big)
        s = checksum(wal[off + FRAME_HEADER : off + FRAME_HEADER + page_size], *s, big)
        if s != (k1, k2):
            break
        out.append((len(out) + 1, page, db_size))
        off += FRAME_HEADER + page_size
    return page_size, out, off


def page_owners(db_path, pages):
    """Which table or index each page belongs to, from the main file alone."""
    if not db_path or not pages:
        return {}
    conn = sqlite3.connect("file:%s?mode=ro&immutable=1" % db_path, uri=True)
    try:
        marks = ",".join("?" * len(pages))
        return dict(conn.execute("SELECT pageno, name FROM dbstat WHERE pageno IN (%s)" % marks, list(pages)))
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def main():
    wal = open(sys.argv[1], "rb").read()
    page_size, valid, end = frames(wal)
    seq = struct.unpack(">I", wal[12:16])[0] if len(wal) >= 16 else None
    commits = [n for n, _, size in valid if size]
    last = commits[-1] if commits else 0
    tail = [(n, page) for n, page, _ in valid if n > last]
    print("WAL: %d bytes, page size %d, checkpoint sequence %s" % (len(wal), page_size, seq))
    print("valid frames: %d, commit frames: %d, last commit at frame %d" % (len(valid), len(commits), last))
    print("bytes after the valid chain (an older WAL generation): %d" % (len(wal) - end))
    if last:
        n, page, size = valid[last - 1]
        print("last committed frame: %d (page %d, database %d pages)" % (n, page, size))
    owners = page_owners(sys.argv[2] if len(sys.argv) > 2 else None, {p for _, p in tail})
    print("uncommitted frames after it: %d" % len(tail))
    for n, page in tail:
        print("  frame %d: page %d %s" % (n, page, owners.get(page, "")))


if __name__ == "__main__":
    main()
