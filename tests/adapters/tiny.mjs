// A tiny Node.js adapter, written from docs/PROTOCOL.md alone, for the warm
// pool's tests (§10): `append` and `dump`, no resolver, no mutants, and
// `warm-pool` through examples/warmpool/crashcells_warm.mjs. Node.js 20
// has no SQLite of its own, so the store is the `sqlite3` shell, one
// process per transaction, started by this process in its own group (the
// driver kills and traces it with the group). With TINY_WARM_HELPER=reusing
// it uses tests/adapters/reusing_warm.mjs instead: a helper that hands
// every request to one worker, which child-check must refuse.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const PROTOCOL = 2;
const MODES = ["delete", "truncate", "persist", "memory", "wal", "off"];
const LEVELS = ["off", "normal", "full", "extra"];
const OPERATIONS = ["append", "dump", "warm-pool"];
const SCHEMA = `CREATE TABLE IF NOT EXISTS s (id TEXT PRIMARY KEY, parent TEXT, ended INT DEFAULT 0, reason TEXT, n INT DEFAULT 0, state TEXT);
CREATE TABLE IF NOT EXISTS m (k INTEGER PRIMARY KEY AUTOINCREMENT, sid TEXT, role TEXT, body TEXT);`;
// The shell's version, read once by the imports (a warm process pays it ahead).
const SQLITE_VERSION = execFileSync("sqlite3", ["--version"], { encoding: "utf8" }).split(" ")[0];

function flags(argv) {
  const f = {};
  for (let i = 0; i + 1 < argv.length; i += 2) f[argv[i].slice(2)] = argv[i + 1];
  return f;
}

function config() {
  const path = `${process.env.CRASHCELLS_HOME ?? "/nonexistent"}/config.toml`;
  if (!fs.existsSync(path)) return {};
  const out = {};
  for (let line of fs.readFileSync(path, "utf8").split("\n")) {
    line = line.split("#")[0].trim();
    if (!line || line === "[database]") continue;
    const [key, raw = ""] = line.split("=").map((p) => p.trim());
    const value = raw.replace(/^"|"$/g, "");
    const known = key === "journal_mode" ? MODES : key === "synchronous" ? LEVELS : [];
    if (!known.includes(value)) throw new Error(`tiny: bad config line: ${line}`);
    out[key] = value;
  }
  return out;
}

/** The pragmas every connection of this run applies (the shell opens one per call). */
function pragmas(cfg) {
  return (cfg.journal_mode ? `PRAGMA journal_mode=${cfg.journal_mode};\n` : "") +
    (cfg.synchronous ? `PRAGMA synchronous=${cfg.synchronous};\n` : "");
}

function sql(db, script, json = false) {
  const args = ["-bail", "-batch", ...(json ? ["-json"] : []), "-cmd", ".timeout 10000", db];
  return execFileSync("sqlite3", args, { input: script, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
}

function rows(db, query) {
  const out = sql(db, query, true).trim();
  return out ? JSON.parse(out) : [];
}

function tx(db, cfg, body) {
  sql(db, `${pragmas(cfg)}BEGIN IMMEDIATE;\n${body}\nCOMMIT;\n`);
}

function dump(f) {
  if (!fs.existsSync(f.db)) throw new Error(`tiny: no database at ${f.db}`);
  const integrity = rows(f.db, "PRAGMA integrity_check;").map((r) => r.integrity_check).join("; ");
  // A crash before the schema's commit leaves a database without tables: an empty store.
  const tables = rows(f.db, "SELECT name FROM sqlite_master WHERE type = 'table';").map((r) => r.name);
  if (!tables.includes("s") || !tables.includes("m")) {
    process.stdout.write(JSON.stringify({ protocol: PROTOCOL, integrity, sessions: [], messages: [] }) + "\n");
    return 0;
  }
  const sessions = rows(f.db, "SELECT id, parent, ended, reason, n, state FROM s ORDER BY id;").map((r) => ({
    id: r.id, parent_session_id: r.parent, ended: Boolean(r.ended), end_reason: r.reason,
    message_count: r.n, handoff_state: r.state,
  }));
  const messages = rows(f.db, "SELECT sid, role, body FROM m ORDER BY k;").map((r) => ({
    session_id: r.sid, role: r.role, content: r.body,
  }));
  process.stdout.write(JSON.stringify({ protocol: PROTOCOL, integrity, sessions, messages }) + "\n");
  return 0;
}

function append(f) {
  const cfg = config();
  const mode = sql(f.db, `${pragmas(cfg)}${SCHEMA}\nINSERT OR IGNORE INTO s (id) VALUES ('main');\nPRAGMA journal_mode;\n`)
    .trim().split("\n").at(-1).toLowerCase();
  const acks = fs.openSync(f.acks, "a", 0o644);
  const put = (rec) => fs.writeSync(acks, JSON.stringify(rec) + "\n");
  put({ kind: "ready", protocol: PROTOCOL, pid: process.pid, op: "append", sqlite_version: SQLITE_VERSION,
    journal_mode: mode, resolver: null, operations: OPERATIONS });
  const stop = f["stop-after"] === undefined ? -1 : Number(f["stop-after"]);
  for (let i = 0; i !== stop; i++) {
    tx(f.db, cfg, `INSERT INTO m (sid, role, body) VALUES ('main', 'user', 'm${i}');\nUPDATE s SET n = n + 1 WHERE id = 'main';`);
    put({ kind: "ack", op: "append", i });
  }
  return 0;
}

export async function main(argv) {
  const [op, ...rest] = argv;
  const f = flags(rest);
  try {
    if (f.mutant !== undefined) throw new Error("tiny: no mutants here");
    if (op === "dump") return dump(f);
    if (op === "append") return append(f);
    process.stderr.write(`tiny: unknown operation ${op}\n`);
    return 2;
  } catch (e) {
    process.stderr.write(`${e.stderr ?? ""}${e.message}\n`);
    return 3;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href) {
  if (process.argv.at(-1) === "warm-pool") {
    const helper = process.env.TINY_WARM_HELPER === "reusing"
      ? new URL("./reusing_warm.mjs", import.meta.url)
      : new URL("../../examples/warmpool/crashcells_warm.mjs", import.meta.url);
    const { warm } = await import(helper);
    await warm(main, fileURLToPath(import.meta.url));
  } else {
    process.exitCode = await main(process.argv.slice(2));
  }
}
