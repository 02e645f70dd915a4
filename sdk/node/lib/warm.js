// The warm pool (docs/PROTOCOL.md §10) for Node.js children, no dependency.
//
// Node.js starts threads of its own before user code, so it must not fork
// (§9); every operation exec'd pays a whole start and the adapter's imports.
// A child that lists "warm-pool" in its ready record's `operations` is
// started ahead of need as `CMD ARGS warm-pool`: it does its imports (the
// module's static imports, and an adapter's static `preload`, before `warm`
// is called), writes its `warm` line, and waits for exactly one request.
// This module then sets the process up as an exec'd child is (its three
// standard streams, the operation's environment, folder and arguments),
// stops it so that the driver can look at it (and seize it, for a traced
// operation), and once continued runs `main(argv)` and exits with its code.
// The process is used once: it reads one request, never a second.
//
// Crash model: the process is the driver's own child, killed with SIGKILL
// and reaped like an exec'd one. It must hold nothing an exec'd process
// would not (no database or trial file opened by the imports): the driver
// refuses a process that does.
//
// `run(MyStore)` uses it for an adapter class; a hand-written adapter whose
// operation is a function of its arguments can too:
//
//   import { warm } from "crashcells/warm";
//   async function main(argv) { ...; return 0; }
//   if (process.argv.at(-1) === "warm-pool") await warm(main);
//   else process.exitCode = await main(process.argv.slice(2));

import fs from "node:fs";

const PROTOCOL = 2;
export const WARM_POOL = "warm-pool";
// What an error that escapes main() exits with (the examples' EXIT_ERROR).
const EXIT_ERROR = 3;

/** Runs as one warm process: the `warm` line, one request, the operation.
 * Never returns. */
export async function warm(main) {
  const request = await awaitRequest();
  const argv = setUp(request);
  // Stopped until the driver has checked it fresh (and seized it if traced).
  process.kill(process.pid, "SIGSTOP");
  let code;
  try {
    code = await main(argv);
  } catch (e) {
    process.stderr.write(`${e?.stack ?? e}\n`);
    code = EXIT_ERROR;
  }
  process.exit(typeof code === "number" ? code & 0xff : 0);
}

/** The `warm` line, then the one request; exits 0 when stdin ends without
 * one (the pool closed before this process was needed). */
export async function awaitRequest() {
  writeAll(1, JSON.stringify({ kind: "warm", protocol: PROTOCOL, pid: process.pid }) + "\n");
  const line = readLine(0);
  if (line === null) process.exit(0);
  try {
    const request = JSON.parse(line);
    if (request.kind !== "run") throw new Error(`unknown request kind ${JSON.stringify(request.kind)}`);
    return request;
  } catch (e) {
    fs.writeSync(2, `crashcells warm pool: unreadable request: ${e.message}\n`);
    process.exit(EXIT_ERROR);
  }
}

/** Sets the process up as an exec'd child of `request` is; its arguments
 * (the operation and its flags, after the command's own). */
export function setUp(request) {
  try {
    // The control pipes go as 0 and 1 are replaced.
    onto(0, "/dev/null", "r");
    onto(1, request.stdout ?? "/dev/null", "w");
    onto(2, request.stderr ?? "/dev/null", "w");
    Object.assign(process.env, request.env ?? {});
    process.chdir(request.cwd ?? process.cwd());
  } catch (e) {
    fs.writeSync(2, `crashcells warm pool: setting up the operation: ${e.message}\n`);
    process.exit(EXIT_ERROR);
  }
  const base = process.argv.slice(2);
  if (base.at(-1) === WARM_POOL) base.pop();
  const argv = [...base, ...request.argv];
  process.argv = [process.argv[0], process.argv[1], ...argv];
  return argv;
}

/** Puts `path` on descriptor `fd`. Node.js has no dup2: closing `fd` makes
 * it the lowest free descriptor, which the next open takes. */
function onto(fd, path, flags) {
  fs.closeSync(fd);
  const opened = fs.openSync(path, flags, 0o644);
  if (opened !== fd) throw new Error(`${path} opened on descriptor ${opened}, not ${fd}`);
}

/** One line from `fd` (blocking reads), without its newline; null at the
 * end of input with nothing read. */
function readLine(fd) {
  const chunks = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n;
    try {
      n = fs.readSync(fd, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        continue;
      }
      throw e;
    }
    if (n === 0) return chunks.length ? Buffer.concat(chunks).toString("utf8") : null;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    const text = Buffer.concat(chunks).toString("utf8");
    const end = text.indexOf("\n");
    if (end >= 0) return text.slice(0, end);
  }
}

function writeAll(fd, text) {
  let data = Buffer.from(text);
  while (data.length) data = data.subarray(fs.writeSync(fd, data));
}
