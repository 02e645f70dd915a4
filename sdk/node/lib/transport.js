// The fake provider of `deliver` and `catch-up` (docs/PROTOCOL.md §2): a
// file the driver owns and reads as the provider's log of deliveries.
//
// Crash model: a send is ONE write(2) of a whole line on an O_APPEND
// descriptor, so a kill leaves it whole or torn; a final line without its
// newline is a send the provider never accepted. A short write is an error
// (a send that fails is never acked).

import { closeSync, openSync, readFileSync, writeSync } from "node:fs";

export class Transport {
  constructor(path) {
    this.path = path;
  }

  /** Sends one obligation: one line, one write. */
  send(key, payload) {
    const line = Buffer.from(JSON.stringify({ key, payload }) + "\n");
    const fd = openSync(this.path, "a", 0o644);
    try {
      const n = writeSync(fd, line);
      if (n !== line.length) throw new Error(`short write of a send: ${n} of ${line.length} bytes`);
    } finally {
      closeSync(fd);
    }
  }

  /** The keys the provider accepted: every complete line (the provider's
   * idempotency API, as a real integration would ask it). */
  arrived() {
    let data;
    try {
      data = readFileSync(this.path);
    } catch (e) {
      if (e.code === "ENOENT") return new Set();
      throw e;
    }
    const complete = data.subarray(0, data.lastIndexOf(10) + 1).toString("utf8");
    return new Set(complete.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).key));
  }
}
