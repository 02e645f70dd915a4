// A mutant the library plays itself fires its cell where the store passes:
// `drop-append` (acks every append, skips every 64th call to `append`,
// from m1) on the shell store, one timed trial of cell 1 (with a kill
// window of 5 appends) each way (needs
// the crashcells binary, $CRASHCELLS or on PATH; without it, skipped);
// and the two others the library plays, `resend-on-catch-up` and `stall`,
// each doing what it names where the library without it does not.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const STORE = new URL("./stores/shell.mjs", import.meta.url).pathname;
const CRASHCELLS = process.env.CRASHCELLS ?? "crashcells";
const skip = spawnSync(CRASHCELLS, ["--version"]).status === 0 ? false : `no crashcells binary (${CRASHCELLS}): set CRASHCELLS`;

/**
 * Cell 1 of this checkout's catalog with a kill window of 5 appends, not
 * 200: drop-append drops m1, so a kill after 5 acks shows its hole as one
 * after 200 does, and each trial and the fire's confirmation take a second,
 * not five to ten (the window is where a timed kill lands, not this test's
 * subject).
 */
function shortCatalog() {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-cells-"));
  const cell = new URL("../../../cells/1-prefix-durability.toml", import.meta.url).pathname;
  const text = readFileSync(cell, "utf8").replace(/^window = \d+$/m, "window = 5");
  writeFileSync(join(dir, "1-prefix-durability.toml"), text);
  return dir;
}

/** One timed trial of cell 1 (a short window) on the shell store: its result. */
function cell1(...more) {
  const cwd = mkdtempSync(join(tmpdir(), "sdk-node-run-"));
  const args = ["run", "--child", `node ${STORE}`, "--cell", "prefix-durability", "--leg", "default", "--kill", "timed"];
  args.push("--catalog", shortCatalog());
  args.push("--trials", "1", "--seed", "3", "--refire", "0", "--format", "json", "--out", "r.json", ...more);
  const done = spawnSync(CRASHCELLS, args, { cwd, encoding: "utf8" });
  assert.ok([0, 1].includes(done.status), done.stderr);
  return JSON.parse(readFileSync(join(cwd, "r.json"), "utf8")).results[0];
}

test("the library's drop-append mutant fires cell 1 where the store passes", { skip }, () => {
  assert.equal(cell1().verdict, "pass");
  const fired = cell1("--mutant", "drop-append");
  assert.equal(fired.verdict, "fire", fired.reason);
  assert.match(fired.fingerprint, /^prefix-durability\/\w+\/\w+\/timed\/hole$/);
});

/** The shell store run directly (no driver): its exit code, signal and folder. */
function direct(dir, args, timeout = 60000) {
  const done = spawnSync("node", [STORE, ...args], { encoding: "utf8", timeout, cwd: dir });
  return { code: done.status, signal: done.signal, stderr: done.stderr };
}

function lines(path) {
  return readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

test("resend-on-catch-up sends again what the transport holds; the library's catch-up does not", () => {
  for (const [mutant, sends] of [[[], 1], [["--mutant", "resend-on-catch-up"], 2]]) {
    const dir = mkdtempSync(join(tmpdir(), "sdk-node-outbox-"));
    const db = join(dir, "s.db");
    // A transport that cannot be written (a folder): o0 is left attempting.
    mkdirSync(join(dir, "folder"));
    const failed = direct(dir, ["deliver", "--db", db, "--acks", join(dir, "a"), "--transport", join(dir, "folder"), "--stop-after", "1"]);
    assert.equal(failed.code, 3, failed.stderr);
    // The send had reached the provider before the crash.
    writeFileSync(join(dir, "t"), '{"key":"o0","payload":"effect of o0"}\n');
    const r = direct(dir, ["catch-up", "--db", db, "--transport", join(dir, "t"), ...mutant]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(lines(join(dir, "t")).length, sends, mutant.join(" "));
  }
});

test("stall acks five appends, then blocks until killed", () => {
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-stall-"));
  const r = direct(dir, ["append", "--db", join(dir, "s.db"), "--acks", join(dir, "a"), "--stop-after", "9", "--mutant", "stall"], 5000);
  assert.equal(r.signal, "SIGTERM", r.stderr);
  assert.match(r.stderr, /stall mutant: blocking forever after 5 acks/);
  assert.deepEqual(lines(join(dir, "a")).slice(1).map((a) => a.i), [0, 1, 2, 3, 4]);
});
