// What a child on the library answers for the protocol's error cases and
// for an adapter that breaks a rule of the API: exactly one line on stderr
// naming the rule and the method, and the exit code (2 for a rule or the
// command line, 3 for the store's own failure, 69 for an operation the
// class does not implement), with nothing written to the ack journal.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { isStoreError } from "../lib/errors.js";

const STORE = new URL("./stores/shell.mjs", import.meta.url).pathname;

/** Runs the shell store with `args`, broken as `broken` says; its exit
 * code, its stderr's lines and its folder. */
function child(args, { broken, dir = mkdtempSync(join(tmpdir(), "sdk-node-")), env = {} } = {}) {
  const extra = broken ? { SHELL_STORE_BREAK: broken } : {};
  const done = spawnSync("node", [STORE, ...args(dir)], { env: { ...process.env, ...extra, ...env }, encoding: "utf8" });
  return { code: done.status, lines: done.stderr.split("\n").filter((l) => l !== ""), dir, stdout: done.stdout };
}

const append = (dir) => ["append", "--db", join(dir, "s.db"), "--acks", join(dir, "acks"), "--stop-after", "2"];

function oneLine(r, code, ...patterns) {
  assert.equal(r.code, code, r.lines.join("\n"));
  assert.equal(r.lines.length, 1, r.lines.join("\n"));
  for (const p of patterns) assert.match(r.lines[0], p);
}

test("a misspelt method: exit 2 before anything is written, with a did-you-mean", () => {
  const r = child(append, { broken: "misspelt" });
  oneLine(r, 2, /ShellStore\.apend is no name of the adapter API \(did you mean `append`\?\)/, /rule: /);
  assert.equal(existsSync(join(r.dir, "acks")), false);
});

test("a state() of the wrong shape: dump exits 2 naming state() and the rule", () => {
  const r = child(append);
  assert.equal(r.code, 0, r.lines.join("\n"));
  const d = child((dir) => ["dump", "--db", join(dir, "s.db")], { broken: "shape", dir: r.dir });
  oneLine(d, 2, /ShellStore\.state\(\) returned messages\[0\] without "role" \(rule: §4 canonical dump\)/);
  assert.equal(d.stdout, "");
});

test("an operation that throws: exit 2 naming the method, after the ready record", () => {
  const r = child(append, { broken: "throws" });
  oneLine(r, 2, /ShellStore\.append\(\) threw TypeError: /, /rule: a method returns once its change is committed/);
  const journal = readFileSync(join(r.dir, "acks"), "utf8").trim().split("\n");
  assert.deepEqual(journal.map((l) => JSON.parse(l).kind), ["ready"]);
});

test("claim() must say won or lost", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-"));
  const db = join(dir, "s.db");
  assert.equal(child(() => ["park", "--db", db, "--session", "h"], { dir }).code, 0);
  writeFileSync(join(dir, "barrier"), "");
  const claim = ["claim", "--db", db, "--acks", join(dir, "a"), "--session", "h", "--barrier", join(dir, "barrier"), "--claimant", "r0"];
  const r = child(() => claim, { broken: "claim", dir });
  oneLine(r, 2, /ShellStore\.claim\(\) returned "yes", not true \(won\) or false \(lost\)/);
});

test("the store's own failure exits 3 with its words; a missing database for dump too", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-"));
  const r = child(() => ["append", "--db", join(dir, "no", "such", "s.db"), "--acks", join(dir, "a")], { dir });
  oneLine(r, 3, /ShellStore\.open\(\) failed: sqlite3: /);
  oneLine(child(() => ["dump", "--db", join(dir, "s.db"), "--db", join(dir, "t.db")]), 3, /no database at /);
});

test("the command line and the config home: exit 2, one line", () => {
  oneLine(child(() => ["append", "--db", "x"]), 2, /append: --acks is required/);
  oneLine(child(() => ["apend"]), 2, /unknown operation `apend`/);
  oneLine(child((d) => [...append(d), "--mutant", "split-rotation"]), 2, /unknown mutant `split-rotation` \(ShellStore implements: drop-append, stall, resend-on-catch-up\)/);
  const home = mkdtempSync(join(tmpdir(), "sdk-node-home-"));
  writeFileSync(join(home, "config.toml"), '[database]\njournal_mode = "wall"\n');
  const r = child(append, { env: { CRASHCELLS_HOME: home } });
  oneLine(r, 2, /config .*config\.toml: unknown journal_mode `wall`/);
  assert.equal(existsSync(join(r.dir, "acks")), false, "refused before any ready record");
});

test("an operation the class does not implement exits 69 before anything is written", () => {
  const r = child((dir) => ["rotate", "--db", join(dir, "s.db"), "--acks", join(dir, "a")], { broken: "no-rotate" });
  oneLine(r, 69, /`rotate` is not implemented by ShellStore/);
  assert.equal(existsSync(join(r.dir, "s.db")), false);
});

test("--stop-after, acks after effects, and the dump of what they left", () => {
  const r = child((dir) => ["fork", "--db", join(dir, "s.db"), "--acks", join(dir, "a"), "--seed", "8", "--stop-after", "9"]);
  assert.equal(r.code, 0, r.lines.join("\n"));
  const acks = readFileSync(join(r.dir, "a"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(acks.slice(1).map((a) => (a.op === "rewind" ? `keep ${a.k}` : `m${a.i}`)), ["m0", "m1", "m2", "keep 1", "m4", "m5", "m6", "keep 0", "m8"]);
  const d = child((dir) => ["dump", "--db", join(dir, "s.db")], { dir: r.dir });
  const live = JSON.parse(d.stdout).messages.filter((m) => m.active !== false).map((m) => m.content);
  assert.deepEqual(live, ["m8"]);
});

test("an ORM's error whose cause is SQLite's is the store's; without such a cause it is not", () => {
  class OrmError extends Error {}
  const busy = Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
  assert.equal(isStoreError(new OrmError("query failed", { cause: busy })), true);
  assert.equal(isStoreError(new OrmError("query failed", { cause: new TypeError("x") })), false);
  assert.equal(isStoreError(new OrmError("query failed")), false);
  const loop = new OrmError("a cause that is itself");
  loop.cause = loop;
  assert.equal(isStoreError(loop), false);
});
