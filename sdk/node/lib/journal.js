// The ack journal (docs/PROTOCOL.md §3) and its ready record.
//
// Crash model: the process may be killed with SIGKILL between any two
// system calls. Each line is built whole and put down with ONE write(2) on
// an O_APPEND descriptor, so that a kill tears at most the final line; a
// short write is an error, never completed by a second call (the kill could
// land between the two). An ack is written only after the store's method
// returned (its promise resolved): an ack on disk is a promise the store
// must keep across the crash.

import { closeSync, openSync, writeSync } from "node:fs";

import { JOURNAL_MODES, SYNC_LEVELS } from "./config.js";
import { RuleError } from "./errors.js";

export const PROTOCOL = 2;
const DECIDERS = ["config", "default", "wal-reset-gate", "already-wal", "store"];

export class AckJournal {
  constructor(path) {
    // "a": O_WRONLY | O_CREAT | O_APPEND.
    this.fd = openSync(path, "a", 0o644);
  }

  record(obj) {
    const line = Buffer.from(JSON.stringify(obj) + "\n");
    const n = writeSync(this.fd, line);
    if (n !== line.length) throw new Error(`short write of an ack: ${n} of ${line.length} bytes`);
  }

  /** The ready record: `journal` is what `journal()` returned, `resolver`
   * what `open()` returned, both checked by `readyFields`. */
  ready(op, fields, operations) {
    this.record({ kind: "ready", protocol: PROTOCOL, pid: process.pid, op, ...fields, operations });
  }

  ack(op, i, more = {}) {
    this.record({ kind: "ack", op, i, ...more });
  }

  close() {
    closeSync(this.fd);
  }
}

/** The ready record's store fields from `journal()`'s and `open()`'s answers,
 * or a RuleError naming what is wrong: a record the driver cannot read would
 * make every trial an error far from its cause. */
export function readyFields(journal, resolver) {
  const j = plain(journal, "journal()", "it returns { journalMode, synchronous, sqliteVersion, sqliteSourceId }");
  const rule = "§3 ready record: what the store's own connection reports";
  only(j, ["journalMode", "synchronous", "sqliteVersion", "sqliteSourceId"], "journal()", rule);
  const mode = typeof j.journalMode === "string" ? j.journalMode.toLowerCase() : j.journalMode;
  if (!JOURNAL_MODES.includes(mode)) {
    throw new RuleError("journal()", `returned journalMode ${show(j.journalMode)}, not one of ${JOURNAL_MODES.join("|")}`, rule);
  }
  const sync = j.synchronous ?? null;
  if (sync !== null && !SYNC_LEVELS.includes(sync)) {
    throw new RuleError("journal()", `returned synchronous ${show(sync)}, not one of ${SYNC_LEVELS.join("|")} or null`, rule);
  }
  if (typeof j.sqliteVersion !== "string" || !/^\d+\.\d+\.\d+/.test(j.sqliteVersion)) {
    throw new RuleError("journal()", `returned sqliteVersion ${show(j.sqliteVersion)}, not a version like "3.40.1"`, rule);
  }
  const source = j.sqliteSourceId ?? null;
  if (source !== null && typeof source !== "string") {
    throw new RuleError("journal()", `returned sqliteSourceId ${show(source)}, not a string or null`, rule);
  }
  return {
    sqlite_version: j.sqliteVersion,
    sqlite_source_id: source,
    journal_mode: mode,
    synchronous: sync,
    resolver: resolverRecord(resolver),
  };
}

/** `open()`'s resolver decision as the wire's `resolver` (or null). */
function resolverRecord(r) {
  if (r === undefined || r === null) return null;
  const rule = "§3 resolver: requested, applied, synchronous, decidedBy, reason";
  const d = plain(r, "open()", "it returns the resolver decision or nothing");
  only(d, ["requested", "applied", "synchronous", "decidedBy", "reason"], "open()", rule);
  const mode = (v) => v === null || JOURNAL_MODES.includes(v);
  if (d.requested === undefined || !mode(d.requested)) throw new RuleError("open()", `returned requested ${show(d.requested)}, not a journal mode or null`, rule);
  if (!JOURNAL_MODES.includes(d.applied)) throw new RuleError("open()", `returned applied ${show(d.applied)}, not a journal mode`, rule);
  if (d.synchronous === undefined || !(d.synchronous === null || SYNC_LEVELS.includes(d.synchronous))) {
    throw new RuleError("open()", `returned synchronous ${show(d.synchronous)}, not a level or null`, rule);
  }
  if (typeof d.decidedBy !== "string" || d.decidedBy === "") {
    throw new RuleError("open()", `returned decidedBy ${show(d.decidedBy)}, not one of ${DECIDERS.join("|")} or a word of its own`, rule);
  }
  if (typeof d.reason !== "string") throw new RuleError("open()", `returned reason ${show(d.reason)}, not a sentence`, rule);
  return { requested: d.requested, applied: d.applied, synchronous: d.synchronous, decided_by: d.decidedBy, reason: d.reason };
}

function plain(value, method, what) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RuleError(method, `returned ${show(value)}`, what);
  }
  return value;
}

function only(obj, keys, method, rule) {
  for (const k of Object.keys(obj)) {
    if (!keys.includes(k)) throw new RuleError(method, `returned an unknown field \`${k}\` (it knows ${keys.join(", ")})`, rule);
  }
}

/** A value as it shows in an error line. */
export function show(value) {
  if (value === undefined) return "undefined";
  if (typeof value === "bigint") return `${value}n`;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
