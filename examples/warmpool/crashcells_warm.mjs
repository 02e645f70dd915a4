// The warm pool's helper for Node.js adapters (docs/PROTOCOL.md §10), kept
// at this path for the adapters that import it from here: it is the
// library's now (sdk/node/lib/warm.js, `crashcells/warm` once installed).

export { awaitRequest, setUp, warm } from "../../sdk/node/lib/warm.js";
