// What `state()` returns, checked, and the canonical dump line made of it
// (docs/PROTOCOL.md §4). The two recovery passes of a trial must print the
// same bytes, so the serialization is the library's, not the store's:
// fixed field order, sessions and obligations sorted byte-wise, fields at
// their default left out, compact JSON with non-ASCII as itself.

import { PROTOCOL, show } from "./journal.js";
import { RuleError } from "./errors.js";
import { closest } from "./names.js";

const RULE = "§4 canonical dump";
const OUTBOX_STATES = ["recorded", "attempting", "delivered"];
// Each record's fields: [name, check, default]; a default of `undefined`
// marks a required field.
const SESSION = [
  ["id", isString, undefined],
  ["parentSessionId", isNullableString, null],
  ["ended", isBoolean, false],
  ["endReason", isNullableString, null],
  ["messageCount", isCount, null],
  ["handoffState", isNullableString, null],
  ["branchOf", isNullableString, null],
];
const MESSAGE = [
  ["sessionId", isString, undefined],
  ["role", isString, undefined],
  ["content", isString, undefined],
  // The store's own place of the message in its session (§4): null, not kept.
  ["position", isPosition, null],
  ["active", isBoolean, true],
];
const OBLIGATION = [
  ["key", isString, undefined],
  ["state", (v) => OUTBOX_STATES.includes(v), undefined],
];
const TOP = ["sessions", "messages", "obligations", "integrity"];

/** `state()`'s answer checked: `{ sessions, messages, obligations,
 * integrity }` with every default filled in, or a RuleError naming the
 * first thing wrong. `integrity` stays undefined when left out. */
export function checkedState(value, method = "state()") {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RuleError(method, `returned ${show(value)}, not { sessions, messages, obligations, integrity }`, RULE);
  }
  unknownField(value, TOP, method, "");
  if (value.integrity !== undefined && typeof value.integrity !== "string") {
    throw new RuleError(method, `returned integrity ${show(value.integrity)}, not a string`, RULE);
  }
  return {
    sessions: records(value.sessions, "sessions", SESSION, true, method),
    messages: records(value.messages, "messages", MESSAGE, true, method),
    obligations: records(value.obligations, "obligations", OBLIGATION, false, method),
    integrity: value.integrity,
  };
}

function records(list, name, fields, required, method) {
  if (list === undefined && !required) return [];
  if (!Array.isArray(list)) throw new RuleError(method, `returned ${name} ${show(list)}, not an array`, RULE);
  return list.map((r, i) => record(r, `${name}[${i}]`, fields, method));
}

function record(r, where, fields, method) {
  if (r === null || typeof r !== "object" || Array.isArray(r)) {
    throw new RuleError(method, `returned ${where} ${show(r)}, not an object`, RULE);
  }
  unknownField(r, fields.map(([k]) => k), method, `${where} `);
  const out = {};
  for (const [key, check, fallback] of fields) {
    const v = r[key];
    if (v === undefined && fallback === undefined) throw new RuleError(method, `returned ${where} without "${key}"`, RULE);
    if (v !== undefined && !check(v)) throw new RuleError(method, `returned ${where} with ${key} ${show(v)}`, RULE);
    out[key] = v === undefined ? fallback : v;
  }
  return out;
}

function unknownField(obj, known, method, where) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) {
      const hint = closest(k, known);
      const mean = hint ? ` (did you mean "${hint}"?)` : ` (it knows ${known.join(", ")})`;
      throw new RuleError(method, `returned ${where}with an unknown field "${k}"${mean}`, RULE);
    }
  }
}

/** The canonical line of a checked state (with its integrity), newline included. */
export function canonicalLine(state) {
  const counts = new Map();
  for (const m of state.messages) counts.set(m.sessionId, (counts.get(m.sessionId) ?? 0) + 1);
  const sessions = [...state.sessions].sort((a, b) => bytewise(a.id, b.id)).map((s) => {
    const out = {
      id: s.id,
      parent_session_id: s.parentSessionId,
      ended: s.ended,
      end_reason: s.endReason,
      // Derived where the store keeps no counter (§4, "Checkpoint-shaped stores").
      message_count: s.messageCount ?? counts.get(s.id) ?? 0,
      handoff_state: s.handoffState,
    };
    if (s.branchOf !== null) out.branch_of = s.branchOf;
    return out;
  });
  const messages = state.messages.map((m) => {
    const out = { session_id: m.sessionId, role: m.role, content: m.content };
    if (m.position !== null) out.position = m.position;
    if (!m.active) out.active = false;
    return out;
  });
  const top = { protocol: PROTOCOL, integrity: state.integrity, sessions, messages };
  if (state.obligations.length > 0) {
    top.outbox = [...state.obligations].sort((a, b) => bytewise(a.key, b.key)).map((o) => ({ key: o.key, state: o.state }));
  }
  return JSON.stringify(top) + "\n";
}

/** The empty state a corrupt file dumps as: the finding is in `integrity`. */
export function corruptLine(message) {
  return canonicalLine({ sessions: [], messages: [], obligations: [], integrity: `corrupt: ${message}` });
}

/** The live transcript's length of `session` in a checked state (§4, "The
 * live transcript"): follow `branchOf` to the head, count its active messages. */
export function liveLength(state, session) {
  let head = session;
  const seen = new Set([head]);
  for (;;) {
    const next = state.sessions.filter((s) => s.branchOf === head);
    if (next.length !== 1 || seen.has(next[0].id)) break;
    head = next[0].id;
    seen.add(head);
  }
  return state.messages.filter((m) => m.sessionId === head && m.active).length;
}

function bytewise(a, b) {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function isString(v) {
  return typeof v === "string";
}
function isNullableString(v) {
  return v === null || typeof v === "string";
}
function isBoolean(v) {
  return typeof v === "boolean";
}
function isPosition(v) {
  return v === null || Number.isSafeInteger(v);
}
function isCount(v) {
  return v === null || (Number.isSafeInteger(v) && v >= 0);
}
