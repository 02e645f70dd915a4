// The npm package's `crashcells` command (bin/crashcells.cjs) as a team's
// project runs it: installed as npm lays it out, beside a platform package
// whose "binary" is a shell script, so that what the launcher passes on is
// seen: the arguments, the exit code, a signal sent to the launcher, the
// binary's own death by a signal, CRASHCELLS_INVOKED_AS, and the one line
// and exit 2 when no platform package is installed.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const LAUNCHER = new URL("../bin/crashcells.cjs", import.meta.url).pathname;
const PLATFORM = `@crashcells/${process.platform}-${process.arch}`;

/** A project with the launcher installed and, if `binary` is given, the
 * platform package holding it as bin/crashcells; the launcher's path. */
function project(binary) {
  const root = mkdtempSync(join(tmpdir(), "crashcells-launcher-"));
  const bin = join(root, "node_modules", "crashcells", "bin");
  mkdirSync(bin, { recursive: true });
  copyFileSync(LAUNCHER, join(bin, "crashcells.cjs"));
  if (binary !== undefined) {
    const pkg = join(root, "node_modules", ...PLATFORM.split("/"));
    mkdirSync(join(pkg, "bin"), { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: PLATFORM, version: "0.0.0" }));
    writeFileSync(join(pkg, "bin", "crashcells"), `#!/bin/sh\n${binary}\n`);
    chmodSync(join(pkg, "bin", "crashcells"), 0o755);
  }
  return join(bin, "crashcells.cjs");
}

/** The environment npm would not have set: run as typed, not by npx. */
function plainEnv() {
  const env = { ...process.env };
  delete env.npm_command;
  return env;
}

test("arguments, output and the exit code pass through; the launcher names itself", () => {
  const launcher = project('printf "%s|" "$@" "$CRASHCELLS_INVOKED_AS"; exit 7');
  const r = spawnSync(process.execPath, [launcher, "run", "--child", "a b"], { env: plainEnv(), encoding: "utf8" });
  assert.equal(r.status, 7, r.stderr);
  assert.equal(r.stdout, `run|--child|a b|${launcher}|`);
});

test("under npx the launcher says so, since its folder is on PATH only there", () => {
  const launcher = project('printf "%s" "$CRASHCELLS_INVOKED_AS"');
  const env = { ...plainEnv(), npm_command: "exec" };
  const r = spawnSync(process.execPath, [launcher], { env, encoding: "utf8" });
  assert.equal(r.stdout, "npx crashcells");
});

test("a binary killed by a signal kills the launcher by the same signal", () => {
  const launcher = project("kill -TERM $$");
  const r = spawnSync(process.execPath, [launcher], { env: plainEnv() });
  assert.equal(r.signal, "SIGTERM");
});

test("a signal sent to the launcher reaches the binary", async () => {
  const dir = mkdtempSync(join(tmpdir(), "crashcells-signal-"));
  const seen = join(dir, "seen");
  const ready = join(dir, "ready");
  // The binary notes the SIGINT it receives and exits 130, as crashcells does.
  const launcher = project(
    `trap 'echo INT > ${seen}; exit 130' INT; touch ${ready}; while :; do sleep 0.05; done`,
  );
  const child = spawn(process.execPath, [launcher], { env: plainEnv(), stdio: "ignore" });
  const deadline = Date.now() + 20_000;
  while (!existsSync(ready)) {
    assert.ok(Date.now() < deadline, "the binary never started");
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill("SIGINT");
  const code = await new Promise((resolve) => child.on("exit", (c) => resolve(c)));
  assert.equal(code, 130);
  assert.ok(existsSync(seen), "the binary did not see the signal");
});

test("no platform package: one line naming it, exit 2", () => {
  const launcher = project();
  const r = spawnSync(process.execPath, [launcher, "run"], { env: plainEnv(), encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, new RegExp(`^crashcells: ${PLATFORM} is not installed: [^\\n]*\\n$`));
});
