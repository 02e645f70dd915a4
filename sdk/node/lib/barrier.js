// The barrier of claim and co-append (docs/PROTOCOL.md §2): a shared
// flock(2) on the file `--barrier` names, taken blocking; the driver holds
// an exclusive one and drops it to release every claimant (or writer) at once.
//
// Node.js has no flock. util-linux's flock(1) takes it for us on a
// descriptor we hand it: a BSD lock belongs to the open file description,
// which the helper shares with this process, so the shared lock it takes is
// ours and stays held after it exits, exactly as if we had called flock.
// It must be flock, not fcntl/lockf: record locks do not meet the driver's.
// The wait has no deadline of its own: the driver's deadline bounds it (it
// kills the claimant's whole group, the helper with it).

import { closeSync, openSync } from "node:fs";
import { spawnSync } from "node:child_process";

/** Opens the barrier file (step 1 of a claim or co-append): the descriptor to wait on. */
export function openBarrier(path) {
  return openSync(path, "r");
}

/** Blocks until this process holds a shared flock on `fd`. */
export function waitShared(fd) {
  const done = spawnSync("flock", ["--shared", "3"], { stdio: ["ignore", "ignore", "pipe", fd] });
  if (done.error) throw new Error(`flock(1) could not run (util-linux's flock is needed for the barrier of claim and co-append): ${done.error.message}`);
  if (done.status !== 0) throw new Error(`flock(1) failed on the barrier: ${done.stderr.toString().trim() || `exit ${done.status}`}`);
}

export function closeBarrier(fd) {
  closeSync(fd);
}
