// One process's writes, one at a time and grouped: the write queue.
//
// SQLite allows one writer per database. Writers of this process wait here, on promises, never
// inside SQLite (which would block the event loop). When the queue gets its turn it opens one
// write transaction (BEGIN IMMEDIATE, retried with backoff while another process writes), takes
// every write transaction waiting at that moment, runs each inside its own SAVEPOINT, and commits
// them all at once: one commit and one fsync for a burst of webhook deliveries, build creations
// or log appends. A transaction that throws is rolled back to its savepoint (its own writes
// only) and rejected; the others commit. Every caller is answered after the COMMIT that holds
// its writes, so an acknowledged write is durable (synchronous=FULL).
// Savepoints: https://www.sqlite.org/lang_savepoint.html
import { AsyncLocalStorage } from "node:async_hooks";
import { normalize, retryBusy, type Args, type NormalizedStatement, type ResultSet, type Statement, type Transaction } from "./database.ts";

/** One open write transaction on the driver's writer connection. */
export interface WriteSession {
  execute(stmt: NormalizedStatement): ResultSet | Promise<ResultSet>;
  commit(): void | Promise<void>;
  rollback(): void | Promise<void>;
}

export interface WriteBackend {
  /** BEGIN IMMEDIATE; fails with SQLITE_BUSY while another connection writes (retried here). */
  begin(): WriteSession | Promise<WriteSession>;
  /** A statement that cannot run inside a transaction (VACUUM), on the writer, alone. */
  alone(stmt: NormalizedStatement): ResultSet | Promise<ResultSet>;
}

interface Job {
  work?: (tx: Transaction) => Promise<unknown>;
  alone?: NormalizedStatement;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** At most this many transactions share one commit, so one commit's latency stays bounded. */
export const MAX_GROUP = 64;

/**
 * A write started through the database (not the transaction handle) while this process's own
 * transaction runs can only run after that transaction commits. If the transaction awaits it,
 * neither ever finishes; after this long the write is refused with an explanation.
 */
export const NESTED_WRITE_TIMEOUT_MS = 30_000;

class QueueTransaction implements Transaction {
  closed = false;
  constructor(private readonly session: WriteSession) {}

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

  alone(stmt: NormalizedStatement): Promise<ResultSet> {
    return this.#enqueue({ alone: stmt }) as Promise<ResultSet>;
  }

  /** Refuses new work and rejects what has not started. */
  close(): void {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(new Error("The database is closed"));
  }

  #enqueue(what: Pick<Job, "work" | "alone">): Promise<unknown> {
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
      job.reject(new Error("A database write inside a transaction must use the transaction's handle (tx), not the database: it waits for that transaction's own commit"));
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
        await this.#commitGroup();
        // A commit blocks the event loop for its fsync; requests that arrived meanwhile are read
        // only when the loop turns. Let them enqueue before taking the next group, or each would
        // get a commit (and an fsync) of its own.
        if (this.#queue.length === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#draining = false;
    }
  }

  /** The write transactions at the head of the queue, up to MAX_GROUP. */
  #takeGroup(): Job[] {
    let n = 0;
    while (n < this.#queue.length && n < MAX_GROUP && this.#queue[n]!.work) n++;
    return this.#queue.splice(0, n);
  }

  async #commitGroup(): Promise<void> {
    let session: WriteSession;
    try {
      session = await retryBusy(() => this.#backend.begin());
    } catch (error) {
      for (const job of this.#takeGroup()) job.reject(error);
      return;
    }
    // Taken after BEGIN succeeded: whatever arrived while waiting for the lock joins this commit.
    const group = this.#takeGroup();
    if (group.length <= 1) {
      const job = group[0];
      try {
        const value = job ? await this.#run(job, session) : undefined;
        await session.commit();
        this.commits++;
        job?.resolve(value);
      } catch (error) {
        await quietly(() => session.rollback());
        job?.reject(error);
      }
      return;
    }
    const done: Array<[Job, unknown]> = [];
    for (let i = 0; i < group.length; i++) {
      const job = group[i]!;
      const savepoint = `roost_write_${i}`;
      try {
        await session.execute({ sql: `SAVEPOINT ${savepoint}`, args: [] });
        const value = await this.#run(job, session);
        await session.execute({ sql: `RELEASE ${savepoint}`, args: [] });
        done.push([job, value]);
      } catch (error) {
        try {
          await session.execute({ sql: `ROLLBACK TO ${savepoint}`, args: [] });
          await session.execute({ sql: `RELEASE ${savepoint}`, args: [] });
          job.reject(error);
        } catch {
          // The failure ended the whole transaction (RAISE(ROLLBACK), a full disk, ...): this job
          // fails; the others lost their uncommitted writes with it and run again, first in line.
          job.reject(error);
          this.#queue.unshift(...done.map(([j]) => j), ...group.slice(i + 1));
          await quietly(() => session.rollback());
          return;
        }
      }
    }
    try {
      await session.commit();
      this.commits++;
    } catch (error) {
      await quietly(() => session.rollback());
      for (const [job] of done) job.reject(error);
      return;
    }
    for (const [job, value] of done) job.resolve(value);
  }

  async #run(job: Job, session: WriteSession): Promise<unknown> {
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

async function quietly(action: () => void | Promise<void>): Promise<void> {
  try {
    await action();
  } catch {
    // already rolled back, or the connection is gone: nothing is left to undo
  }
}
