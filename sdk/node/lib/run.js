// `run(MyStore)`: the child program of docs/PROTOCOL.md around an adapter
// class. It checks the class, reads the command line and the config home,
// runs the operation (or, given `warm-pool`, waits warm for one, §10), and
// ends the process with the protocol's exit code and at most one line on
// stderr.

import { parseArgs } from "./cli.js";
import { describe } from "./adapter.js";
import { readConfig } from "./config.js";
import {
  EXIT_STORE, EXIT_UNAVAILABLE, EXIT_USAGE, RuleError, StoreFailure, Unavailable, UsageError, firstLine,
} from "./errors.js";
import { OPERATION_RUNNERS, writeAll } from "./operations.js";
import { WARM_POOL, warm } from "./warm.js";

/** Runs the process as the adapter `Class`'s child: never returns. */
export async function run(Class) {
  const argv = process.argv.slice(2);
  if (argv.at(-1) === WARM_POOL) {
    const refused = await checked(Class);
    if (refused !== null) process.exit(refused);
    // The helper sets the request's streams, environment and folder before
    // it calls back, so `main` reads them as an exec'd process would.
    await warm((args) => main(Class, args, process.env, process.cwd(), false));
  }
  process.exit(await main(Class, argv));
}

/** One operation of the adapter `Class`: `argv` what the driver appends
 * after the command (`append --db ...`). Returns the exit code; writes one
 * line on stderr for an error. */
export async function main(Class, argv, env = process.env, cwd = process.cwd(), preload = true) {
  try {
    const desc = describe(Class);
    const op = argv[0];
    if (op in OPERATION_RUNNERS && !desc.operations.includes(op)) {
      throw new Unavailable(`\`${op}\` is not implemented by ${desc.name} (it defines no method for it)`);
    }
    const a = parseArgs(argv, cwd);
    if (a.mutant !== null && !desc.mutants.includes(a.mutant)) {
      const known = desc.mutants.length > 0 ? desc.mutants.join(", ") : "none";
      throw new UsageError(`unknown mutant \`${a.mutant}\` (${desc.name} implements: ${known})`);
    }
    const config = op === "dump" ? null : readConfig(env, cwd);
    if (preload && typeof Class.preload === "function") await Class.preload();
    return await OPERATION_RUNNERS[op]({ Class, desc, config }, a);
  } catch (e) {
    writeAll(2, `crashcells adapter: ${firstLine(e)}\n`);
    return exitCode(e);
  }
}

/** The class checked and preloaded before a warm process says it is warm:
 * null, or the exit code of a class that breaks a rule. */
async function checked(Class) {
  try {
    describe(Class);
    if (typeof Class.preload === "function") await Class.preload();
    return null;
  } catch (e) {
    writeAll(2, `crashcells adapter: ${firstLine(e)}\n`);
    return exitCode(e);
  }
}

function exitCode(e) {
  if (e instanceof UsageError || e instanceof RuleError) return EXIT_USAGE;
  if (e instanceof Unavailable) return EXIT_UNAVAILABLE;
  if (e instanceof StoreFailure) return EXIT_STORE;
  return EXIT_STORE;
}
