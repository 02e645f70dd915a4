// A small session store in Go behind crashcells, on the adapter library
// (sdk/go): its own schema (threads, posts, effects), Debian's SQLite driver.
//
// Crash model: SIGKILL at any instant. Every method below that changes what
// `dump` shows is ONE `BEGIN IMMEDIATE` transaction (the DSN's
// _txlock=immediate), so a kill leaves each step whole or absent; the
// library writes each ack only after the method returned. A rewind
// soft-deletes (posts.hidden), where the Python example branches.
//
// Its mutants: racy-claim breaks consume-once (cell 2): the claim reads the
// lease in one statement and takes it in a later transaction without the
// `pending` predicate, so two claimants that both read `pending` both win.
// position-read-outside-txn breaks concurrent-appends (cell 6): a writer
// of co-append reads its thread's next place before its transaction, so
// two writers that read together take one place.
package main

import (
	"database/sql"
	"fmt"

	"crashcells/sdk/go/adapter"
	_ "github.com/mattn/go-sqlite3"
)

const schema = `
CREATE TABLE IF NOT EXISTS threads (
    tid TEXT PRIMARY KEY,
    continues TEXT,
    closed_why TEXT,
    n_posts INTEGER NOT NULL DEFAULT 0,
    lease TEXT,
    forked_from TEXT
);
CREATE TABLE IF NOT EXISTS posts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tid TEXT NOT NULL,
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0,
    -- The post's place in its thread, from 0, numbered inside the
    -- transaction that inserts it: dump reports it as position.
    pos INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS effects (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    stage TEXT NOT NULL
);`

// Threads is the store: one connection, every write its own transaction.
type Threads struct {
	adapter.Base
	db *sql.DB
}

func main() {
	adapter.Run(func() adapter.Store { return &Threads{} })
}

// Preload initializes the SQLite library ahead of need, on an in-memory
// database (no file: nothing an operation uses), so a warm process
// (docs/PROTOCOL.md §10) has it ready. A Go binary starts in milliseconds,
// so the pool saves little here; it keeps the warm path under CI.
func (t *Threads) Preload() error {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}

// Mutants: racy-claim and position-read-outside-txn are the store's own; ack-before-commit acks inside the
// append's transaction (AckNow); drop-append the library implements.
func (t *Threads) Mutants() []string {
	return []string{"racy-claim", "position-read-outside-txn", "ack-before-commit", "drop-append"}
}

func (t *Threads) Open(path string, c adapter.Config) (*adapter.Resolver, error) {
	dsn := path + "?_txlock=immediate&_busy_timeout=10000"
	if c.Synchronous != "" {
		dsn += "&_sync=" + c.Synchronous
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection: its pragmas are the ones reported
	t.db = db
	var version string
	if err := db.QueryRow("SELECT sqlite_version()").Scan(&version); err != nil {
		return nil, err
	}
	r := adapter.Resolve(c, version, path)
	if _, err := db.Exec("PRAGMA journal_mode=" + r.Applied); err != nil {
		return nil, err
	}
	_, err = db.Exec(schema)
	return &r, err
}

func (t *Threads) Journal() (adapter.Journal, error) {
	var j adapter.Journal
	var sync int
	err := t.db.QueryRow("SELECT sqlite_version(), sqlite_source_id()").Scan(&j.SQLiteVersion, &j.SQLiteSourceID)
	if err == nil {
		err = t.db.QueryRow("PRAGMA journal_mode").Scan(&j.JournalMode)
	}
	if err == nil {
		err = t.db.QueryRow("PRAGMA synchronous").Scan(&sync)
	}
	j.Synchronous = adapter.SyncName(sync)
	return j, err
}

func (t *Threads) Close() error { return t.db.Close() }

// tx runs body in one transaction: committed if it returns nil, else rolled back.
func (t *Threads) tx(body func(*sql.Tx) error) error {
	tx, err := t.db.Begin()
	if err != nil {
		return err
	}
	if err := body(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// nextPos is a thread's next place. Read inside the transaction that
// inserts at it (BEGIN IMMEDIATE holds the write lock from the read on),
// two writers of co-append cannot take one place.
const nextPos = "SELECT coalesce(max(pos) + 1, 0) FROM posts WHERE tid = ?"

func post(tx *sql.Tx, tid, author, body string) error {
	var pos int64
	if err := tx.QueryRow(nextPos, tid).Scan(&pos); err != nil {
		return err
	}
	return postAt(tx, tid, author, body, pos)
}

// postAt adds a post at place pos of its thread and counts it.
func postAt(tx *sql.Tx, tid, author, body string, pos int64) error {
	if _, err := tx.Exec("INSERT OR IGNORE INTO threads (tid) VALUES (?)", tid); err != nil {
		return err
	}
	if _, err := tx.Exec("INSERT INTO posts (tid, author, body, pos) VALUES (?, ?, ?, ?)", tid, author, body, pos); err != nil {
		return err
	}
	_, err := tx.Exec("UPDATE threads SET n_posts = n_posts + 1 WHERE tid = ?", tid)
	return err
}

func (t *Threads) Append(tid, role, content string) error {
	if t.Mutant() == "position-read-outside-txn" && t.Op() == "co-append" {
		return t.racyAppend(tid, role, content)
	}
	return t.tx(func(tx *sql.Tx) error {
		if err := post(tx, tid, role, content); err != nil {
			return err
		}
		if t.Mutant() == "ack-before-commit" && t.Op() == "append" {
			return t.AckNow() // a promise made before the commit: cell 1 fires
		}
		return nil
	})
}

// racyAppend is the mutant: the next place read before the transaction
// that inserts at it, so another writer may take it meanwhile.
func (t *Threads) racyAppend(tid, role, content string) error {
	var pos int64
	if err := t.db.QueryRow(nextPos, tid).Scan(&pos); err != nil {
		return err
	}
	return t.tx(func(tx *sql.Tx) error { return postAt(tx, tid, role, content, pos) })
}

func (t *Threads) Rotate(parent, child string, work []adapter.Turn, carried int, newParent bool) error {
	err := t.tx(func(tx *sql.Tx) error {
		for _, w := range work {
			if err := post(tx, parent, w.Role, w.Content); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.tx(func(tx *sql.Tx) error {
		tail, err := lastPosts(tx, parent, carried)
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO threads (tid, continues) VALUES (?, ?)", child, parent); err != nil {
			return err
		}
		if err := post(tx, child, "system", "continued from "+parent); err != nil {
			return err
		}
		for _, p := range tail {
			if err := post(tx, child, p.Role, p.Content); err != nil {
				return err
			}
		}
		return one(tx.Exec("UPDATE threads SET closed_why = 'compression' WHERE tid = ? AND closed_why IS NULL", parent))
	})
}

// lastPosts is the last n live posts of tid, oldest first.
func lastPosts(tx *sql.Tx, tid string, n int) ([]adapter.Turn, error) {
	rows, err := tx.Query("SELECT author, body FROM (SELECT seq, author, body FROM posts WHERE tid = ? AND hidden = 0 ORDER BY seq DESC LIMIT ?) ORDER BY seq", tid, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapter.Turn
	for rows.Next() {
		var p adapter.Turn
		if err := rows.Scan(&p.Role, &p.Content); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// one: the statement changed exactly one row.
func one(r sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("expected one row changed, got %d (%v)", n, err)
	}
	return nil
}

func (t *Threads) Park(tid string) error {
	return t.tx(func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO threads (tid, lease) VALUES (?, 'pending')", tid)
		return err
	})
}

func (t *Threads) Claim(tid, claimant string) (bool, error) {
	if t.Mutant() == "racy-claim" {
		return t.racyClaim(tid, claimant)
	}
	won := false
	err := t.tx(func(tx *sql.Tx) error {
		r, err := tx.Exec("UPDATE threads SET lease = 'running' WHERE tid = ? AND lease = 'pending'", tid)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n != 1 {
			return nil
		}
		won = true
		return post(tx, tid, "system", "claimed by "+claimant)
	})
	return won, err
}

// racyClaim is the mutant: a read, then a write that does not re-check it.
func (t *Threads) racyClaim(tid, claimant string) (bool, error) {
	var lease sql.NullString
	if err := t.db.QueryRow("SELECT lease FROM threads WHERE tid = ?", tid).Scan(&lease); err != nil {
		return false, err
	}
	if lease.String != "pending" {
		return false, nil
	}
	return true, t.tx(func(tx *sql.Tx) error {
		if _, err := tx.Exec("UPDATE threads SET lease = 'running' WHERE tid = ?", tid); err != nil {
			return err
		}
		return post(tx, tid, "system", "claimed by "+claimant)
	})
}

// Rewind hides the live posts after the first keep, in one transaction.
func (t *Threads) Rewind(tid string, keep, i int) error {
	return t.tx(func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE posts SET hidden = 1 WHERE tid = ? AND hidden = 0 AND seq NOT IN
			(SELECT seq FROM posts WHERE tid = ? AND hidden = 0 ORDER BY seq LIMIT ?)`, tid, tid, keep)
		if err != nil {
			return err
		}
		return one(tx.Exec("UPDATE threads SET n_posts = ? WHERE tid = ?", keep, tid))
	})
}

func (t *Threads) LiveLength(tid string) (int, error) {
	var n int
	err := t.db.QueryRow("SELECT count(*) FROM posts WHERE tid = ? AND hidden = 0", tid).Scan(&n)
	return n, err
}

func (t *Threads) Record(key, payload string) error {
	return t.tx(func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO effects (key, payload, stage) VALUES (?, ?, 'recorded')", key, payload)
		return err
	})
}

func (t *Threads) Attempting(key string) error { return t.stage(key, "recorded", "attempting") }

func (t *Threads) Delivered(key string) error { return t.stage(key, "attempting", "delivered") }

func (t *Threads) stage(key, from, to string) error {
	return t.tx(func(tx *sql.Tx) error {
		return one(tx.Exec("UPDATE effects SET stage = ? WHERE key = ? AND stage = ?", to, key, from))
	})
}

func (t *Threads) Pending() ([]adapter.Obligation, error) {
	rows, err := t.db.Query("SELECT key, payload, stage FROM effects WHERE stage != 'delivered' ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapter.Obligation
	for rows.Next() {
		var o adapter.Obligation
		if err := rows.Scan(&o.Key, &o.Payload, &o.State); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// State reads a crash state: no journal_mode pragma (the driver's own
// connection pragmas, busy_timeout, locking_mode and synchronous, neither
// read nor write the file), so SQLite's open recovers the file as it is.
func (t *Threads) State(path string) (adapter.State, error) {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return adapter.State{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	st := adapter.State{}
	if st.Integrity, err = adapter.IntegrityCheck(db); err != nil {
		return st, err
	}
	var tables int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('threads', 'posts', 'effects')").Scan(&tables); err != nil {
		return st, err
	}
	if tables < 3 {
		return st, nil // killed before the schema committed: an empty store
	}
	if st.Sessions, err = sessions(db); err == nil {
		if st.Messages, err = messages(db); err == nil {
			st.Obligations, err = obligations(db)
		}
	}
	return st, err
}

func sessions(db *sql.DB) ([]adapter.Session, error) {
	rows, err := db.Query("SELECT tid, continues, closed_why, n_posts, lease FROM threads")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapter.Session
	for rows.Next() {
		var s adapter.Session
		var continues, closed, lease sql.NullString
		if err := rows.Scan(&s.ID, &continues, &closed, &s.MessageCount, &lease); err != nil {
			return nil, err
		}
		s.ParentSessionID, s.EndReason, s.HandoffState = continues.String, closed.String, lease.String
		s.Ended = closed.Valid
		out = append(out, s)
	}
	return out, rows.Err()
}

func messages(db *sql.DB) ([]adapter.Message, error) {
	rows, err := db.Query("SELECT tid, author, body, pos, hidden FROM posts ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapter.Message
	for rows.Next() {
		var m adapter.Message
		var pos int64
		if err := rows.Scan(&m.SessionID, &m.Role, &m.Content, &pos, &m.Inactive); err != nil {
			return nil, err
		}
		m.Position = &pos
		out = append(out, m)
	}
	return out, rows.Err()
}

func obligations(db *sql.DB) ([]adapter.Obligation, error) {
	rows, err := db.Query("SELECT key, stage FROM effects")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapter.Obligation
	for rows.Next() {
		var o adapter.Obligation
		if err := rows.Scan(&o.Key, &o.State); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
