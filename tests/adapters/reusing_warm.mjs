// A deliberately broken warm-pool helper (docs/PROTOCOL.md §10), for the
// test that `child-check` refuses it: each warm process takes its one
// request as the honest helper does, then hands it to one worker process
// that serves every request of the run (a "persistent worker", kept to
// save the start), and exits with the worker's answer. The operation thus
// runs in a process reused across requests, outside the group the driver
// kills. The worker leaves its group (detached) and exits after a second
// with no request.

import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

import { awaitRequest, setUp } from "../../examples/warmpool/crashcells_warm.mjs";

const IDLE_MS = 1000;

export async function warm(main, adapter) {
  const request = await awaitRequest();
  setUp(request);
  process.kill(process.pid, "SIGSTOP");
  // One worker per driver (the warm processes' parent).
  const socket = `${os.tmpdir()}/crashcells-reusing-${process.ppid}.sock`;
  const code = await ask(socket, adapter, request);
  process.exit(code);
}

async function ask(socket, adapter, request) {
  for (let tries = 0; tries < 200; tries++) {
    try {
      return await send(socket, request);
    } catch {
      if (tries === 0) {
        spawn(process.execPath, [fileURLToPath(import.meta.url), "worker", socket, adapter], {
          detached: true, stdio: "ignore",
        }).unref();
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return 3;
}

function send(socket, request) {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket, () => c.write(JSON.stringify(request) + "\n"));
    let reply = "";
    c.on("data", (d) => (reply += d));
    c.on("end", () => resolve(Number(reply.trim())));
    c.on("error", reject);
  });
}

/** The worker: every request in this one process, one at a time. */
async function worker(socket, adapter) {
  const { main } = await import(pathToFileURL(adapter).href);
  try { fs.unlinkSync(socket); } catch {}
  let idle;
  const server = net.createServer((c) => {
    clearTimeout(idle);
    let line = "";
    c.on("data", async (d) => {
      line += d;
      if (!line.includes("\n")) return;
      const request = JSON.parse(line);
      for (const [fd, path] of [[1, request.stdout], [2, request.stderr]]) {
        fs.closeSync(fd);
        fs.openSync(path ?? "/dev/null", "w", 0o644);
      }
      Object.assign(process.env, request.env ?? {});
      process.chdir(request.cwd);
      const code = await main(request.argv);
      c.end(`${code}\n`);
      idle = setTimeout(() => process.exit(0), IDLE_MS);
    });
  });
  server.listen(socket);
  // The socket outlives the worker unless removed: leave no file behind in
  // the system's temporary folder.
  process.on("exit", () => { try { fs.unlinkSync(socket); } catch {} });
  idle = setTimeout(() => process.exit(0), IDLE_MS * 5);
}

if (process.argv[2] === "worker") await worker(process.argv[3], process.argv[4]);
