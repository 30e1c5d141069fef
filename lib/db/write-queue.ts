// One process's writes, one at a time and grouped: the write queue.
//
// SQLite allows one writer per database. Writers of this process wait here, on promises, never
// inside SQLite (which would block the event loop). When the queue gets its turn it opens one
// write transaction (BEGIN IMMEDIATE, retried with backoff while another process writes), takes
// every write transaction waiting at that moment, runs each inside its own SAVEPOINT, and commits
// them all at once: one commit and one fsync for a burst of webhook deliveries, build creations
// or log appends. A transaction that throws is rolled back to its savepoint (its own writes
// only) and rejected; the others commit. Writes known up front (a batch) take no savepoint: one
// that fails rolls the group back, and runs again alone while the others run again together. Every caller is answered after the COMMIT that holds
// its writes, so an acknowledged write is durable (synchronous=FULL).
// Savepoints: https://www.sqlite.org/lang_savepoint.html
//
// On a remote libSQL server (sqld) every statement is a round trip, so the queue sends as few as
// it can: writes known up front (a plain write, a batch) waiting together go as one request, BEGIN
// and COMMIT included; the SAVEPOINT and RELEASE around each transaction of a group travel with
// the next statement. There the write lock is taken by the first statement, inside the work, and
// the server takes it back from a transaction that holds it too long (TRANSACTION_TIMEOUT): a
// group that failed either way committed nothing, so it is rolled back and run again from its
// start, every transaction function of it called afresh, for up to BUSY_TIMEOUT_MS.
//
// Batches of one kind waiting next to each other in a group (Db.batch's `merge`: a webhook push's
// delivery and builds) are merged into fewer statements, which a remote server prepares once for
// all of them (MergeKind in database.ts). The merged statements write all of the batches or none;
// when they wrote none, or failed, each batch runs again as given, first in line.
import { AsyncLocalStorage } from "node:async_hooks";
import {
  BUSY_TIMEOUT_MS,
  busyDelay,
  isRead,
  isRetryableWrite,
  mustRunAlone,
  normalize,
  retryBusy,
  type Args,
  type Db,
  type DriverName,
  type Mergeable,
  type MergeKind,
  type NormalizedStatement,
  type ResultSet,
  type Statement,
  type Transaction,
} from "./database.ts";

/** One open write transaction on the driver's writer connection. */
export interface WriteSession {
  execute(stmt: NormalizedStatement): ResultSet | Promise<ResultSet>;
  /** The statements in order (one round trip on a remote server); stops at the first that fails, with its error. */
  batch(stmts: NormalizedStatement[]): ResultSet[] | Promise<ResultSet[]>;
  /**
   * A statement whose answer nobody reads (SAVEPOINT, RELEASE). A remote session sends it ahead of
   * the next statement rather than in a round trip of its own; a failure shows there.
   */
  later(stmt: NormalizedStatement): void;
  commit(): void | Promise<void>;
  rollback(): void | Promise<void>;
}

export interface WriteBackend {
  /** BEGIN IMMEDIATE; fails with SQLITE_BUSY while another connection writes (retried here). */
  begin(): WriteSession | Promise<WriteSession>;
  /**
   * Statements known up front as one write transaction in one request, BEGIN and COMMIT included:
   * all of them or none. Given by drivers where each statement is a round trip (a remote server).
   */
  batch?(stmts: NormalizedStatement[]): Promise<ResultSet[]>;
  /** A statement that cannot run inside a transaction (VACUUM), on the writer, alone. */
  alone(stmt: NormalizedStatement): ResultSet | Promise<ResultSet>;
}

interface Job {
  work?: (tx: Transaction) => Promise<unknown>;
  /** Writes known up front (Db.execute of a write, Db.batch): resolved with their results. */
  statements?: NormalizedStatement[];
  alone?: NormalizedStatement;
  /** Runs in a group of its own: a batch of it failed in a group (in one request, or without a savepoint), and only the failing job may fail. */
  solo?: boolean;
  /** A batch that may be merged with others of its kind next to it (Db.batch's `merge`). */
  merge?: Mergeable;
  /** Not to be merged again: its merged statements wrote nothing or failed. */
  unmerged?: boolean;
  /** The batches this job's statements merge; on a failure they run again as given (unmerge). */
  members?: Job[];
  /** When this job's group first lost its transaction (busy, timed out) and was put back, and how often since. */
  retryingSince?: number;
  retries?: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** At most this many transactions share one commit, so one commit's latency stays bounded. */
export const MAX_GROUP = 64;

/**
 * A group of writes known up front is one request to a remote server, which takes a request only
 * so large: sqld's WebSocket closed the connection on a message of 16 MiB (every request on it
 * failing), and it refuses a single value over about 4 MB. So a group stops taking writes once
 * their arguments pass this many bytes (as they travel: a string escaped and in UTF-8, a blob as base64); a write larger alone
 * goes alone. A webhook body's pieces (lib/webhooks/delivery-bodies.ts) are the writes this holds apart.
 */
export const MAX_GROUP_BYTES = 6 * 1024 * 1024;

/**
 * Batches merged into one job take at most this many bytes of arguments between them: a merge
 * sends them as one value (a JSON text), and sqld refuses a value over about 4 MB, as it would
 * arrive escaped within the request's own JSON. A batch larger alone is not merged.
 */
export const MAX_MERGED_BYTES = 1024 * 1024;

/**
 * A group stops taking its next transaction once it has held the write lock this long, and
 * commits. Other processes wait for that lock; on a remote server, where each statement is a
 * round trip, a full group could otherwise hold it for seconds (and sqld takes the lock back
 * from a transaction that held it about 5 s while another connection waited).
 */
export const GROUP_BUDGET_MS = 500;

/**
 * A write started through the database (not the transaction handle) while this process's own
 * transaction runs can only run after that transaction commits. If the transaction awaits it,
 * neither ever finishes; after this long the write is refused with an explanation.
 */
export const NESTED_WRITE_TIMEOUT_MS = 30_000;

/**
 * The session a group runs on, remembering the first failure that means the transaction is gone
 * or never took the lock (busy, timed out): from then on every statement fails with it, and the
 * group runs again, even where a transaction function caught the error and carried on.
 */
class GroupSession {
  lost: unknown = undefined;
  constructor(readonly inner: WriteSession) {}

  execute(stmt: NormalizedStatement): Promise<ResultSet> {
    return this.#watch(() => this.inner.execute(stmt));
  }

  batch(stmts: NormalizedStatement[]): Promise<ResultSet[]> {
    return this.#watch(() => this.inner.batch(stmts));
  }

  later(stmt: NormalizedStatement): void {
    if (this.lost !== undefined) throw this.lost;
    try {
      this.inner.later(stmt);
    } catch (error) {
      this.#seen(error);
    }
  }

  async commit(): Promise<void> {
    if (this.lost !== undefined) throw this.lost;
    await this.#watch(() => this.inner.commit());
  }

  async #watch<T>(run: () => T | Promise<T>): Promise<T> {
    if (this.lost !== undefined) throw this.lost;
    try {
      return await run();
    } catch (error) {
      this.#seen(error);
    }
  }

  #seen(error: unknown): never {
    if (isRetryableWrite(error)) this.lost ??= error;
    throw error;
  }
}

class QueueTransaction implements Transaction {
  closed = false;
  constructor(private readonly session: GroupSession) {}

  async execute(stmt: Statement, args?: Args): Promise<ResultSet> {
    if (this.closed) throw new Error("The transaction is closed: its work has already finished");
    return this.session.execute(normalize(stmt, args));
  }
}

export class WriteQueue {
  readonly #backend: WriteBackend;
  readonly #queue: Job[] = [];
  readonly #inside = new AsyncLocalStorage<{ active: boolean }>();
  #draining = false;
  #closed = false;
  /** Commits made so far (each may hold several transactions). */
  commits = 0;

  constructor(backend: WriteBackend) {
    this.#backend = backend;
  }

  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#enqueue({ work }) as Promise<T>;
  }

  /** Writes known up front, in order, as one transaction of their own: all of them or none; `merge`: see Db.batch. */
  statements(stmts: NormalizedStatement[], merge?: Mergeable): Promise<ResultSet[]> {
    return this.#enqueue({ statements: stmts, merge }) as Promise<ResultSet[]>;
  }

  alone(stmt: NormalizedStatement): Promise<ResultSet> {
    return this.#enqueue({ alone: stmt }) as Promise<ResultSet>;
  }

  /** Refuses new work and rejects what has not started. */
  close(): void {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new Error("The database is closed"));
  }

  #enqueue(what: Pick<Job, "work" | "statements" | "alone" | "merge">): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error("The database is closed"));
    return new Promise((resolve, reject) => {
      const job: Job = { ...what, resolve, reject };
      if (this.#inside.getStore()?.active) this.#watch(job);
      this.#queue.push(job);
      if (!this.#draining) {
        this.#draining = true;
        // Start after the I/O callbacks of this turn of the event loop have run, so writes from
        // requests that arrived together (and anything they await without I/O) share a commit.
        setImmediate(() => void this.#drain());
      }
    });
  }

  #watch(job: Job): void {
    const timer = setTimeout(() => {
      const at = this.#queue.indexOf(job);
      if (at < 0) return;
      this.#queue.splice(at, 1);
      job.reject(
        new Error("A database write inside a transaction must use the transaction's handle (tx), not the database: it waits for that transaction's own commit"),
      );
    }, NESTED_WRITE_TIMEOUT_MS);
    timer.unref?.();
    const { resolve, reject } = job;
    job.resolve = (v) => (clearTimeout(timer), resolve(v));
    job.reject = (e) => (clearTimeout(timer), reject(e));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const head = this.#queue[0]!;
        if (head.alone) {
          this.#queue.shift();
          try {
            head.resolve(await retryBusy(() => this.#backend.alone(head.alone!)));
          } catch (error) {
            head.reject(error);
          }
          continue;
        }
        if (head.statements && this.#backend.batch) await this.#sendGroup();
        else await this.#commitGroup();
        // A commit blocks the event loop for its fsync; requests that arrived meanwhile are read
        // only when the loop turns. Let them enqueue before taking the next group, or each would
        // get a commit (and an fsync) of its own.
        if (this.#queue.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#draining = false;
    }
  }

  /** The transactions at the head of the queue, up to MAX_GROUP (only writes known up front when `known`). */
  #takeGroup(known: boolean): Job[] {
    const first = this.#queue[0];
    if (!first || first.alone) return [];
    if (first.solo) return this.#queue.splice(0, 1);
    let n = 0;
    let bytes = 0;
    while (n < this.#queue.length && n < MAX_GROUP) {
      const job = this.#queue[n]!;
      if (job.alone || job.solo || (known && !job.statements)) break;
      if (known) {
        bytes += requestBytes(job.statements!);
        if (n > 0 && bytes > MAX_GROUP_BYTES) break;
      }
      n++;
    }
    return this.#merged(this.#queue.splice(0, n));
  }

  /**
   * The group with the batches of one kind next to each other (not unmerged) as one job for each
   * MAX_MERGED_BYTES of them, whose statements are their merge: resolved, each batch gets its own
   * results; when the merged statements wrote nothing, each batch runs again as given, first in line.
   */
  #merged(group: Job[]): Job[] {
    if (!group.some((job) => job.merge && !job.unmerged)) return group;
    const out: Job[] = [];
    let run: Job[] = [];
    let bytes = 0;
    const flush = () => {
      if (run.length > 0) out.push(...this.#merge(run));
      run = [];
      bytes = 0;
    };
    for (const job of group) {
      if (!job.merge || job.unmerged) {
        flush();
        out.push(job);
        continue;
      }
      const size = requestBytes(job.statements!);
      if (run.length > 0 && (job.merge.kind !== run[0]!.merge!.kind || bytes + size > MAX_MERGED_BYTES)) flush();
      run.push(job);
      bytes += size;
    }
    flush();
    return out;
  }

  /** The batches of `run` (one kind) as one job whose statements are their merge, or as they are when they are not merged. */
  #merge(run: Job[]): Job[] {
    if (run.length < 2) return run;
    let merged: ReturnType<MergeKind<unknown>["merge"]>;
    try {
      merged = run[0]!.merge!.kind.merge(run.map((job) => job.merge!.item));
    } catch {
      merged = null; // a merge the kind cannot make: each batch as given
    }
    if (!merged) return run;
    const { statements, split } = merged;
    return [
      {
        statements,
        members: run,
        resolve: (results) => {
          let each: ResultSet[][] | null;
          try {
            each = split(results as ResultSet[]);
          } catch (error) {
            for (const job of run) job.reject(error);
            return;
          }
          if (each) run.forEach((job, k) => job.resolve(each[k]));
          else this.#queue.unshift(...run.map((job) => Object.assign(job, { unmerged: true })));
        },
        reject: (error) => {
          for (const job of run) job.reject(error);
        },
      },
    ];
  }

  /**
   * Puts back, first in line, the transactions of a group that committed nothing because its
   * transaction never took the lock or lost it, and waits a moment before they run again; once
   * they have been put back for BUSY_TIMEOUT_MS they fail with the error instead.
   */
  async #again(jobs: Job[], error: unknown): Promise<void> {
    const now = performance.now();
    let since = now;
    let tries = 0;
    for (const job of jobs) {
      job.retryingSince ??= now;
      job.retries = (job.retries ?? 0) + 1;
      since = Math.min(since, job.retryingSince);
      tries = Math.max(tries, job.retries);
    }
    if (now - since > BUSY_TIMEOUT_MS) {
      for (const job of jobs) job.reject(error);
      return;
    }
    this.#queue.unshift(...jobs);
    await Bun.sleep(busyDelay(tries - 1));
  }

  /** Writes known up front, of every transaction waiting together, as one request (a remote server). */
  async #sendGroup(): Promise<void> {
    const group = this.#takeGroup(true);
    let results: ResultSet[];
    try {
      results = await this.#backend.batch!(group.flatMap((job) => job.statements!));
    } catch (error) {
      if (isRetryableWrite(error)) return this.#again(group, error);
      if (isStatementError(error) && group.some((job) => job.members)) {
        // Merged batches failed (with the others of the request): each runs again as given.
        this.#queue.unshift(...unmerge(group));
        return;
      }
      if (group.length > 1 && isStatementError(error)) {
        // One statement failed and took the others' writes with it: each transaction again, in a
        // request of its own, so that only the failing one fails.
        for (const job of group) job.solo = true;
        this.#queue.unshift(...group);
        return;
      }
      for (const job of group) job.reject(error);
      return;
    }
    this.commits++;
    let at = 0;
    for (const job of group) {
      const n = job.statements!.length;
      job.resolve(results.slice(at, at + n));
      at += n;
    }
  }

  async #commitGroup(): Promise<void> {
    let inner: WriteSession;
    try {
      inner = await retryBusy(() => this.#backend.begin());
    } catch (error) {
      for (const job of this.#takeGroup(false)) job.reject(error);
      return;
    }
    const session = new GroupSession(inner);
    const began = performance.now();
    // Taken after BEGIN succeeded: whatever arrived while waiting for the lock joins this commit.
    const group = this.#takeGroup(false);
    if (group.length <= 1) {
      const job = group[0];
      try {
        const value = job ? await this.#run(job, session) : undefined;
        await session.commit();
        this.commits++;
        job?.resolve(value);
      } catch (error) {
        await quietly(() => inner.rollback());
        const lost = session.lost ?? (isRetryableWrite(error) ? error : undefined);
        if (job && lost !== undefined) return this.#again([job], lost);
        if (job?.members) this.#queue.unshift(...unmerge([job]));
        else job?.reject(error);
      }
      return;
    }
    const done: Array<[Job, unknown]> = [];
    for (let i = 0; i < group.length; i++) {
      if (i > 0 && performance.now() - began > GROUP_BUDGET_MS) {
        // Held the lock long enough: commit what ran, the rest goes first into the next group.
        this.#queue.unshift(...group.slice(i));
        break;
      }
      const job = group[i]!;
      if (job.statements) {
        // Writes known up front run without a savepoint of their own: a SAVEPOINT and a RELEASE
        // around every batch of a shared commit cost more than the rare failure does. One of its
        // statements failing leaves the batch's earlier ones written, so the whole group is rolled
        // back and put back first in line: the batches before it run again together, this one in
        // a group of its own, where only it fails.
        try {
          done.push([job, await this.#run(job, session)]);
          continue;
        } catch (error) {
          await quietly(() => inner.rollback());
          const again = [...done.map(([j]) => j), ...group.slice(i)];
          if (session.lost !== undefined) return this.#again(again, session.lost);
          if (job.members) {
            this.#queue.unshift(...unmerge(again));
            return;
          }
          job.solo = true;
          this.#queue.unshift(...again);
          return;
        }
      }
      const savepoint = `roost_write_${i}`;
      try {
        session.later({ sql: `SAVEPOINT ${savepoint}`, args: [] });
        const value = await this.#run(job, session);
        session.later({ sql: `RELEASE ${savepoint}`, args: [] });
        done.push([job, value]);
      } catch (error) {
        if (session.lost !== undefined) {
          await quietly(() => inner.rollback());
          return this.#again([...done.map(([j]) => j), ...group.slice(i)], session.lost);
        }
        try {
          await session.execute({ sql: `ROLLBACK TO ${savepoint}`, args: [] });
          await session.execute({ sql: `RELEASE ${savepoint}`, args: [] });
          job.reject(error);
        } catch {
          await quietly(() => inner.rollback());
          if (session.lost !== undefined) return this.#again([...done.map(([j]) => j), ...group.slice(i)], session.lost);
          // The failure ended the whole transaction (RAISE(ROLLBACK), a full disk, ...): this job
          // fails; the others lost their uncommitted writes with it and run again, first in line.
          job.reject(error);
          this.#queue.unshift(...done.map(([j]) => j), ...group.slice(i + 1));
          return;
        }
      }
    }
    try {
      await session.commit();
      this.commits++;
    } catch (error) {
      await quietly(() => inner.rollback());
      const lost = session.lost ?? (isRetryableWrite(error) ? error : undefined);
      if (lost !== undefined)
        return this.#again(
          done.map(([j]) => j),
          lost,
        );
      for (const [job] of done) job.reject(error);
      return;
    }
    for (const [job, value] of done) job.resolve(value);
  }

  async #run(job: Job, session: GroupSession): Promise<unknown> {
    if (job.statements) return session.batch(job.statements);
    const store = { active: true };
    const tx = new QueueTransaction(session);
    try {
      return await this.#inside.run(store, () => job.work!(tx));
    } finally {
      store.active = false;
      tx.closed = true;
    }
  }
}

/** The jobs with each merge of batches taken apart: its batches, each to run as given. */
function unmerge(jobs: Job[]): Job[] {
  return jobs.flatMap((job) => (job.members ? job.members.map((member) => Object.assign(member, { unmerged: true })) : [job]));
}

/**
 * An error a statement raised on the server (a constraint, a trigger's RAISE), as opposed to a
 * lost connection, after which nobody knows whether the request committed.
 */
function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_");
}

async function quietly(action: () => void | Promise<void>): Promise<void> {
  try {
    await action();
  } catch {
    // already rolled back, or the connection is gone: nothing is left to undo
  }
}

/**
 * A driver's Db: reads outside transactions go to its reader (`read`), every write through its
 * write queue, a statement that must run alone (VACUUM) outside any group.
 * `closeConnections` runs once, after the queue stopped taking work.
 */
export function queuedDb(
  driver: DriverName,
  queue: WriteQueue,
  read: (statement: NormalizedStatement) => ResultSet | Promise<ResultSet>,
  closeConnections: () => void,
): Db {
  let closed = false;
  return {
    driver,
    get closed() {
      return closed;
    },
    get commits() {
      return queue.commits;
    },
    async execute(stmt: Statement, args?: Args): Promise<ResultSet> {
      const statement = normalize(stmt, args);
      if (isRead(statement.sql)) return read(statement);
      if (mustRunAlone(statement.sql)) return queue.alone(statement);
      return (await queue.statements([statement]))[0]!;
    },
    async batch(stmts: Statement[], _mode?: "write" | "deferred", merge?: Mergeable): Promise<ResultSet[]> {
      return queue.statements(
        stmts.map((s) => normalize(s)),
        merge,
      );
    },
    transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
      return queue.transaction(work);
    },
    close(): void {
      if (closed) return;
      closed = true;
      queue.close();
      closeConnections();
    },
  };
}

/**
 * requestBytes of each job's statements, as counted once: a group counts its jobs, then its merge
 * counts them again (a webhook push's: a kilobyte of body and decisions, escaped, each time).
 */
const counted = new WeakMap<NormalizedStatement[], number>();

/** A character JSON.stringify writes as more than itself (RFC 8259 section 7): a quote, a backslash, a control character, a lone surrogate (u flag: a pair is one code point). */
const ESCAPED = /["\\\u0000-\u001f]|\p{Cs}/u;
/** A character it writes as six (\uXXXX). */
const ESCAPED_AS_SIX = /[\u0000-\u001f]|\p{Cs}/u;

/**
 * A string's size escaped in a request's JSON, as UTF-8: exact, or a bound above it, without
 * building the escaped copy where that can be helped (re-stringifying every argument to count it
 * was about 5 % of the daemon's CPU on log appends to sqld). Without anything to escape: its UTF-8
 * bytes and two quotes. With quotes or backslashes only (a JSON text, such as each log append's
 * lines): at most twice its bytes, each of those two bytes instead of one. With a character
 * written as six (a log line's raw ANSI escape): counted exactly, as before.
 */
function escapedBytes(value: string): number {
  if (!ESCAPED.test(value)) return Buffer.byteLength(value) + 2;
  if (!ESCAPED_AS_SIX.test(value)) return 2 * Buffer.byteLength(value) + 2;
  return Buffer.byteLength(JSON.stringify(value));
}

/** About how many bytes statements take in a request to a remote server (Hrana's JSON: a blob as base64). */
function requestBytes(stmts: NormalizedStatement[]): number {
  const known = counted.get(stmts);
  if (known !== undefined) return known;
  let bytes = 0;
  for (const stmt of stmts) {
    bytes += stmt.sql.length;
    for (const value of Array.isArray(stmt.args) ? stmt.args : Object.values(stmt.args)) {
      // As it travels: a string escaped in the request's JSON (a control character as six
      // characters, a quote as two) and as UTF-8 bytes (up to three a character).
      if (typeof value === "string") bytes += escapedBytes(value);
      else if (value instanceof Uint8Array) bytes += Math.ceil(value.byteLength / 3) * 4;
    }
  }
  counted.set(stmts, bytes);
  return bytes;
}
