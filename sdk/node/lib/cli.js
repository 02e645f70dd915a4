// The command line of every operation (docs/PROTOCOL.md §2): the operation
// word, then its flags, each as two arguments (`--db PATH`, never
// `--db=PATH`) in no guaranteed order. Paths are made absolute against the
// folder the operation runs in, so that nothing depends on a later chdir.

import { resolve } from "node:path";

import { UsageError } from "./errors.js";

// Each operation's flags: `true` is required, `false` optional; `many` may
// repeat (dump-batch, catch-up-batch).
const FLAGS = {
  append: { db: true, acks: true, mutant: false, "stop-after": false },
  rotate: { db: true, acks: true, mutant: false, "stop-after": false, shapes: false },
  park: { db: true, session: true },
  claim: { db: true, acks: true, session: true, barrier: true, claimant: true, mutant: false },
  fork: { db: true, acks: true, seed: true, mutant: false, "stop-after": false },
  deliver: { db: true, acks: true, transport: true, mutant: false, "stop-after": false },
  "catch-up": { db: true, transport: true, mutant: false },
  "co-append": { db: true, acks: true, writer: true, barrier: true, mutant: false, "stop-after": false },
  dump: { db: true },
};
const MANY = { dump: ["db"], "catch-up": ["db", "transport"] };
const PATHS = ["db", "acks", "barrier", "transport"];

/** Every operation word of the protocol. */
export const OPERATIONS = Object.keys(FLAGS);

/** The operation and its flags: `{ op, db, acks, mutant, stopAfter, seed,
 * session, claimant, barrier, transport, shapes, writer }`, where `db` and
 * `transport` are arrays for `dump` and `catch-up`. */
export function parseArgs(argv, cwd) {
  const [op, ...rest] = argv;
  if (!(op in FLAGS)) {
    throw new UsageError(`unknown operation \`${op ?? ""}\` (expected one of ${OPERATIONS.join("|")})`);
  }
  const values = flagValues(op, rest);
  for (const [flag, required] of Object.entries(FLAGS[op])) {
    if (required && values[flag] === undefined) throw new UsageError(`${op}: --${flag} is required`);
  }
  for (const flag of PATHS) {
    if (values[flag] === undefined) continue;
    values[flag] = Array.isArray(values[flag]) ? values[flag].map((p) => resolve(cwd, p)) : resolve(cwd, values[flag]);
  }
  if (op === "catch-up" && values.db.length !== values.transport.length) {
    throw new UsageError("catch-up: --db and --transport come in pairs");
  }
  // The writer's name starts every content it appends (`r1-m0`): an empty
  // one would make two writers' messages look alike.
  if (values.writer !== undefined && values.writer === "") throw new UsageError("co-append: --writer needs a name");
  if (values.shapes !== undefined && values.shapes !== "on") {
    throw new UsageError(`rotate: --shapes takes \`on\`, not \`${values.shapes}\``);
  }
  return {
    op,
    db: values.db,
    acks: values.acks,
    mutant: values.mutant ?? null,
    stopAfter: values["stop-after"] === undefined ? null : count(values["stop-after"], "--stop-after"),
    seed: values.seed === undefined ? null : BigInt(count(values.seed, "--seed", true)),
    session: values.session,
    claimant: values.claimant,
    barrier: values.barrier,
    transport: values.transport,
    shapes: values.shapes === "on",
    writer: values.writer,
  };
}

function flagValues(op, rest) {
  const values = {};
  const many = MANY[op] ?? [];
  for (let i = 0; i < rest.length; i += 2) {
    const word = rest[i];
    const name = word.startsWith("--") ? word.slice(2) : null;
    if (name === null || !(name in FLAGS[op])) throw new UsageError(`${op}: unknown argument \`${word}\``);
    if (i + 1 >= rest.length) throw new UsageError(`${op}: ${word} needs a value`);
    if (many.includes(name)) (values[name] ??= []).push(rest[i + 1]);
    else if (values[name] !== undefined) throw new UsageError(`${op}: ${word} given twice`);
    else values[name] = rest[i + 1];
  }
  return values;
}

/** A non-negative integer flag; the seed as text, for an exact BigInt. */
function count(text, flag, big = false) {
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} takes a non-negative integer, not \`${text}\``);
  return big ? text : Number(text);
}
