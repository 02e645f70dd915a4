// A small session store on the `sqlite3` shell, written on the library: the
// tests' store with every operation (Node.js 20 has no SQLite of its own, and
// the library's tests take no dependency). Each transaction is one shell
// process, so the store owns no connection between calls: the case
// docs/adapters/node.md describes.
//
// Crash model: SIGKILL may land anywhere; each method's transaction is one
// `BEGIN IMMEDIATE ... COMMIT` script, so a step is whole or absent, and the
// library acks only after the script's process exited 0.
//
// SHELL_STORE_BREAK names a broken variant for the library's error tests:
// `misspelt` (a method `apend`), `shape` (state() without a role), `throws`
// (append throws a TypeError), `claim` (claim returns a string), `no-rotate`
// (a store without rotate), `async` and `async-nowrite` (below).

import { execFileSync } from "node:child_process";

import { Store, headerIsWal, resolve, run } from "../../index.js";

const SCHEMA = `CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, parent TEXT, ended INT NOT NULL DEFAULT 0,
  reason TEXT, n INT NOT NULL DEFAULT 0, handoff TEXT);
CREATE TABLE IF NOT EXISTS messages (k INTEGER PRIMARY KEY AUTOINCREMENT, sid TEXT, role TEXT, body TEXT, active INT NOT NULL DEFAULT 1,
  pos INT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (key TEXT PRIMARY KEY, payload TEXT, state TEXT);`;

/** A failure of the shell (busy, I/O, corrupt): the store's own. */
class SqlError extends Error {}

const q = (text) => `'${String(text).replaceAll("'", "''")}'`;
// The session's next place, read inside the transaction that inserts at it
// (two writers of co-append must not take one place): dump's `position`.
const next = (session) => `(SELECT coalesce(max(pos) + 1, 0) FROM messages WHERE sid = ${q(session)})`;

export class ShellStore extends Store {
  static mutants = ["drop-append", "stall", "resend-on-catch-up"];
  static storeErrors = [SqlError];

  open(db, config) {
    this.db = db;
    this.version = execFileSync("sqlite3", ["--version"], { encoding: "utf8" }).split(" ")[0];
    const decision = resolve(config, this.version, headerIsWal(db));
    // Every shell process is a new connection: each applies the mode and level.
    this.pragmas = `PRAGMA journal_mode=${decision.applied};\n` + (config.synchronous ? `PRAGMA synchronous=${config.synchronous};\n` : "");
    this._tx(SCHEMA);
    return decision;
  }

  journal() {
    const [r] = this._rows(`${this._quiet()}SELECT sqlite_source_id() AS s;`);
    const [mode] = this._rows(`${this._quiet()}PRAGMA journal_mode;`);
    const [level] = this._rows(`${this._quiet()}PRAGMA synchronous;`);
    return {
      journalMode: mode.journal_mode,
      synchronous: ["off", "normal", "full", "extra"][level.synchronous] ?? null,
      sqliteVersion: this.version,
      sqliteSourceId: r.s,
    };
  }

  createSession(session) {
    this._tx(`INSERT OR IGNORE INTO sessions (id) VALUES (${q(session)});`);
  }

  append(session, role, content) {
    this._tx(`INSERT INTO messages (sid, role, body, pos) VALUES (${q(session)}, ${q(role)}, ${q(content)}, ${next(session)});
UPDATE sessions SET n = n + 1 WHERE id = ${q(session)};`);
  }

  rotate(parent, child, work, carried, newParent) {
    if (newParent) this.createSession(parent);
    for (const [role, content] of work) this.append(parent, role, content);
    this._tx(`INSERT INTO sessions (id, parent, n) VALUES (${q(child)}, ${q(parent)}, ${1 + carried});
INSERT INTO messages (sid, role, body, pos) VALUES (${q(child)}, 'system', ${q(`continued from ${parent}`)}, 0);
INSERT INTO messages (sid, role, body, pos) SELECT ${q(child)}, role, body, row_number() OVER (ORDER BY k) FROM
  (SELECT k, role, body FROM messages WHERE sid = ${q(parent)} AND active ORDER BY k DESC LIMIT ${carried}) ORDER BY k;
UPDATE sessions SET ended = 1, reason = 'compression' WHERE id = ${q(parent)};`);
  }

  park(session) {
    this._tx(`INSERT INTO sessions (id, handoff) VALUES (${q(session)}, 'pending');`);
  }

  claim(session, claimant) {
    // One transaction, predicated on `pending`; the winner's record in it.
    const [r] = this._rows(`${this._quiet()}BEGIN IMMEDIATE;
UPDATE sessions SET handoff = 'running' WHERE id = ${q(session)} AND handoff = 'pending';
INSERT INTO messages (sid, role, body, pos) SELECT ${q(session)}, 'system', ${q(`claimed by ${claimant}`)}, ${next(session)} WHERE changes() = 1;
UPDATE sessions SET n = n + 1 WHERE id = ${q(session)} AND changes() = 1;
SELECT changes() AS won;
COMMIT;`);
    return process.env.SHELL_STORE_BREAK === "claim" ? "yes" : r.won === 1;
  }

  rewind(session, keep) {
    // Soft-delete: the cut messages stay, inactive.
    this._tx(`UPDATE messages SET active = 0 WHERE sid = ${q(session)} AND active AND k NOT IN
  (SELECT k FROM messages WHERE sid = ${q(session)} AND active ORDER BY k LIMIT ${keep});
UPDATE sessions SET n = ${keep} WHERE id = ${q(session)};`);
  }

  record(key, payload) {
    this._tx(`INSERT INTO outbox (key, payload, state) VALUES (${q(key)}, ${q(payload)}, 'recorded');`);
  }

  attempting(key) {
    this._tx(`UPDATE outbox SET state = 'attempting' WHERE key = ${q(key)} AND state = 'recorded';`);
  }

  delivered(key) {
    this._tx(`UPDATE outbox SET state = 'delivered' WHERE key = ${q(key)} AND state = 'attempting';`);
  }

  pending() {
    return this._rows(`${this._quiet()}SELECT key, payload, state FROM outbox WHERE state != 'delivered' ORDER BY rowid;`)
      .map((r) => [r.key, r.payload, r.state]);
  }

  state(db) {
    // No pragma, no resolver: the open itself recovers the file.
    const read = (sql) => this._rows(sql, db);
    const integrity = read("PRAGMA integrity_check;").map((r) => r.integrity_check).join("; ");
    const tables = read("SELECT name FROM sqlite_master WHERE type = 'table';").map((r) => r.name);
    if (!tables.includes("sessions")) return { sessions: [], messages: [], integrity };
    const sessions = read("SELECT * FROM sessions ORDER BY id;").map((s) => ({
      id: s.id, parentSessionId: s.parent, ended: s.ended === 1, endReason: s.reason, messageCount: s.n, handoffState: s.handoff,
    }));
    const messages = read("SELECT * FROM messages ORDER BY k;").map((m) => ({
      sessionId: m.sid, role: m.role, content: m.body, position: m.pos, active: m.active === 1,
    }));
    if (process.env.SHELL_STORE_BREAK === "shape" && messages.length > 0) delete messages[0].role;
    const obligations = read("SELECT key, state FROM outbox;");
    return { sessions, messages, obligations, integrity };
  }

  /** One transaction: the connection's pragmas, then `body` between BEGIN IMMEDIATE and COMMIT. */
  _tx(body) {
    this._shell(`${this._quiet()}BEGIN IMMEDIATE;\n${body}\nCOMMIT;\n`);
  }

  /** The connection's pragmas with their answers sent nowhere; the busy
   * timeout first, since a journal mode change takes a lock another writer
   * may hold (co-append). */
  _quiet() {
    return `.timeout 10000\n.output /dev/null\n${this.pragmas ?? ""}.output stdout\n`;
  }

  _rows(script, db = this.db) {
    const out = this._shell(script, db, ["-json"]).trim();
    return out ? JSON.parse(out) : [];
  }

  _shell(script, db = this.db, more = []) {
    try {
      return execFileSync("sqlite3", ["-bail", "-batch", ...more, db], { input: script, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      throw new SqlError(`sqlite3: ${`${e.stderr ?? ""}`.trim() || e.message}`);
    }
  }
}

if (process.env.SHELL_STORE_BREAK === "misspelt") ShellStore.prototype.apend = ShellStore.prototype.append;
if (process.env.SHELL_STORE_BREAK === "throws") {
  ShellStore.prototype.append = function () {
    return this.nothing.here;
  };
}

if (process.env.SHELL_STORE_BREAK === "no-rotate") delete ShellStore.prototype.rotate;
// `async`: every method an async function that yields to the event loop
// first, as a store on an async driver; `async-nowrite`: the same, with an
// append whose promise resolves having written nothing (it must fire).
if (process.env.SHELL_STORE_BREAK?.startsWith("async")) {
  for (const name of Object.getOwnPropertyNames(ShellStore.prototype)) {
    const method = ShellStore.prototype[name];
    if (name === "constructor" || name.startsWith("_") || typeof method !== "function") continue;
    ShellStore.prototype[name] = async function (...args) {
      await new Promise((done) => setImmediate(done));
      return name === "append" && process.env.SHELL_STORE_BREAK === "async-nowrite" ? undefined : method.apply(this, args);
    };
  }
}

await run(ShellStore);
