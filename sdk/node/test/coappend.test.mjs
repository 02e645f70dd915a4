// `co-append` (docs/PROTOCOL.md §2, cell 6) on the shell store, without the
// driver: two writers wait at a barrier the test holds, append nothing
// until it is dropped, then each appends its own numbered messages, acked
// in its order, and the store shows all of them once at contiguous
// positions. With the barrier ignored, or a writer's name left out of its
// contents, a check below fails.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const STORE = new URL("./stores/shell.mjs", import.meta.url).pathname;
// Every wait here has a deadline: a writer that hangs fails the test.
const DEADLINE_MS = 60000;
const APPENDS = 4;

function lines(path) {
  return readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

/** Resolves with the process's exit code; kills it at the deadline. */
function exited(child) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`pid ${child.pid} outlived ${DEADLINE_MS} ms`));
    }, DEADLINE_MS);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
  });
}

/** A process holding an exclusive flock on `path` until its stdin closes,
 * once it says it holds it. */
async function holdExclusive(path) {
  const holder = spawn("flock", ["--exclusive", path, "sh", "-c", "echo held; cat >/dev/null"], { stdio: ["pipe", "pipe", "inherit"] });
  await new Promise((resolve, reject) => {
    holder.stdout.once("data", resolve);
    holder.once("exit", (code) => reject(new Error(`flock(1) exited ${code} before holding the barrier`)));
  });
  return holder;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("co-append: writers wait at the barrier, then each appends its own messages, acked in order", async () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-coappend-"));
  const db = join(dir, "s.db");
  const barrier = join(dir, "barrier");
  writeFileSync(barrier, "");
  const holder = await holdExclusive(barrier);
  const writers = ["r0", "r1"].map((w) =>
    spawn("node", [STORE, "co-append", "--db", db, "--acks", join(dir, w), "--writer", w, "--barrier", barrier, "--stop-after", `${APPENDS}`], {
      stdio: ["ignore", "ignore", "inherit"],
    }),
  );
  const ends = Promise.all(writers.map(exited));
  try {
    // Both are ready (their records written) yet neither may append while the barrier is held.
    for (let waited = 0; !["r0", "r1"].every((w) => ready(join(dir, w))); waited += 50) {
      assert.ok(waited < DEADLINE_MS, "the writers never wrote their ready records");
      await sleep(50);
    }
    await sleep(500);
    for (const w of ["r0", "r1"]) assert.deepEqual(lines(join(dir, w)).map((l) => l.kind), ["ready"], `${w} appended through the held barrier`);
  } finally {
    holder.stdin.end();
    await exited(holder);
  }
  assert.deepEqual(await ends, [0, 0]);

  for (const w of ["r0", "r1"]) {
    const [head, ...acks] = lines(join(dir, w));
    assert.equal(head.op, "co-append");
    assert.ok(head.operations.includes("co-append"));
    assert.deepEqual(acks, [...Array(APPENDS).keys()].map((i) => ({ kind: "ack", op: "co-append", i })));
  }
  const dump = spawnSync("node", [STORE, "dump", "--db", db], { encoding: "utf8", timeout: DEADLINE_MS });
  assert.equal(dump.status, 0, dump.stderr);
  const state = JSON.parse(dump.stdout);
  const main = state.messages.filter((m) => m.session_id === "main");
  for (const w of ["r0", "r1"]) {
    const mine = main.filter((m) => m.content.startsWith(`${w}-`)).map((m) => m.content);
    assert.deepEqual(mine, [...Array(APPENDS).keys()].map((i) => `${w}-m${i}`));
  }
  // The store's own order, carried into the dump: one place each, no hole.
  assert.deepEqual(main.map((m) => m.position), [...Array(2 * APPENDS).keys()]);
  assert.equal(state.sessions.find((s) => s.id === "main").message_count, 2 * APPENDS);
});

function ready(path) {
  try {
    return readFileSync(path, "utf8").includes('"kind":"ready"');
  } catch {
    return false;
  }
}

test("co-append without --writer or --barrier is a usage error, exit 2", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-coappend-"));
  for (const [missing, args] of [
    ["--writer", ["--barrier", join(dir, "b")]],
    ["--barrier", ["--writer", "r0"]],
  ]) {
    const done = spawnSync("node", [STORE, "co-append", "--db", join(dir, "s.db"), "--acks", join(dir, "a"), ...args], { encoding: "utf8" });
    assert.equal(done.status, 2, done.stderr);
    assert.match(done.stderr, new RegExp(`co-append: ${missing} is required`));
  }
});
