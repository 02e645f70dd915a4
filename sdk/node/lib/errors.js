// The library's errors and the exit code each one ends the process with
// (docs/PROTOCOL.md §2): a bad command line or config home, and an adapter
// that breaks a rule of the API (sdk/API.md, "Errors"), exit 2; an
// operation the store does not implement, 69; the store's own failure, 3.
// Each is one line on stderr: the driver shows the last lines of a child's
// stderr in its reasons.

export const EXIT_OK = 0;
export const EXIT_USAGE = 2;
export const EXIT_STORE = 3;
export const EXIT_LOST = 10;
export const EXIT_UNAVAILABLE = 69;

/** A command line or config home the library refuses: exit 2. */
export class UsageError extends Error {}

/** An operation the adapter does not implement: exit 69, before anything is written. */
export class Unavailable extends Error {}

/** An adapter that breaks a rule of the API: exit 2, naming the rule and the method. */
export class RuleError extends Error {
  constructor(method, what, rule) {
    super(`${method} ${what} (rule: ${rule})`);
    this.method = method;
    this.rule = rule;
  }
}

/** The store's own failure in an operation (an I/O or SQLite error): exit 3.
 * The driver judges it as the store failing the operation (§6). */
export class StoreFailure extends Error {
  constructor(method, cause) {
    const code = typeof cause?.code === "string" ? `${cause.code}: ` : "";
    super(`${method} failed: ${code}${firstLine(cause)}`);
    this.cause = cause;
  }
}

/** Thrown by `state()` for a file the SQLite library calls corrupt: the dump
 * is the empty state with `integrity` "corrupt: <message>", a finding. */
export class Corrupt extends Error {}

/** The first line of an error's message (one line on stderr per error). */
export function firstLine(e) {
  const text = e instanceof Error ? `${e.message}` : `${e}`;
  return text.split("\n")[0];
}

/** Whether `e` is the store's own failure rather than a bug of the adapter:
 * an errno error of Node.js (EIO, ENOSPC, ...), an error with a SQLite result
 * code (better-sqlite3 and node:sqlite say `SQLITE_...`), an instance of a
 * class the adapter names in `static storeErrors`, or an error whose `cause`
 * is one of these (an ORM's own class wrapping the driver's error). */
export function isStoreError(e, storeErrors = [], seen = new Set()) {
  if (!(e instanceof Error) || seen.has(e)) return false;
  seen.add(e);
  if (storeErrors.some((c) => e instanceof c)) return true;
  const code = typeof e.code === "string" ? e.code : "";
  if (code.startsWith("SQLITE_") || code.startsWith("ERR_SQLITE") || typeof e.errno === "number") return true;
  return isStoreError(e.cause, storeErrors, seen);
}

/** Whether `e` says the database file is corrupt (a finding, not a failed pass). */
export function isCorrupt(e) {
  if (e instanceof Corrupt) return true;
  const code = typeof e?.code === "string" ? e.code : "";
  if (code.startsWith("SQLITE_CORRUPT") || code.startsWith("SQLITE_NOTADB")) return true;
  const text = `${e?.message ?? ""}`;
  return /database disk image is malformed|file is not a database/.test(text);
}
