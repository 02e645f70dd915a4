// The workload rules of docs/PROTOCOL.md §2 that are no business of the
// store: which rotation comes k-th (with and without shapes) and what it
// carries, and the fork rule (which operation is a rewind, and how much it
// keeps). The driver computes the same from the same numbers, which is how
// it knows what was in flight when it killed the child.

// A fork run rewinds at every FORK_EVERY-th operation.
const FORK_EVERY = 4;
// What a rotation with shapes carries (k mod 4 of 1 and 2).
const CARRIED = 2;
// The mutants the library plays (the reference's numbers,
// protocol/corpus/mutants.json): `drop-append` acks without writing one
// append in DROP_EVERY, from the second (m1, m65, ...); `stall` blocks at
// append STALL_AFTER, having acked the five before it.
const DROP_EVERY = 64;
const DROP_FIRST = 1;
export const STALL_AFTER = 5;

/** Whether `drop-append` acks append `i` without writing it. */
export function dropsAppend(i) {
  return i % DROP_EVERY === DROP_FIRST;
}

/** Whether `stall` blocks at append `i`, before writing or acking it. */
export function stallsAt(i) {
  return i >= STALL_AFTER;
}

/** Rotation k: `{ parent, child, work, carried, newParent }`. Without
 * shapes, p<k> -> c<k>, its work one `user` message, nothing carried; with
 * shapes, odd rotations rotate the continuation just made again, rotations
 * 1 and 2 of every four carry the parent's last two messages, and the work
 * ends with `work <k>`, `reply <k>` (the messages a carrying rotation copies). */
export function rotation(k, shapes) {
  const again = shapes && k % 2 === 1;
  const parent = again ? `c${k - 1}` : `p${k}`;
  const work = shapes ? [["user", `work ${k}`], ["assistant", `reply ${k}`]] : [["user", `work ${k}`]];
  const carried = shapes && (k % 4 === 1 || k % 4 === 2) ? CARRIED : 0;
  return { parent, child: `c${k}`, work, carried, newParent: !again };
}

/** Operation i of a fork run on a live transcript of `length` messages:
 * `{ op: "append" }` or `{ op: "rewind", keep }`, keeping (seed + i) mod
 * (length - 1) messages. BigInt: the sum is exact at any seed. */
export function forkStep(seed, i, length) {
  if (i % FORK_EVERY === FORK_EVERY - 1 && length >= 2) {
    return { op: "rewind", keep: Number((BigInt(seed) + BigInt(i)) % BigInt(length - 1)) };
  }
  return { op: "append" };
}

/** 0, 1, 2, ... up to `stopAfter` (null: for ever, until killed). */
export function* steps(stopAfter) {
  for (let i = 0; stopAfter === null || i < stopAfter; i++) yield i;
}
