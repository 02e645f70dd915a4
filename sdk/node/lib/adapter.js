// The adapter class: the library's base class, and the check of a class
// before any operation runs (sdk/API.md, "Methods"). Which operations the
// child lists in its ready record follows from the methods the class
// defines, so a misspelt method is an error with a did-you-mean, never a
// silently missing operation.

import { RuleError } from "./errors.js";
import { closest } from "./names.js";

const METHOD_RULE = "one method per operation, named as sdk/API.md names them; helpers start with _";
// The instance methods the API knows; `ackNow` is the base class's own.
const METHODS = [
  "open", "journal", "close", "createSession", "append", "rotate", "park", "claim",
  "rewind", "liveLength", "record", "attempting", "delivered", "pending", "state", "ackNow",
];
const STATICS = ["mutants", "storeErrors", "preload", "launchers"];
const REQUIRED = ["open", "journal", "append", "state"];
const TOGETHER = [["park", "claim"], ["record", "attempting", "delivered", "pending"]];
// Mutants the library implements itself for a class that names them.
export const LIBRARY_MUTANTS = ["stall", "drop-append", "resend-on-catch-up"];

/** Where the library puts the running operation's early ack on an instance. */
export const ACK_NOW = Symbol("crashcells ackNow");

/** The base class of an adapter: what the library sets on each instance
 * (`op`, `mutant`, `writer`, `index`) and `ackNow()` for a mutant that acks inside its
 * transaction. Extending it is optional; the library sets the same on any class. */
export class Store {
  /** The operation being run (`append`, `rotate`, ...). */
  op = null;
  /** The name given with --mutant, or null. */
  mutant = null;
  /** Which writer this process is: co-append's --writer (r0, r1, ...), null
   * for an operation with one writer. Ids the store makes must be unique
   * per writer: two writers append to one session at once (cell 6). */
  writer = null;
  /** The current acked step's index (its ack's i). */
  index = 0;

  /** Writes the running operation's ack now, inside the store's
   * transaction (the `ack-before-commit` mutant); the library does not
   * write it again after the method returned. */
  ackNow() {
    this[ACK_NOW]?.();
  }
}

/** What `run` knows of an adapter class: its name, the operations it
 * implements (the ready record's `operations`), and its mutants. Throws a
 * RuleError for a class that breaks a rule of the API. */
export function describe(Class) {
  if (typeof Class !== "function" || Class.prototype === undefined) {
    throw new RuleError("run()", `was given ${typeof Class}, not an adapter class`, "run(MyStore) takes the class");
  }
  const name = Class.name || "the adapter";
  const has = methodNames(Class, name);
  for (const m of REQUIRED) {
    if (!has.has(m)) throw new RuleError(`${name}.${m}()`, "is missing", `every adapter defines ${REQUIRED.join(", ")}`);
  }
  for (const group of TOGETHER) {
    const some = group.filter((m) => has.has(m));
    if (some.length > 0 && some.length < group.length) {
      const missing = group.filter((m) => !has.has(m));
      throw new RuleError(`${name}.${missing[0]}()`, `is missing beside ${some.join(", ")}`, `${group.join(", ")} come together`);
    }
  }
  return { name, operations: operations(has, launchers(Class, name)), mutants: mutants(Class, name), has };
}

/** The instance methods of the class and its ancestors up to the base
 * class, and its static members, each checked against the API's names. */
function methodNames(Class, name) {
  const has = new Set();
  for (let p = Class.prototype; p && p !== Store.prototype && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const key of Object.getOwnPropertyNames(p)) {
      if (key === "constructor" || key.startsWith("_")) continue;
      if (!METHODS.includes(key)) unknown(`${name}.${key}`, key, METHODS);
      has.add(key);
    }
  }
  for (let c = Class; c && c !== Store && c !== Function.prototype; c = Object.getPrototypeOf(c)) {
    for (const key of Object.getOwnPropertyNames(c)) {
      if (["length", "name", "prototype"].includes(key) || key.startsWith("_")) continue;
      if (!STATICS.includes(key)) unknown(`${name}.${key} (static)`, key, STATICS);
    }
  }
  return has;
}

function unknown(where, key, known) {
  const hint = closest(key, known);
  const what = hint ? `is no name of the adapter API (did you mean \`${hint}\`?)` : "is no name of the adapter API";
  throw new RuleError(where, what, METHOD_RULE);
}

/** The ready record's `operations`, from the methods defined. `co-append`
 * is the store's own `append` run by several writers at once (cell 6):
 * every store offers it, and cell 6 judges what its append does then. */
function operations(has, offered) {
  const ops = ["append", "co-append", "dump", "dump-batch"];
  if (has.has("rotate")) ops.push("rotate", "rotate-shapes");
  if (has.has("park")) ops.push("park", "claim");
  if (has.has("rewind")) ops.push("fork");
  if (has.has("record")) ops.push("deliver", "catch-up", "catch-up-batch");
  if (offered.includes("warm-pool")) ops.push("warm-pool");
  return ops;
}

/** Which launchers the ready record offers (`static launchers`, by
 * default the warm pool): a store that cannot be started ahead of need
 * leaves it out. Node.js cannot fork, so there is no fork server to offer. */
function launchers(Class, name) {
  const list = Class.launchers ?? ["warm-pool"];
  if (!Array.isArray(list) || !list.every((l) => l === "warm-pool")) {
    throw new RuleError(`${name}.launchers`, `is ${JSON.stringify(list)}`, "Node.js offers [\"warm-pool\"] or []: it cannot fork (§9)");
  }
  return list;
}

function mutants(Class, name) {
  const list = Class.mutants ?? [];
  if (!Array.isArray(list) || !list.every((m) => typeof m === "string")) {
    throw new RuleError(`${name}.mutants`, "is not an array of names", "a class names the mutants it implements");
  }
  return list;
}
