// A mutant the library plays itself fires its cell where the store passes:
// `drop-append` (acks every append, skips every 64th call to `append`,
// from m1) on the shell store, one timed trial of cell 1 each way. Needs
// the crashcells binary ($CRASHCELLS, else on PATH); without it, skipped.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const STORE = new URL("./stores/shell.mjs", import.meta.url).pathname;
const CRASHCELLS = process.env.CRASHCELLS ?? "crashcells";
const skip = spawnSync(CRASHCELLS, ["--version"]).status === 0 ? false : `no crashcells binary (${CRASHCELLS}): set CRASHCELLS`;

/** One timed trial of cell 1 on the shell store: its result. */
function cell1(...more) {
  const cwd = mkdtempSync(join(tmpdir(), "sdk-node-run-"));
  const args = ["run", "--child", `node ${STORE}`, "--cell", "prefix-durability", "--leg", "default", "--kill", "timed"];
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
