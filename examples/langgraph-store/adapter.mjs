// LangGraph.js's SQLite checkpointer (`SqliteSaver` of
// @langchain/langgraph-checkpoint-sqlite, on better-sqlite3) behind the
// crashcells child protocol (docs/PROTOCOL.md).
//
// An integration, not a re-implementation: every write goes through the
// saver's public API (`put`, `putWrites`, `getTuple`), with the saver's own
// connection, statements and journal mode (its `setup` sets WAL); nothing of
// it is patched. The adapter plays the part of LangGraph's Pregel loop, which
// is what calls a checkpointer: a thread is a chain of checkpoints (snapshots
// of the graph's channels), and a transcript is the `messages` channel of
// the thread's newest checkpoint. README.md says how each operation maps.
//
// Only `dump` reads the file without the saver: the saver's read path writes
// (its `setup`, run on first use, sets WAL and creates the tables), and a
// recovery pass must not change the state under audit. `dump` opens the file
// with better-sqlite3, no pragma, runs the saver's own "newest checkpoint of
// a thread" query and decodes it with the saver's own serializer.
//
// Crash model: the process may be killed with SIGKILL at any instant. An ack
// is written with one write(2) on an O_APPEND descriptor, only after the
// checkpointer calls it acknowledges returned; each `put` is one INSERT
// (one autocommit transaction), each `putWrites` one transaction.
//
// Run as: node adapter.mjs <append|fork|dump> [flags]. `rotate`, `park`,
// `claim`, `deliver` and `catch-up` answer 69 (the checkpointer has no
// rotation, handoff or outbox). `node adapter.mjs warm-pool` is one process
// of the warm pool (docs/PROTOCOL.md §10): every import is here at the top,
// so the process pays Node.js's start and the saver's imports before it is
// needed, then runs one operation it is sent through `main(argv, env, cwd)`,
// which reads nothing of the process but what it is given.

import { closeSync, existsSync, openSync, writeSync } from "node:fs";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import Database from "better-sqlite3";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { HumanMessage } from "@langchain/core/messages";
import { parse as parseToml } from "smol-toml";

import { warm } from "../warmpool/crashcells_warm.mjs";

const PROTOCOL = 2;
// What the adapter implements (protocol 2's ready record): the snapshot
// store has no rotation, handoff or outbox, so `rotate`, `park`, `claim`,
// `deliver` and `catch-up` are left out (and answer 69 if asked).
// `warm-pool`: Node.js cannot fork (§9), so its processes are started ahead.
const OPERATIONS = ["append", "dump", "dump-batch", "fork", "warm-pool"];
const UNSUPPORTED = ["rotate", "park", "claim", "deliver", "catch-up"];
const EXIT_USAGE = 2;
const EXIT_ERROR = 3;
const EXIT_UNAVAILABLE = 69;
const THREAD = "main";
const JOURNAL_MODES = ["delete", "truncate", "persist", "memory", "wal", "off"];
const SYNC_LEVELS = ["off", "normal", "full", "extra"];
// A fork run rewinds at every FORK_EVERY-th operation (docs/PROTOCOL.md, `fork`).
const FORK_EVERY = 4;
// The node whose task writes each appended message: the adapter's stand-in
// for a graph's agent node (its name is stored in the pending writes and the
// checkpoint's `versions_seen`, never shown by `dump`).
const NODE = "agent";
// The mutants this adapter implements (docs/PROTOCOL.md, `--mutant`).
const MUTANTS = ["ack-before-commit", "torn-fork"];
// LangChain's message types to the protocol's roles.
const ROLES = { human: "user", ai: "assistant", system: "system", tool: "tool" };

/** A command line or config the adapter refuses: exit 2, one line. */
class Usage extends Error {}
/** An operation the store cannot express: exit 69, one line. */
class Unavailable extends Error {}

// --- config home ---------------------------------------------------------------

/** `[database]` with `journal_mode` and `synchronous`, anything else refused:
 * LangGraph has no knob for either (see `resolver`), but a leg must never run
 * on a config the adapter did not understand. */
export function readConfig(env, cwd) {
  if (env.CRASHCELLS_HOME === undefined) return { journalMode: null, synchronous: null };
  const home = resolve(cwd, env.CRASHCELLS_HOME);
  if (existsSync(home) && !statSync(home).isDirectory()) throw new Usage(`${home}: CRASHCELLS_HOME is not a folder`);
  const path = resolve(home, "config.toml");
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if (e.code === "ENOENT") return { journalMode: null, synchronous: null };
    throw e;
  }
  try {
    return parseConfig(parseToml(text));
  } catch (e) {
    throw new Usage(`config ${path}: ${e.message.split("\n")[0]}`);
  }
}

function parseConfig(data) {
  const unknown = Object.keys(data).filter((k) => k !== "database");
  if (unknown.length > 0) throw new Error(`unknown table or key \`${unknown.sort()[0]}\``);
  const db = data.database ?? {};
  if (typeof db !== "object" || Array.isArray(db)) throw new Error("`database` is not a table");
  const extra = Object.keys(db).filter((k) => k !== "journal_mode" && k !== "synchronous");
  if (extra.length > 0) throw new Error(`unknown key \`${extra.sort()[0]}\` in [database]`);
  return {
    journalMode: checkValue(db.journal_mode, JOURNAL_MODES, "journal_mode"),
    synchronous: checkValue(db.synchronous, SYNC_LEVELS, "synchronous"),
  };
}

function checkValue(value, known, what) {
  if (value === undefined) return null;
  if (typeof value !== "string" || !known.includes(value.toLowerCase())) {
    throw new Error(`unknown ${what} \`${value}\` (expected one of ${known.join("|")})`);
  }
  return value.toLowerCase();
}

// --- the store -------------------------------------------------------------------

/** One SqliteSaver on the protocol's database, opened as an application
 * opens it (`SqliteSaver.fromConnString`), and what it really did. */
class Store {
  constructor(path, config) {
    this.config = config;
    this.saver = SqliteSaver.fromConnString(path);
  }

  /** The thread's newest checkpoint tuple (or undefined), through the saver.
   * The first call is also the saver's lazy `setup` (WAL, tables): the
   * journal mode is known only after it, so `ready` comes after this read. */
  async head(thread) {
    return this.saver.getTuple({ configurable: { thread_id: thread } });
  }

  pragma(name) {
    return this.saver.db.pragma(name, { simple: true });
  }

  /** SqliteSaver.setup runs `PRAGMA journal_mode=WAL` on every first use,
   * whatever is asked: the store imposes the mode. The config is read and
   * checked, then reported as asked next to what the store did; a leg asking
   * for another mode is skipped by the driver with `reason`. */
  resolver(journalMode) {
    const { journalMode: asked, synchronous } = this.config;
    let why = "LangGraph's SqliteSaver sets journal_mode=WAL in its setup (run on first use), whatever is asked";
    if (journalMode !== "wal") why = `LangGraph's SqliteSaver asks for WAL in its setup; SQLite ran ${journalMode} here`;
    if (asked !== null) why += `; the config asked for ${asked}`;
    if (synchronous !== null) {
      why += `; the saver never sets synchronous, which runs at better-sqlite3's default (${this.synchronous()})`;
    }
    return { requested: asked, applied: journalMode, synchronous, decided_by: "store", reason: why };
  }

  synchronous() {
    return SYNC_LEVELS[this.pragma("synchronous")] ?? null;
  }

  close() {
    this.saver.db.close();
  }
}

/** The transcript a checkpoint tuple holds: its `messages` channel. */
function messagesOf(tuple) {
  return tuple?.checkpoint.channel_values.messages ?? [];
}

/** The next checkpoint of a thread, as the Pregel loop makes it after a
 * step: a new id (uuid6, time-ordered: the newest is the head), the channel
 * values with the step's writes applied, and the `messages` channel's
 * version bumped. */
function nextCheckpoint(tuple, messages) {
  const base = tuple?.checkpoint ?? emptyCheckpoint();
  const step = (tuple?.metadata.step ?? -2) + 1;
  const version = (base.channel_versions.messages ?? 0) + 1;
  return {
    checkpoint: {
      v: base.v,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { ...base.channel_values, messages },
      channel_versions: { ...base.channel_versions, messages: version },
      versions_seen: { ...base.versions_seen, [NODE]: { messages: version } },
    },
    step,
  };
}

/** The thread's config for a put after `tuple`: the parent checkpoint's id,
 * as the loop passes it. */
function parentConfig(tuple) {
  return tuple?.config ?? { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
}

/** One append: a superstep of a one-node graph whose node emits the message.
 * As the Pregel loop does it: the finished task's write is saved as a pending
 * write of the head (`putWrites`, one transaction), then the next checkpoint,
 * the write applied, is saved (`put`, one INSERT). A thread without a
 * checkpoint gets its first one instead: the loop's "input" checkpoint, the
 * input applied, one `put`. `acked` runs once the message is in the head
 * (with the `ack-before-commit` mutant, once the pending write is saved,
 * before the head). Returns the new head tuple. */
async function appendStep(store, tuple, content, acked, mutant) {
  const message = new HumanMessage({ content, id: randomUUID() });
  const saver = store.saver;
  if (tuple !== undefined) {
    await saver.putWrites(tuple.config, [["messages", [message]]], randomUUID());
  }
  if (mutant === "ack-before-commit") acked();
  const { checkpoint, step } = nextCheckpoint(tuple, [...messagesOf(tuple), message]);
  const source = tuple === undefined ? "input" : "loop";
  const metadata = { source, step, parents: {} };
  const config = await saver.put(parentConfig(tuple), checkpoint, metadata);
  if (mutant !== "ack-before-commit") acked();
  return { config, checkpoint, metadata };
}

/** One rewind that keeps the first k messages, as `graph.updateState(head,
 * { messages: [RemoveMessage(...) for each cut one] })` saves it: one new
 * checkpoint, child of the head, whose `messages` are the kept prefix (one
 * `put`, one INSERT). The cut messages stay in the older checkpoints; the
 * thread's head no longer holds them. With the `torn-fork` mutant, one
 * checkpoint per removed message, last first (an update per RemoveMessage). */
async function rewindStep(store, tuple, k, mutant) {
  const messages = messagesOf(tuple);
  const cuts = mutant === "torn-fork" ? messages.length - k : 1;
  for (let n = 1; n <= cuts; n++) {
    const keep = mutant === "torn-fork" ? messages.length - n : k;
    const { checkpoint, step } = nextCheckpoint(tuple, messages.slice(0, keep));
    const metadata = { source: "update", step, parents: {} };
    const config = await store.saver.put(parentConfig(tuple), checkpoint, metadata);
    tuple = { config, checkpoint, metadata };
  }
  return tuple;
}

// --- the ack journal -------------------------------------------------------------

/** NDJSON, one record per line, each put down with a single write(2) on an
 * O_APPEND descriptor, so that a kill tears at most the final line. */
class Acks {
  constructor(path) {
    this.fd = openSync(path, "a", 0o644);
  }

  record(obj) {
    const line = Buffer.from(JSON.stringify(obj) + "\n");
    const n = writeSync(this.fd, line);
    // A second write could be split from the first by the kill.
    if (n !== line.length) throw new Error(`short write of an ack: ${n} of ${line.length} bytes`);
  }

  ready(store, op) {
    const journalMode = String(store.pragma("journal_mode")).toLowerCase();
    const versions = store.saver.db.prepare("SELECT sqlite_version() AS v, sqlite_source_id() AS s").get();
    this.record({
      kind: "ready",
      protocol: PROTOCOL,
      pid: process.pid,
      op,
      sqlite_version: versions.v,
      sqlite_source_id: versions.s,
      journal_mode: journalMode,
      synchronous: store.synchronous(),
      // An `applied` outside the six modes would make the record unreadable.
      resolver: JOURNAL_MODES.includes(journalMode) ? store.resolver(journalMode) : null,
      operations: OPERATIONS,
    });
  }

  ack(op, i, more = {}) {
    this.record({ kind: "ack", op, i, ...more });
  }

  close() {
    closeSync(this.fd);
  }
}

// --- the operations ----------------------------------------------------------------

function* ops(stopAfter) {
  for (let i = 0; stopAfter === null || i < stopAfter; i++) yield i;
}

/** `append`: thread `main` gets `m0`, `m1`, ... one step each. The thread
 * exists once its first checkpoint does, which holds `m0` (the protocol lets
 * `main` be created with its first message). */
async function opAppend(a, config) {
  const store = new Store(a.db, config);
  let head = await store.head(THREAD);
  const acks = new Acks(a.acks);
  acks.ready(store, "append");
  for (const i of ops(a.stopAfter)) {
    head = await appendStep(store, head, `m${i}`, () => acks.ack("append", i), a.mutant);
  }
  acks.close();
  store.close();
  return 0;
}

/** The fork rule of docs/PROTOCOL.md: a rewind at every FORK_EVERY-th
 * operation of a transcript of two or more, keeping (seed + i) mod (len - 1)
 * messages. BigInt: the sum is exact at any seed. */
export function forkStep(seed, i, length) {
  if (i % FORK_EVERY === FORK_EVERY - 1 && length >= 2) {
    return { op: "rewind", k: Number((BigInt(seed) + BigInt(i)) % BigInt(length - 1)) };
  }
  return { op: "append" };
}

/** `fork`: thread `main`, rewound at seeded moments. The live transcript is
 * the head checkpoint's messages; an append is a step as in `append`, a
 * rewind a new head holding the kept prefix (`rewindStep`). */
async function opFork(a, config) {
  const store = new Store(a.db, config);
  let head = await store.head(THREAD);
  const acks = new Acks(a.acks);
  acks.ready(store, "fork");
  for (const i of ops(a.stopAfter)) {
    const step = forkStep(a.seed, i, messagesOf(head).length);
    if (step.op === "append") {
      head = await appendStep(store, head, `m${i}`, () => acks.ack("append", i), a.mutant);
    } else {
      head = await rewindStep(store, head, step.k, a.mutant);
      acks.ack("rewind", i, { k: step.k });
    }
  }
  acks.close();
  store.close();
  return 0;
}

// --- dump ------------------------------------------------------------------------

// The saver's own query for a thread's newest checkpoint (`getTuple` without
// a checkpoint id: ORDER BY checkpoint_id DESC LIMIT 1; the ids are uuid6,
// time-ordered), without its pending-writes columns, which the transcript
// does not read.
const HEAD_SQL =
  "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' " +
  "ORDER BY checkpoint_id DESC LIMIT 1";
const THREADS_SQL = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY thread_id";

/** The recovery pass. The saver is not used to read: its `getTuple` runs
 * `setup` first (PRAGMA journal_mode=WAL, CREATE TABLE), a write. The file is
 * opened read-write (a read-only connection cannot roll back a hot journal)
 * with no pragma; the rows are decoded with the saver's own serializer.
 * With several --db (dump-batch), one line per database, in the order given,
 * each from a fresh connection closed before the next one opens; every file
 * is checked before any line is printed. */
async function opDump(a) {
  for (const db of a.db) {
    if (!existsSync(db)) throw new Error(`no database at ${db}`);
  }
  const serde = new SqliteSaver(null).serde;
  const lines = [];
  for (const db of a.db) lines.push(JSON.stringify(await recoveredState(db, serde)) + "\n");
  writeAll(1, lines.join(""));
  return 0;
}

/** Writes all of `text` to descriptor `fd` (stdout may be a pipe). */
function writeAll(fd, text) {
  const buf = Buffer.from(text);
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
}

const CORRUPT = ["SQLITE_CORRUPT", "SQLITE_NOTADB"];

async function recoveredState(path, serde) {
  let db;
  try {
    db = new Database(path, { fileMustExist: true });
    return await readState(db, serde);
  } catch (e) {
    // A file SQLite calls corrupt is a finding, not a failed pass.
    if (CORRUPT.some((c) => String(e.code).startsWith(c))) return emptyState(`corrupt: ${e.message}`);
    throw e;
  } finally {
    db?.close();
  }
}

function emptyState(integrity) {
  return { protocol: PROTOCOL, integrity, sessions: [], messages: [] };
}

// The checkpointer's schema to the canonical state:
//
// session  <- a thread (a distinct thread_id of `checkpoints` in the root
//   namespace ''), sorted by id. A thread has no parent, no end and no
//   handoff: parent_session_id null, ended false, end_reason null,
//   handoff_state null. message_count is derived: the length of the head's
//   message list (the store keeps no counter).
// message  <- each message of the thread's head checkpoint (its newest, by
//   the saver's own ORDER BY checkpoint_id DESC), in list order: the
//   checkpoint's `messages` channel, decoded by the saver's serializer into
//   LangChain messages. role: the message's type mapped (human -> user,
//   ai -> assistant, system, tool); content: its text. Older checkpoints
//   (what a rewind cut, the history) and pending writes are not shown: the
//   head is the thread's state, as `getTuple` and `graph.getState` give it.
async function readState(db, serde) {
  const integrity = db.pragma("integrity_check").map((r) => r.integrity_check).join("; ");
  const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name));
  if (!tables.has("checkpoints")) {
    // Killed before setup's CREATE TABLE committed: nothing was written.
    return emptyState(integrity);
  }
  const sessions = [];
  const messages = [];
  const head = db.prepare(HEAD_SQL);
  for (const { thread_id: thread } of db.prepare(THREADS_SQL).all()) {
    const row = head.get(thread);
    const checkpoint = await serde.loadsTyped(row.type ?? "json", row.checkpoint);
    const list = checkpoint.channel_values?.messages ?? [];
    sessions.push({
      id: thread,
      parent_session_id: null,
      ended: false,
      end_reason: null,
      message_count: list.length,
      handoff_state: null,
    });
    for (const m of list) messages.push({ session_id: thread, role: role(m), content: text(m) });
  }
  return { protocol: PROTOCOL, integrity, sessions, messages };
}

function role(message) {
  const type = message.getType();
  if (!(type in ROLES)) throw new Error(`a message of type ${type}, which this adapter does not map`);
  return ROLES[type];
}

function text(message) {
  if (typeof message.content !== "string") throw new Error("a message whose content is not text");
  return message.content;
}

// --- command line ------------------------------------------------------------------

const FLAGS = {
  append: { db: {}, acks: {}, mutant: {}, "stop-after": {} },
  fork: { db: {}, acks: {}, mutant: {}, "stop-after": {}, seed: {} },
  dump: { db: { multiple: true } },
};
const REQUIRED = { append: ["db", "acks"], fork: ["db", "acks", "seed"], dump: ["db"] };

/** The operation and its flags, every path made absolute against `cwd`. */
function parse(argv, cwd) {
  const [op, ...rest] = argv;
  if (UNSUPPORTED.includes(op)) throw new Unavailable(`\`${op}\` is not implemented: LangGraph's checkpointer has no such operation`);
  if (!(op in FLAGS)) throw new Usage(`unknown operation \`${op ?? ""}\` (expected one of ${Object.keys(FLAGS).join("|")})`);
  const options = Object.fromEntries(Object.entries(FLAGS[op]).map(([k, v]) => [k, { type: "string", ...v }]));
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new Usage(e.message);
  }
  for (const flag of REQUIRED[op]) {
    if (values[flag] === undefined) throw new Usage(`${op}: --${flag} is required`);
  }
  if (values.mutant !== undefined && !MUTANTS.includes(values.mutant)) {
    throw new Usage(`unknown mutant \`${values.mutant}\` (this adapter implements ${MUTANTS.join(", ")})`);
  }
  const db = op === "dump" ? values.db.map((p) => resolve(cwd, p)) : resolve(cwd, values.db);
  return {
    op,
    db,
    acks: values.acks === undefined ? undefined : resolve(cwd, values.acks),
    mutant: values.mutant ?? null,
    stopAfter: values["stop-after"] === undefined ? null : count(values["stop-after"], "--stop-after"),
    seed: values.seed === undefined ? null : count(values.seed, "--seed"),
  };
}

function count(text, flag) {
  if (!/^\d+$/.test(text)) throw new Usage(`${flag} takes a non-negative integer, not \`${text}\``);
  return flag === "--seed" ? BigInt(text) : Number(text);
}

/** One operation: `argv` is what the driver appends after the command, `env`
 * the environment (CRASHCELLS_HOME), `cwd` the folder relative paths start
 * in. Returns the exit code; writes one line on stderr for an error. */
export async function main(argv, env, cwd) {
  let a;
  try {
    a = parse(argv, cwd);
    if (a.op === "dump") return await opDump(a);
    const config = readConfig(env, cwd);
    return await (a.op === "append" ? opAppend : opFork)(a, config);
  } catch (e) {
    const code = e instanceof Usage ? EXIT_USAGE : e instanceof Unavailable ? EXIT_UNAVAILABLE : EXIT_ERROR;
    const kind = code === EXIT_ERROR ? `${e.code ?? e.name}: ` : "";
    writeAll(2, `adapter.mjs: error: ${kind}${e.message.split("\n")[0]}\n`);
    return code;
  }
}

/** Whether node was started on this file (through a symbolic link too:
 * Node.js resolves the main module's links, so `import.meta.url` names the
 * real file), rather than imported by a warm pool. */
function startedAsProgram() {
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (startedAsProgram()) {
  if (process.argv.at(-1) === "warm-pool") {
    // The helper has set the request's environment and folder before it
    // calls back, so `main` gets them as an exec'd process would.
    await warm((argv) => main(argv, process.env, process.cwd()));
  } else {
    process.exit(await main(process.argv.slice(2), process.env, process.cwd()));
  }
}
