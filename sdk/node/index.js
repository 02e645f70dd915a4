// crashcells for Node.js: the child protocol (docs/PROTOCOL.md) as a
// library. An adapter is a class with one method per operation its store
// supports (sdk/API.md); `run(MyStore)` does everything else. No dependency.

export { run, main } from "./lib/run.js";
export { Store } from "./lib/adapter.js";
export { Corrupt } from "./lib/errors.js";
export { JOURNAL_MODES, SYNC_LEVELS, headerIsWal, readConfig, resolve, walResetAffected } from "./lib/config.js";
export { canonicalLine, checkedState } from "./lib/state.js";
export { forkStep, rotation } from "./lib/rules.js";
export { warm } from "./lib/warm.js";
