#!/usr/bin/env node
// The `crashcells` command of the npm package: finds the driver binary in
// the package for this platform (@crashcells/linux-x64, ...: npm installs
// only the optional dependency whose os and cpu match, so nothing is
// downloaded at install time) and runs it with this command's arguments,
// passing through its output, its exit code and the signals sent to it.
// It names itself in CRASHCELLS_INVOKED_AS, so that a repro line starts
// with the command that reaches the binary (the binary's own folder is one
// nobody types).
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// process.platform-process.arch -> the package that carries the binary.
const PACKAGES = {
  "linux-x64": "@crashcells/linux-x64",
  "linux-arm64": "@crashcells/linux-arm64",
};

/** Prints one line naming what is wrong and exits 2, as crashcells does. */
function fail(line) {
  process.stderr.write(`crashcells: ${line}\n`);
  process.exit(2);
}

/** The binary's path, or a one-line reason why there is none. */
function findBinary() {
  const key = `${process.platform}-${process.arch}`;
  const pkg = PACKAGES[key];
  if (!pkg) fail(`no crashcells binary is published for ${key} (there are: ${Object.keys(PACKAGES).join(", ")})`);
  try {
    return require.resolve(`${pkg}/bin/crashcells`);
  } catch {
    fail(`${pkg} is not installed: install it beside crashcells (npm i -D crashcells ${pkg}), or reinstall without --no-optional`);
  }
}

/** What a repro must start with: `npx crashcells` where npm ran this
 * command (its folder of bins is on PATH only there), else this file. */
function invokedAs() {
  if (process.env.npm_command === "exec" || process.env.npm_command === "run-script") return "npx crashcells";
  return path.resolve(process.argv[1]);
}

function main() {
  const binary = findBinary();
  const env = { ...process.env, CRASHCELLS_INVOKED_AS: invokedAs() };
  const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", env });
  // A signal sent to this process (a CI's cancel, a terminal's ^C) goes on
  // to the binary, which cleans up its children and exits its own way.
  const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
  const forward = (signal) => child.kill(signal);
  for (const s of signals) process.on(s, forward);
  child.on("error", (e) => fail(`could not start ${binary}: ${e.message}`));
  child.on("exit", (code, signal) => {
    for (const s of signals) process.off(s, forward);
    if (signal) {
      // Dies of the same signal, so a caller sees what the binary saw.
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

main();
