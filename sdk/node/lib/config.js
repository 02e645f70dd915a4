// The config home (docs/PROTOCOL.md §5) and the reference resolver.
//
// The driver writes `$CRASHCELLS_HOME/config.toml` for each matrix leg. A
// value the store cannot honour is an error before the ready record, never a
// silent fallback: a leg that ran in another mode would count as evidence
// for the wrong one. The driver writes flat `key = "value"` lines under
// `[database]`; this reader takes that much TOML and refuses anything else.

import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve as resolvePath } from "node:path";

import { UsageError } from "./errors.js";

export const JOURNAL_MODES = ["delete", "truncate", "persist", "memory", "wal", "off"];
export const SYNC_LEVELS = ["off", "normal", "full", "extra"];

/** The config of `env.CRASHCELLS_HOME`: `{ journalMode, synchronous }`, each
 * a lowercase name or null for "your default". No variable or no file is
 * the default. */
export function readConfig(env = process.env, cwd = process.cwd()) {
  if (env.CRASHCELLS_HOME === undefined) return { journalMode: null, synchronous: null };
  const home = resolvePath(cwd, env.CRASHCELLS_HOME);
  if (existsSync(home) && !statSync(home).isDirectory()) throw new UsageError(`${home}: CRASHCELLS_HOME is not a folder`);
  const path = resolvePath(home, "config.toml");
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if (e.code === "ENOENT") return { journalMode: null, synchronous: null };
    throw new UsageError(`config ${path}: ${e.message}`);
  }
  try {
    return parseConfig(text);
  } catch (e) {
    throw new UsageError(`config ${path}: ${e.message}`);
  }
}

/** The `[database]` table of a config.toml's text. */
export function parseConfig(text) {
  const data = parseFlatToml(text);
  const unknown = Object.keys(data).filter((k) => k !== "database");
  if (unknown.length > 0) throw new Error(`unknown table or key \`${unknown.sort()[0]}\``);
  const db = data.database ?? {};
  const extra = Object.keys(db).filter((k) => k !== "journal_mode" && k !== "synchronous");
  if (extra.length > 0) throw new Error(`unknown key \`${extra.sort()[0]}\` in [database]`);
  return {
    journalMode: checkValue(db.journal_mode, JOURNAL_MODES, "journal_mode"),
    synchronous: checkValue(db.synchronous, SYNC_LEVELS, "synchronous"),
  };
}

function checkValue(value, known, what) {
  if (value === undefined) return null;
  if (!known.includes(value.toLowerCase())) throw new Error(`unknown ${what} \`${value}\` (expected one of ${known.join("|")})`);
  return value.toLowerCase();
}

/** Tables of `key = "string"` lines, comments and blank lines; anything
 * else is refused by its line number rather than guessed at. */
function parseFlatToml(text) {
  const data = {};
  let table = data;
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = withoutComment(lines[n]).trim();
    if (line === "") continue;
    const header = /^\[\s*([A-Za-z0-9_-]+)\s*\]$/.exec(line);
    if (header) {
      if (header[1] in data) throw new Error(`line ${n + 1}: table [${header[1]}] defined twice`);
      table = data[header[1]] = {};
      continue;
    }
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*"([^"\\]*)"$/.exec(line);
    if (!pair) throw new Error(`line ${n + 1}: not a \`key = "value"\` line or a [table]: \`${line}\``);
    if (pair[1] in table) throw new Error(`line ${n + 1}: key \`${pair[1]}\` given twice`);
    table[pair[1]] = pair[2];
  }
  return data;
}

function withoutComment(line) {
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') quoted = !quoted;
    else if (line[i] === "#" && !quoted) return line.slice(0, i);
  }
  return line;
}

// --- the reference resolver -----------------------------------------------------

/** The WAL-reset bug: 3.7.0 <= v < 3.51.3, except the backports
 * 3.44.6 <= v < 3.45.0 and 3.50.7 <= v < 3.51.0. `version` is "3.40.1". */
export function walResetAffected(version) {
  const v = version.split(".").slice(0, 3).map(Number);
  const below = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  const within = (lo, hi) => below(v, lo) >= 0 && below(v, hi) < 0;
  return within([3, 7, 0], [3, 51, 3]) && !within([3, 44, 6], [3, 45, 0]) && !within([3, 50, 7], [3, 51, 0]);
}

/** Whether the database file's header says WAL (bytes 18 and 19 are 2). */
export function headerIsWal(path) {
  try {
    const header = readFileSync(path).subarray(0, 20);
    return header.length === 20 && header[18] === 2 && header[19] === 2;
  } catch {
    return false;
  }
}

/** The reference resolver (the reference store's and the Python example's):
 * the journal mode to apply and why, as `open()` returns it. WAL by default,
 * refused on a SQLite with the WAL-reset bug (DELETE applied) unless the
 * file is already WAL. */
export function resolve(config, sqliteVersion, fileIsWal) {
  const requested = config.journalMode;
  const wanted = requested ?? "wal";
  let applied = wanted;
  let decidedBy = requested === null ? "default" : "config";
  let reason = requested === null ? `nothing asked; resolver default ${wanted}` : `config asked for ${wanted}`;
  if (wanted === "wal" && walResetAffected(sqliteVersion)) {
    if (fileIsWal) {
      decidedBy = "already-wal";
      reason = `SQLite ${sqliteVersion} has the WAL-reset bug, but the file is already in WAL and stays WAL`;
    } else {
      applied = "delete";
      decidedBy = "wal-reset-gate";
      reason =
        `WAL-reset gate: SQLite ${sqliteVersion} is affected (3.7.0 <= v < 3.51.3 without the ` +
        "3.44.6/3.50.7 backports), so WAL is refused and DELETE applied";
    }
  }
  return { requested, applied, synchronous: config.synchronous, decidedBy, reason };
}
