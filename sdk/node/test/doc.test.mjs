// The small store of docs/adapters/node.md, as the page shows it, passes
// child-check: the page cannot drift from the library. It runs on
// better-sqlite3 as the LangGraph example installs it
// (examples/langgraph-store/fetch) and on the crashcells binary
// ($CRASHCELLS, else on PATH); without either it is skipped.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const ROOT = new URL("../../../", import.meta.url).pathname;
const SQLITE = join(ROOT, "examples/langgraph-store/node_modules/better-sqlite3");
const CRASHCELLS = process.env.CRASHCELLS ?? "crashcells";
const found = spawnSync(CRASHCELLS, ["--version"]).status === 0;
const skip = !found ? `no crashcells binary (${CRASHCELLS})` : !existsSync(SQLITE) ? "better-sqlite3 is not installed (examples/langgraph-store/fetch)" : false;

/** The page's first ```js block, in a folder where `crashcells` and
 * `better-sqlite3` resolve as they would after `npm install`. */
function pageStore() {
  const page = readFileSync(join(ROOT, "docs/adapters/node.md"), "utf8");
  const code = /```js\n([\s\S]*?)```/.exec(page)[1];
  const dir = mkdtempSync(join(tmpdir(), "sdk-node-doc-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(join(ROOT, "sdk/node"), join(dir, "node_modules/crashcells"));
  symlinkSync(SQLITE, join(dir, "node_modules/better-sqlite3"));
  writeFileSync(join(dir, "notes.mjs"), code);
  return dir;
}

test("the page's small store conforms", { skip }, () => {
  const dir = pageStore();
  const args = ["child-check", "--child", "node notes.mjs", "--format", "json", "--only", "dump-batch,config-home,config-errors,journal-policy"];
  const done = spawnSync(CRASHCELLS, args, { cwd: dir, encoding: "utf8" });
  const report = JSON.parse(done.stdout);
  const failed = report.checks.filter((c) => c.status === "fail").map((c) => `${c.check}: ${c.detail}`);
  assert.deepEqual(failed, []);
  assert.equal(done.status, 0);
  const ok = (name) => report.checks.find((c) => c.check === name).status;
  // journal-policy: the page's store runs the mode each leg asks for, never a copied resolver's (#53).
  assert.deepEqual(["append-state", "dump-batch", "config-home", "journal-policy", "rotate"].map(ok), ["ok", "ok", "ok", "ok", "not-run"]);
});
