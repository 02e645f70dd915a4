// The library's own rules, unit by unit: the command line, the config home,
// the workload rules, the canonical dump and the adapter class's names.

import assert from "node:assert/strict";
import { test } from "node:test";

import { describe } from "../lib/adapter.js";
import { parseArgs } from "../lib/cli.js";
import { parseConfig, resolve, walResetAffected } from "../lib/config.js";
import { RuleError, UsageError } from "../lib/errors.js";
import { readyFields } from "../lib/journal.js";
import { forkStep, rotation } from "../lib/rules.js";
import { canonicalLine, checkedState, liveLength } from "../lib/state.js";

test("flags come in pairs, in any order, paths made absolute", () => {
  const a = parseArgs(["fork", "--seed", "18446744073709551617", "--acks", "a.ndjson", "--db", "s.db", "--stop-after", "9"], "/w");
  assert.deepEqual([a.db, a.acks, a.seed, a.stopAfter], ["/w/s.db", "/w/a.ndjson", 18446744073709551617n, 9]);
  assert.deepEqual(parseArgs(["dump", "--db", "a", "--db", "/b"], "/w").db, ["/w/a", "/b"]);
  assert.throws(() => parseArgs(["append", "--db=x", "--acks", "a"], "/w"), UsageError);
  assert.throws(() => parseArgs(["append", "--db", "x"], "/w"), /--acks is required/);
  assert.throws(() => parseArgs(["catch-up", "--db", "a", "--db", "b", "--transport", "t"], "/w"), /in pairs/);
  assert.throws(() => parseArgs(["rotate", "--db", "a", "--acks", "b", "--shapes", "off"], "/w"), /--shapes takes `on`/);
  assert.throws(() => parseArgs(["fork-server"], "/w"), /unknown operation `fork-server`/);
  assert.throws(() => parseArgs(["append", "--db", "a", "--acks", "b", "--stop-after", "-1"], "/w"), /non-negative/);
  const co = parseArgs(["co-append", "--writer", "r1", "--barrier", "b", "--db", "s.db", "--acks", "a", "--stop-after", "2"], "/w");
  assert.deepEqual([co.writer, co.barrier, co.db, co.stopAfter], ["r1", "/w/b", "/w/s.db", 2]);
  assert.throws(() => parseArgs(["co-append", "--writer", "", "--barrier", "b", "--db", "s", "--acks", "a"], "/w"), /--writer needs a name/);
  assert.throws(() => parseArgs(["append", "--writer", "r1", "--db", "s", "--acks", "a"], "/w"), /unknown argument `--writer`/);
});

test("the config home: the driver's lines read, anything else refused", () => {
  assert.deepEqual(parseConfig('# leg\n[database]\njournal_mode = "WAL" # asked\nsynchronous = "full"\n'), {
    journalMode: "wal",
    synchronous: "full",
  });
  assert.deepEqual(parseConfig(""), { journalMode: null, synchronous: null });
  assert.throws(() => parseConfig('[database]\njournal_mode = "wall"'), /unknown journal_mode `wall`/);
  assert.throws(() => parseConfig('[database]\nmode = "wal"'), /unknown key `mode` in \[database\]/);
  assert.throws(() => parseConfig('[db]\njournal_mode = "wal"'), /unknown table or key `db`/);
  assert.throws(() => parseConfig("[database]\njournal_mode = wal"), /line 2/);
});

test("the reference resolver refuses WAL on a SQLite with the WAL-reset bug", () => {
  assert.equal(walResetAffected("3.40.1"), true);
  assert.equal(walResetAffected("3.44.6"), false);
  assert.equal(walResetAffected("3.51.3"), false);
  const none = { journalMode: null, synchronous: null };
  assert.equal(resolve(none, "3.40.1", false).applied, "delete");
  assert.equal(resolve(none, "3.40.1", true).decidedBy, "already-wal");
  assert.equal(resolve(none, "3.51.3", false).applied, "wal");
  assert.equal(resolve({ journalMode: "truncate", synchronous: "off" }, "3.40.1", false).decidedBy, "config");
});

test("rotations by the rule, with and without shapes", () => {
  assert.deepEqual(rotation(3, false), { parent: "p3", child: "c3", work: [["user", "work 3"]], carried: 0, newParent: true });
  const shaped = [0, 1, 2, 3].map((k) => rotation(k, true)).map((r) => [r.parent, r.child, r.carried, r.newParent]);
  assert.deepEqual(shaped, [["p0", "c0", 0, true], ["c0", "c1", 2, false], ["p2", "c2", 2, true], ["c2", "c3", 0, false]]);
  assert.deepEqual(rotation(1, true).work, [["user", "work 1"], ["assistant", "reply 1"]]);
});

test("the fork rule: PROTOCOL.md's worked example at seed 8, exact at any seed", () => {
  let length = 0;
  const got = [];
  for (let i = 0; i < 9; i++) {
    const s = forkStep(8n, i, length);
    got.push(s.op === "append" ? `m${i}` : `keep ${s.keep}`);
    length = s.op === "append" ? length + 1 : s.keep;
  }
  assert.deepEqual(got, ["m0", "m1", "m2", "keep 1", "m4", "m5", "m6", "keep 0", "m8"]);
  assert.deepEqual(forkStep(2n ** 64n - 1n, 3, 3), { op: "rewind", keep: 0 });
});

test("the canonical line: field order, defaults left out, sorted byte-wise, text as itself", () => {
  const state = checkedState({
    sessions: [{ id: "é" }, { id: "z", branchOf: "main", messageCount: 7 }, { id: "main", ended: true, endReason: "compression" }],
    messages: [
      { sessionId: "main", role: "user", content: 'a "q" \\ / \n\u0001 ü' },
      { sessionId: "main", role: "user", content: "cut", position: 7, active: false },
      { sessionId: "main", role: "user", content: "p0", position: 0 },
    ],
    obligations: [{ key: "o1", state: "attempting" }, { key: "o0", state: "delivered" }],
    integrity: "ok",
  });
  assert.equal(
    canonicalLine(state),
    '{"protocol":2,"integrity":"ok","sessions":[' +
      '{"id":"main","parent_session_id":null,"ended":true,"end_reason":"compression","message_count":3,"handoff_state":null},' +
      '{"id":"z","parent_session_id":null,"ended":false,"end_reason":null,"message_count":7,"handoff_state":null,"branch_of":"main"},' +
      '{"id":"é","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],' +
      '"messages":[{"session_id":"main","role":"user","content":"a \\"q\\" \\\\ / \\n\\u0001 ü"},' +
      '{"session_id":"main","role":"user","content":"cut","position":7,"active":false},' +
      '{"session_id":"main","role":"user","content":"p0","position":0}],' +
      '"outbox":[{"key":"o0","state":"delivered"},{"key":"o1","state":"attempting"}]}\n',
  );
});

test("the live transcript follows branches to the head and skips cut messages", () => {
  const state = checkedState({
    sessions: [{ id: "main" }, { id: "main~3", branchOf: "main" }],
    messages: [
      { sessionId: "main", role: "user", content: "m0" },
      { sessionId: "main~3", role: "user", content: "m0" },
      { sessionId: "main~3", role: "user", content: "m4", active: false },
    ],
  });
  assert.equal(liveLength(state, "main"), 1);
});

test("a state() of the wrong shape is refused naming the field and the rule", () => {
  const bad = [
    [{ sessions: [], messages: [{ sessionId: "main", content: "m0" }] }, /messages\[0\] without "role"/],
    [{ sessions: [{ id: "main", parent: null }], messages: [] }, /unknown field "parent"/],
    [{ sessions: [{ id: "main", mesageCount: 1 }], messages: [] }, /did you mean "messageCount"/],
    [{ sessions: [{ id: 1 }], messages: [] }, /sessions\[0\] with id 1/],
    [{ sessions: [], messages: [{ sessionId: "main", role: "user", content: "m0", position: 1.5 }] }, /messages\[0\] with position 1.5/],
    [{ sessions: [], messages: [{ sessionId: "main", role: "user", content: "m0", postion: 1 }] }, /did you mean "position"/],
    [{ sessions: [] }, /messages undefined, not an array/],
    [[], /not \{ sessions/],
  ];
  for (const [value, message] of bad) {
    assert.throws(() => checkedState(value), (e) => e instanceof RuleError && message.test(e.message) && /rule: §4/.test(e.message));
  }
});

test("journal() and the resolver are checked before the ready record", () => {
  const journal = { journalMode: "WAL", synchronous: "normal", sqliteVersion: "3.45.1" };
  assert.equal(readyFields(journal, null).journal_mode, "wal");
  assert.throws(() => readyFields({ ...journal, journalMode: "wal2" }, null), /journal\(\) returned journalMode "wal2"/);
  assert.throws(() => readyFields({ ...journal, sqlite: "3" }, null), /unknown field `sqlite`/);
  const resolver = { requested: null, applied: "wal", synchronous: null, decidedBy: "store", reason: "the saver sets WAL" };
  assert.equal(readyFields(journal, resolver).resolver.decided_by, "store");
  assert.throws(() => readyFields(journal, { ...resolver, applied: "WAL!" }), /open\(\) returned applied/);
});

test("a misspelt method or static is refused with a did-you-mean", () => {
  const base = { open() {}, journal() {}, append() {}, state() {} };
  const classOf = (extra) => {
    const C = class Mine {};
    Object.assign(C.prototype, base, extra);
    return C;
  };
  assert.deepEqual(describe(classOf({})).operations, ["append", "co-append", "dump", "dump-batch", "warm-pool"]);
  assert.ok(describe(classOf({ rewind() {}, park() {}, claim() {} })).operations.includes("fork"));
  assert.throws(() => describe(classOf({ rewnid() {} })), /Mine.rewnid is no name of the adapter API \(did you mean `rewind`\?\)/);
  assert.throws(() => describe(classOf({ _helper() {}, park() {} })), /Mine.claim\(\) is missing beside park/);
  const Cold = classOf({});
  Cold.launchers = [];
  assert.equal(describe(Cold).operations.includes("warm-pool"), false);
  Cold.launchers = ["fork-server"];
  assert.throws(() => describe(Cold), /Mine.launchers is \["fork-server"\] \(rule: Node.js offers/);
  const Statics = classOf({});
  Statics.mutant = ["torn-fork"];
  assert.throws(() => describe(Statics), /did you mean `mutants`/);
  const NoState = class Bare {};
  NoState.prototype.open = () => {};
  assert.throws(() => describe(NoState), /Bare.journal\(\) is missing/);
});
