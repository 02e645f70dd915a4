// Calling the adapter's methods: each call awaited (methods may be async),
// each failure sorted into the store's own failure (exit 3: the driver
// judges it as the store failing its operation, §6) or an adapter that
// breaks the API's rules (exit 2, naming the method).

import { ACK_NOW } from "./adapter.js";
import { RuleError, StoreFailure, firstLine, isStoreError } from "./errors.js";

const THROW_RULE =
  "a method returns once its change is committed, or fails with the store's own error " +
  "(an errno or SQLite error, or a class of static storeErrors)";

/** A fresh instance of the adapter class for one operation, its `op`,
 * `mutant` and `writer` set and `ackNow` wired (on any class, whether or
 * not it extends the library's base class). */
export function instance(desc, Class, op, mutant, writer = null) {
  const store = new Class();
  store.op = op;
  store.mutant = mutant;
  store.writer = writer;
  store.index = 0;
  if (typeof store.ackNow !== "function") store.ackNow = () => store[ACK_NOW]?.();
  return { store, desc, Class };
}

/** `method(...args)` on the store, awaited; failures sorted as above. */
export async function call(it, method, ...args) {
  try {
    return await it.store[method](...args);
  } catch (e) {
    throw sorted(it, method, e);
  }
}

function sorted(it, method, e) {
  if (e instanceof RuleError || e instanceof StoreFailure) return e;
  const where = `${it.desc.name}.${method}()`;
  if (isStoreError(e, it.Class.storeErrors ?? [])) return new StoreFailure(where, e);
  const kind = e instanceof Error ? `${e.name}: ` : "";
  const err = new RuleError(where, `threw ${kind}${firstLine(e)}`, THROW_RULE);
  err.cause = e;
  return err;
}

/** Runs `method` as step `index` (the store's `index`), with `ack` armed as
 * the store's `ackNow()`, then writes the ack after it returned unless the
 * store already did inside its transaction: exactly one ack per operation
 * either way. */
export async function acked(it, index, ack, method, ...args) {
  it.store.index = index;
  let done = false;
  it.store[ACK_NOW] = () => {
    if (!done) ack();
    done = true;
  };
  try {
    await call(it, method, ...args);
  } finally {
    it.store[ACK_NOW] = undefined;
  }
  if (!done) ack();
}
