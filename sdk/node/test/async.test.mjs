// Every method may be async: the library awaits each before its ack. The
// shell store with every method an async function passes child-check and
// its cell-1 sweep; with an append whose promise resolves having written
// nothing, child-check refuses it and cell 1 fires (the acked appends are
// not there), never passes. Needs the crashcells binary: $CRASHCELLS, else
// `crashcells` on PATH (the Rust suite passes the one it built).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const STORE = new URL("./stores/shell.mjs", import.meta.url).pathname;
const CRASHCELLS = process.env.CRASHCELLS ?? "crashcells";
const found = spawnSync(CRASHCELLS, ["--version"]).status === 0;
const skip = found ? false : `no crashcells binary (${CRASHCELLS}): set CRASHCELLS`;

function crashcells(broken, args) {
  const child = `env SHELL_STORE_BREAK=${broken} node ${STORE}`;
  const cwd = mkdtempSync(join(tmpdir(), "sdk-node-async-"));
  return spawnSync(CRASHCELLS, [...args, "--child", child], { cwd, encoding: "utf8", timeout: 300_000 });
}

test("an async store passes child-check; one whose append writes nothing is refused", { skip }, () => {
  const only = ["child-check", "--only", "append-state,co-append-state"];
  const good = crashcells("async", only);
  assert.equal(good.status, 0, good.stdout + good.stderr);
  const bad = crashcells("async-nowrite", only);
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /^FAIL +append-state +acked append m0 was lost/m);
});

test("cell 1 passes the async store and fires on one that writes nothing", { skip }, () => {
  const gate = ["run", "--cell", "1", "--leg", "default", "--seed", "11"];
  const good = crashcells("async", [...gate, "--kill", "syscall", "--points", "3"]);
  assert.equal(good.status, 0, good.stdout + good.stderr);
  const bad = crashcells("async-nowrite", [...gate, "--kill", "timed", "--trials", "1"]);
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /1 fire/);
});
