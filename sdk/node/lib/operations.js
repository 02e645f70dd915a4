// The operations of docs/PROTOCOL.md §2, each a loop over the adapter's
// methods: the library owns the order of the steps, the ready record, the
// acks and the rules, the store only its own transactions.
//
// Crash model: SIGKILL may land between any two system calls. The ready
// record is written once the store is open and its journal mode applied;
// each ack only after the method that made its operation visible returned,
// one write(2) per line; a send to the transport only between `attempting`
// and `delivered`, so a kill there is the case catch-up must not resend.

import { existsSync, writeSync } from "node:fs";

import { LIBRARY_MUTANTS } from "./adapter.js";
import { openBarrier, waitShared } from "./barrier.js";
import { acked, call, instance } from "./calls.js";
import { EXIT_LOST, EXIT_OK, RuleError, StoreFailure, firstLine, isCorrupt } from "./errors.js";
import { AckJournal, readyFields, show } from "./journal.js";
import { STALL_AFTER, dropsAppend, forkStep, rotation, stallsAt, steps } from "./rules.js";
import { canonicalLine, checkedState, corruptLine, liveLength } from "./state.js";
import { Transport } from "./transport.js";

const SESSION = "main";

/** Opens a fresh instance on `a.db` and writes its ready record: the
 * instance and its journal. `session` is made to exist first (append, fork). */
async function opened(run, a, session = null) {
  const it = instance(run.desc, run.Class, a.op, a.mutant, a.writer ?? null);
  const resolver = await call(it, "open", a.db, run.config);
  if (session !== null && run.desc.has.has("createSession")) await call(it, "createSession", session);
  const fields = readyFields(await call(it, "journal"), resolver);
  const journal = new AckJournal(a.acks);
  journal.ready(a.op, fields, run.desc.operations);
  return { it, journal };
}

async function closed({ it, journal }) {
  journal?.close();
  if (it.desc.has.has("close")) await call(it, "close");
}

/** Whether the library plays `name` itself (a class that names it). */
function libraryMutant(a, name) {
  return a.mutant === name && LIBRARY_MUTANTS.includes(name);
}

async function append(run, a) {
  const o = await opened(run, a, SESSION);
  for (const i of steps(a.stopAfter)) {
    if (libraryMutant(a, "stall") && stallsAt(i)) stall();
    const ack = () => o.journal.ack("append", i);
    if (libraryMutant(a, "drop-append") && dropsAppend(i)) ack();
    else await acked(o.it, i, ack, "append", SESSION, "user", `m${i}`);
  }
  await closed(o);
  return EXIT_OK;
}

/** Blocks for good, saying so first (the driver's deadline error shows it). */
function stall() {
  writeSync(2, `crashcells adapter: stall mutant: blocking forever after ${STALL_AFTER} acks\n`);
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}

async function rotate(run, a) {
  const o = await opened(run, a);
  for (const k of steps(a.stopAfter)) {
    const r = rotation(k, a.shapes);
    const more = { parent: r.parent, child: r.child, ...(a.shapes ? { carried: r.carried } : {}) };
    await acked(o.it, k, () => o.journal.ack("rotate", k, more), "rotate", r.parent, r.child, r.work, r.carried, r.newParent);
  }
  await closed(o);
  return EXIT_OK;
}

async function park(run, a) {
  const it = instance(run.desc, run.Class, a.op, a.mutant);
  await call(it, "open", a.db, run.config);
  await call(it, "park", a.session);
  await closed({ it });
  return EXIT_OK;
}

async function claim(run, a) {
  // Opened before the store: the protocol's order (the driver made it).
  const barrier = openBarrier(a.barrier);
  const o = await opened(run, a);
  // Blocks while the driver holds its exclusive lock; its deadline bounds the wait.
  waitShared(barrier);
  const won = await call(o.it, "claim", a.session, a.claimant);
  if (typeof won !== "boolean") {
    throw new RuleError(`${run.desc.name}.claim()`, `returned ${show(won)}, not true (won) or false (lost)`, "claim returns a boolean");
  }
  o.journal.ack("claim", 0);
  await closed(o);
  return won ? EXIT_OK : EXIT_LOST;
}

/** One of several writers on session `main` (§2, `co-append`): the
 * barrier opened, the store opened (main made to exist: another writer may
 * be making it at the same moment), the ready record, then a shared flock
 * on the barrier, which blocks until the driver releases every writer at
 * once; then the store's own `append` of `<writer>-m<i>`, each acked. */
async function coAppend(run, a) {
  const barrier = openBarrier(a.barrier);
  const o = await opened(run, a, SESSION);
  // Blocks while the driver holds its exclusive lock; its deadline bounds the wait.
  waitShared(barrier);
  for (const i of steps(a.stopAfter)) {
    await acked(o.it, i, () => o.journal.ack("co-append", i), "append", SESSION, "user", `${a.writer}-m${i}`);
  }
  await closed(o);
  return EXIT_OK;
}

async function fork(run, a) {
  const o = await opened(run, a, SESSION);
  // The rule needs the live transcript's length before each operation: asked
  // once, then followed (an append adds one, a rewind keeps `keep`).
  let length = run.desc.has.has("liveLength")
    ? await call(o.it, "liveLength", SESSION)
    : liveLength(await stateOf(o.it, a.db), SESSION);
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RuleError(`${run.desc.name}.liveLength()`, `returned ${show(length)}, not a count`, "liveLength returns a number");
  }
  for (const i of steps(a.stopAfter)) {
    const step = forkStep(a.seed, i, length);
    if (step.op === "append") {
      await acked(o.it, i, () => o.journal.ack("append", i), "append", SESSION, "user", `m${i}`);
      length += 1;
    } else {
      await acked(o.it, i, () => o.journal.ack("rewind", i, { k: step.keep }), "rewind", SESSION, step.keep, i);
      length = step.keep;
    }
  }
  await closed(o);
  return EXIT_OK;
}

async function deliver(run, a) {
  const o = await opened(run, a);
  const transport = new Transport(a.transport);
  for (const j of steps(a.stopAfter)) {
    const key = `o${j}`;
    const payload = `effect of ${key}`;
    o.it.store.index = j;
    await call(o.it, "record", key, payload);
    await call(o.it, "attempting", key);
    sent(transport, key, payload);
    await acked(o.it, j, () => o.journal.ack("deliver", j, { key }), "delivered", key);
  }
  await closed(o);
  return EXIT_OK;
}

/** A send that fails is the store's failure (exit 3), never an ack. */
function sent(transport, key, payload) {
  try {
    transport.send(key, payload);
  } catch (e) {
    throw new StoreFailure(`sending ${key} to the transport`, e);
  }
}

/** The store's restart: every obligation not delivered finished, an
 * `attempting` one sent only if the transport does not have it already.
 * With several pairs (catch-up-batch), each store on its own instance, in order. */
async function catchUp(run, a) {
  for (let n = 0; n < a.db.length; n++) {
    const it = instance(run.desc, run.Class, a.op, a.mutant);
    await call(it, "open", a.db[n], run.config);
    const transport = new Transport(a.transport[n]);
    const there = transport.arrived();
    for (const [key, payload, state] of pendingOf(run.desc.name, await call(it, "pending"))) {
      if (state === "recorded") await call(it, "attempting", key);
      const asked = !libraryMutant(a, "resend-on-catch-up");
      if (!(asked && state === "attempting" && there.has(key))) sent(transport, key, payload);
      await call(it, "delivered", key);
    }
    await closed({ it });
  }
  return EXIT_OK;
}

function pendingOf(name, list) {
  const rule = "pending returns [key, payload, state] of each obligation not delivered, in the order recorded";
  if (!Array.isArray(list)) throw new RuleError(`${name}.pending()`, `returned ${show(list)}, not an array`, rule);
  for (const [n, p] of list.entries()) {
    const ok = Array.isArray(p) && p.length === 3 && typeof p[0] === "string" && typeof p[1] === "string";
    if (!ok || !["recorded", "attempting"].includes(p[2])) {
      throw new RuleError(`${name}.pending()`, `returned [${n}] ${show(p)}`, rule);
    }
  }
  return list;
}

/** The recovery pass: one canonical line per --db, in order, each from a
 * fresh instance's `state(db)` (never `open`: no pragma, no resolver).
 * Every file is checked before any line is printed. */
async function dump(run, a) {
  for (const db of a.db) {
    if (!existsSync(db)) throw new StoreFailure("dump", new Error(`no database at ${db}`));
  }
  const lines = [];
  for (const db of a.db) lines.push(await dumpLine(run, db));
  writeAll(1, lines.join(""));
  return EXIT_OK;
}

async function dumpLine(run, db) {
  const it = instance(run.desc, run.Class, "dump", null);
  let state;
  try {
    state = await stateOf(it, db);
    if (state.integrity === undefined) state.integrity = await integrityOf(run.desc.name, db);
  } catch (e) {
    // A file SQLite calls corrupt is a finding, not a failed pass.
    if (isCorrupt(e.cause ?? e)) return corruptLine(firstLine(e.cause ?? e));
    throw e;
  }
  return canonicalLine(state);
}

async function stateOf(it, db) {
  return checkedState(await call(it, "state", db), `${it.desc.name}.state()`);
}

/** `PRAGMA integrity_check` for a state() that left it out, through
 * node:sqlite (Node.js 22.13 and later); an older Node.js has no SQLite of
 * its own, and the store must then say it. */
async function integrityOf(name, db) {
  let sqlite;
  try {
    sqlite = await import("node:sqlite");
  } catch {
    const why = `returned no integrity, and Node.js ${process.version} has no node:sqlite to run PRAGMA integrity_check with`;
    throw new RuleError(`${name}.state()`, why, "§4: integrity is the rows of PRAGMA integrity_check joined with \"; \"");
  }
  const conn = new sqlite.DatabaseSync(db);
  try {
    return conn.prepare("PRAGMA integrity_check").all().map((r) => r.integrity_check).join("; ");
  } finally {
    conn.close();
  }
}

/** Writes all of `text` to descriptor `fd` (stdout may be a pipe). */
export function writeAll(fd, text) {
  let data = Buffer.from(text);
  while (data.length > 0) data = data.subarray(writeSync(fd, data));
}

export const OPERATION_RUNNERS = { append, rotate, park, claim, fork, deliver, "catch-up": catchUp, "co-append": coAppend, dump };
