// LangGraph.js's SQLite checkpointer (`SqliteSaver` of
// @langchain/langgraph-checkpoint-sqlite, on better-sqlite3) behind the
// crashcells child protocol (docs/PROTOCOL.md), on the Node.js library
// (sdk/node): this file is the store's part alone; the library owns the
// command line, the config home, the ready record, the acks, the fork rule,
// the canonical dump and the warm pool.
//
// An integration, not a re-implementation: every write goes through the
// saver's public API (`put`, `putWrites`, `getTuple`), with the saver's own
// connection, statements and journal mode (its `setup` sets WAL); nothing of
// it is patched. The adapter plays the part of LangGraph's Pregel loop, which
// is what calls a checkpointer: a thread is a chain of checkpoints (snapshots
// of the graph's channels), and a transcript is the `messages` channel of
// the thread's newest checkpoint. README.md says how each operation maps.
//
// Crash model: the process may be killed with SIGKILL at any instant. Each
// `put` is one INSERT (one autocommit transaction), each `putWrites` one
// transaction; a method returns (and the library acks) only once the
// checkpoint that holds its step is committed.
//
// `rotate`, `park`, `claim`, `deliver` and `catch-up` are left out (the
// checkpointer has no rotation, handoff or outbox): the library answers 69.

import { randomUUID } from "node:crypto";

import Database from "better-sqlite3";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { HumanMessage } from "@langchain/core/messages";

import { Store, run } from "../../sdk/node/index.js";

const SYNC_LEVELS = ["off", "normal", "full", "extra"];
// The node whose task writes each appended message: the adapter's stand-in
// for a graph's agent node (stored in the pending writes and the
// checkpoint's `versions_seen`, never shown by `dump`).
const NODE = "agent";
// LangChain's message types to the protocol's roles.
const ROLES = { human: "user", ai: "assistant", system: "system", tool: "tool" };

// The saver's own query for a thread's newest checkpoint (`getTuple` without
// a checkpoint id: ORDER BY checkpoint_id DESC LIMIT 1; the ids are uuid6,
// time-ordered), without its pending-writes columns, which the transcript
// does not read.
const HEAD_SQL =
  "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' " +
  "ORDER BY checkpoint_id DESC LIMIT 1";
const THREADS_SQL = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY thread_id";

class LangGraphStore extends Store {
  static mutants = ["ack-before-commit", "torn-fork"];

  /** One SqliteSaver on the database, opened as an application opens it.
   * The first read is also the saver's lazy `setup` (WAL, tables): the
   * journal mode is known only after it, so it runs here, before `ready`.
   * The saver runs WAL whatever is asked: the store imposes the mode. */
  async open(db, config) {
    this.saver = SqliteSaver.fromConnString(db);
    this.head = await this.saver.getTuple({ configurable: { thread_id: "main" } });
    const mode = String(this._pragma("journal_mode")).toLowerCase();
    let why = "LangGraph's SqliteSaver sets journal_mode=WAL in its setup (run on first use), whatever is asked";
    if (mode !== "wal") why = `LangGraph's SqliteSaver asks for WAL in its setup; SQLite ran ${mode} here`;
    if (config.journalMode !== null) why += `; the config asked for ${config.journalMode}`;
    if (config.synchronous !== null) {
      why += `; the saver never sets synchronous, which runs at better-sqlite3's default (${this._synchronous()})`;
    }
    const { journalMode: requested, synchronous } = config;
    return { requested, applied: mode, synchronous, decidedBy: "store", reason: why };
  }

  journal() {
    const v = this.saver.db.prepare("SELECT sqlite_version() AS v, sqlite_source_id() AS s").get();
    const journalMode = String(this._pragma("journal_mode")).toLowerCase();
    return { journalMode, synchronous: this._synchronous(), sqliteVersion: v.v, sqliteSourceId: v.s };
  }

  close() {
    this.saver.db.close();
  }

  /** One superstep of a one-node graph whose node emits the message, as the
   * Pregel loop saves it: the task's write as a pending write of the head
   * (`putWrites`, one transaction), then the next checkpoint with the write
   * applied (`put`, one INSERT). A thread without a checkpoint gets its
   * first instead: the loop's "input" checkpoint holding `m0`, one `put`
   * (the protocol lets `main` be created with its first message). With
   * `ack-before-commit`, the ack comes once the pending write is saved. */
  async append(session, role, content) {
    const message = new HumanMessage({ content, id: randomUUID() });
    if (this.head !== undefined) await this.saver.putWrites(this.head.config, [["messages", [message]]], randomUUID());
    if (this.mutant === "ack-before-commit") this.ackNow();
    await this._put([...messagesOf(this.head), message], this.head === undefined ? "input" : "loop");
  }

  /** A rewind keeping the first `keep` messages, as `graph.updateState(head,
   * { messages: [RemoveMessage(...) for each cut one] })` saves it: one new
   * head, child of the current one, holding the kept prefix (one `put`). The
   * cut messages stay in older checkpoints. With `torn-fork`, one
   * checkpoint per removed message, last first. */
  async rewind(session, keep) {
    const messages = messagesOf(this.head);
    const torn = this.mutant === "torn-fork";
    for (let n = 1; n <= (torn ? messages.length - keep : 1); n++) {
      await this._put(messages.slice(0, torn ? messages.length - n : keep), "update");
    }
  }

  liveLength() {
    return messagesOf(this.head).length;
  }

  /** The recovery pass, without the saver: its `getTuple` runs `setup` first
   * (PRAGMA journal_mode=WAL, CREATE TABLE), a write. The file is opened
   * read-write, no pragma, and the saver's own query is decoded with its
   * own serializer. A thread is a session (no parent, end or handoff; its
   * message count derived), its head's messages its transcript. */
  async state(path) {
    const db = new Database(path, { fileMustExist: true });
    try {
      const integrity = db.pragma("integrity_check").map((r) => r.integrity_check).join("; ");
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name);
      // Killed before setup's CREATE TABLE committed: nothing was written.
      if (!tables.includes("checkpoints")) return { sessions: [], messages: [], integrity };
      const serde = new SqliteSaver(null).serde;
      const sessions = [];
      const messages = [];
      for (const { thread_id: id } of db.prepare(THREADS_SQL).all()) {
        const row = db.prepare(HEAD_SQL).get(id);
        const checkpoint = await serde.loadsTyped(row.type ?? "json", row.checkpoint);
        sessions.push({ id });
        for (const m of checkpoint.channel_values?.messages ?? []) messages.push({ sessionId: id, role: roleOf(m), content: textOf(m) });
      }
      return { sessions, messages, integrity };
    } finally {
      db.close();
    }
  }

  /** Saves the next checkpoint of the thread holding `messages`, as the
   * loop makes it after a step: a new uuid6 id (time-ordered: the newest is
   * the head), the `messages` channel's version bumped. */
  async _put(messages, source) {
    const base = this.head?.checkpoint ?? emptyCheckpoint();
    const step = (this.head?.metadata.step ?? -2) + 1;
    const version = (base.channel_versions.messages ?? 0) + 1;
    const checkpoint = {
      v: base.v,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { ...base.channel_values, messages },
      channel_versions: { ...base.channel_versions, messages: version },
      versions_seen: { ...base.versions_seen, [NODE]: { messages: version } },
    };
    const metadata = { source, step, parents: {} };
    const parent = this.head?.config ?? { configurable: { thread_id: "main", checkpoint_ns: "" } };
    const config = await this.saver.put(parent, checkpoint, metadata);
    this.head = { config, checkpoint, metadata };
  }

  _pragma(name) {
    return this.saver.db.pragma(name, { simple: true });
  }

  _synchronous() {
    return SYNC_LEVELS[this._pragma("synchronous")] ?? null;
  }
}

/** The transcript a checkpoint tuple holds: its `messages` channel. */
function messagesOf(tuple) {
  return tuple?.checkpoint.channel_values.messages ?? [];
}

function roleOf(message) {
  const type = message.getType();
  if (!(type in ROLES)) throw new Error(`a message of type ${type}, which this adapter does not map`);
  return ROLES[type];
}

function textOf(message) {
  if (typeof message.content !== "string") throw new Error("a message whose content is not text");
  return message.content;
}

await run(LangGraphStore);
