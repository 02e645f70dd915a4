// Type declarations of the crashcells library for Node.js (index.js):
// the adapter API of sdk/API.md in TypeScript's names.

export type JournalMode = "delete" | "truncate" | "persist" | "memory" | "wal" | "off";
export type Synchronous = "off" | "normal" | "full" | "extra";
export type Operation = "append" | "rotate" | "park" | "claim" | "fork" | "deliver" | "catch-up" | "co-append" | "dump";

/** What the config home asks for; null is "your default". */
export interface Config {
  journalMode: JournalMode | null;
  synchronous: Synchronous | null;
}

/** A resolver's decision, as `open()` returns it (the ready record's `resolver`). */
export interface Resolver {
  requested: JournalMode | null;
  applied: JournalMode;
  synchronous: Synchronous | null;
  /** `config`, `default`, `wal-reset-gate`, `already-wal`, `store`, or a word of your own. */
  decidedBy: string;
  reason: string;
}

/** What the store's own connection reports, after `open()` applied its mode. */
export interface Journal {
  journalMode: JournalMode;
  synchronous?: Synchronous | null;
  sqliteVersion: string;
  sqliteSourceId?: string | null;
}

export interface Session {
  id: string;
  parentSessionId?: string | null;
  ended?: boolean;
  endReason?: string | null;
  /** Left out: the number of the session's messages. */
  messageCount?: number | null;
  handoffState?: string | null;
  branchOf?: string | null;
}

export interface Message {
  sessionId: string;
  role: string;
  content: string;
  /** The message's place in its session as the store numbers it (a
   * sequence or index column it orders by); left out when it keeps none. */
  position?: number | null;
  active?: boolean;
}

export interface Obligation {
  key: string;
  state: "recorded" | "attempting" | "delivered";
}

/** What `state(db)` returns: plain data, messages in commit order. */
export interface State {
  sessions: Session[];
  messages: Message[];
  obligations?: Obligation[];
  /** The rows of PRAGMA integrity_check joined with "; ". Left out, the
   * library runs it through node:sqlite (Node.js 22.13 and later). */
  integrity?: string;
}

export type Role = string;
export type Turn = [role: Role, content: string];
export type Pending = [key: string, payload: string, state: "recorded" | "attempting"];
type Maybe<T> = T | Promise<T>;

/** The methods of an adapter; each may be async. `open`, `journal`,
 * `append` and `state` are required; the others make their operations. */
export interface Adapter {
  op: Operation | null;
  mutant: string | null;
  /** co-append's --writer (r0, r1, ...); null for an operation with one writer. */
  writer?: string | null;
  /** The current acked step's index (its ack's i). */
  index?: number;
  open(db: string, config: Config): Maybe<Resolver | null | undefined>;
  journal(): Maybe<Journal>;
  close?(): Maybe<void>;
  createSession?(session: string): Maybe<void>;
  append(session: string, role: Role, content: string): Maybe<void>;
  rotate?(parent: string, child: string, work: Turn[], carried: number, newParent: boolean): Maybe<void>;
  park?(session: string): Maybe<void>;
  claim?(session: string, claimant: string): Maybe<boolean>;
  rewind?(session: string, keep: number, i: number): Maybe<void>;
  liveLength?(session: string): Maybe<number>;
  record?(key: string, payload: string): Maybe<void>;
  attempting?(key: string): Maybe<void>;
  delivered?(key: string): Maybe<void>;
  pending?(): Maybe<Pending[]>;
  state(db: string): Maybe<State>;
}

/** The library's base class: `op`, `mutant`, `writer`, `index` and `ackNow()`. */
export class Store {
  op: Operation | null;
  mutant: string | null;
  /** co-append's --writer (r0, r1, ...); null for an operation with one writer. */
  writer: string | null;
  /** The current acked step's index (its ack's i). */
  index: number;
  /** Writes the running operation's ack now (inside a transaction: the
   * `ack-before-commit` mutant); the library does not write it again. */
  ackNow(): void;
}

export interface AdapterClass {
  new (): Adapter;
  /** The mutants the class implements (`--mutant` with another name exits 2). */
  mutants?: string[];
  /** Error classes that are the store's own failure (exit 3), beside errno and SQLite errors. */
  storeErrors?: Array<new (...args: any[]) => Error>;
  /** The launchers the ready record offers: ["warm-pool"] (the default) or []. */
  launchers?: Array<"warm-pool">;
  /** The slow imports, run once before the operation (or before a warm process is warm). */
  preload?(): Maybe<void>;
}

/** Runs the process as the class's child (docs/PROTOCOL.md): never returns. */
export function run(Class: AdapterClass): Promise<never>;
/** One operation; returns the exit code. */
export function main(Class: AdapterClass, argv: string[], env?: NodeJS.ProcessEnv, cwd?: string): Promise<number>;

/** Thrown by `state()` for a file the SQLite library calls corrupt. */
export class Corrupt extends Error {}

export const JOURNAL_MODES: JournalMode[];
export const SYNC_LEVELS: Synchronous[];
export function readConfig(env?: NodeJS.ProcessEnv, cwd?: string): Config;
/** The reference resolver: WAL, refused (DELETE) on a SQLite with the WAL-reset bug. */
export function resolve(config: Config, sqliteVersion: string, fileIsWal: boolean): Resolver;
export function walResetAffected(sqliteVersion: string): boolean;
export function headerIsWal(path: string): boolean;
export function checkedState(value: unknown): Required<State>;
export function canonicalLine(state: Required<State>): string;
export function forkStep(seed: bigint | number, i: number, length: number): { op: "append" } | { op: "rewind"; keep: number };
export function rotation(k: number, shapes: boolean): { parent: string; child: string; work: Turn[]; carried: number; newParent: boolean };
/** One warm process (docs/PROTOCOL.md §10) around `main(argv)`: never returns. */
export function warm(main: (argv: string[]) => Maybe<number>): Promise<never>;
