// `crashcells child-check` on a store written on the library: it conforms,
// every operation included; and each rule the library enforces shows in
// child-check as the one line the adapter wrote, in the failing check.
// Needs the crashcells binary: $CRASHCELLS, else `crashcells` on PATH
// (the Rust suite passes the one it built); without either, skipped.

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

/** child-check's JSON report of the shell store (broken as `broken` says),
 * running only `only` beside the checks every run makes. */
function childCheck(only, broken = null) {
  const child = `${broken ? `env SHELL_STORE_BREAK=${broken} ` : ""}node ${STORE}`;
  const args = ["child-check", "--child", child, "--format", "json", "--only", only];
  const done = spawnSync(CRASHCELLS, args, { cwd: mkdtempSync(join(tmpdir(), "sdk-node-cc-")), encoding: "utf8" });
  assert.ok(done.stdout, `no report: ${done.stderr}`);
  return { code: done.status, report: JSON.parse(done.stdout) };
}

function status(report, check) {
  return report.checks.find((c) => c.check === check);
}

test("a store on the library conforms, claim, fork, deliver, shapes and co-append included", { skip }, () => {
  const { code, report } = childCheck("rotate-shapes,claim-state,fork-state,catch-up-missing,dump-batch,co-append-state");
  const failed = report.checks.filter((c) => c.status === "fail").map((c) => `${c.check}: ${c.detail}`);
  assert.deepEqual(failed, []);
  assert.equal(code, 0);
  for (const c of ["rotate-shapes", "claim-state", "fork-state", "catch-up-missing", "dump-batch", "append-state", "co-append", "co-append-state"]) {
    assert.equal(status(report, c).status, "ok", `${c}: ${status(report, c).detail}`);
  }
});

test("each broken rule fails child-check with the adapter's one line", { skip }, () => {
  const cases = [
    ["misspelt", "ready", /ShellStore\.apend is no name of the adapter API \(did you mean `append`\?\)/],
    ["shape", "append-state", /ShellStore\.state\(\) returned messages\[0\] without "role" \(rule: §4 canonical dump\)/],
    ["throws", "stop-after", /ShellStore\.append\(\) threw TypeError: .*\(rule: a method returns once/],
  ];
  for (const [broken, check, line] of cases) {
    const { code, report } = childCheck("acks", broken);
    assert.equal(code, 1, broken);
    assert.equal(report.conforming, false, broken);
    const c = status(report, check);
    assert.equal(c.status, "fail", `${broken}: ${check}: ${c.detail}`);
    assert.match(c.detail, line, broken);
  }
});

