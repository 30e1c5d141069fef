// Fault injection for state-change tests: a database whose transactions fail at their n-th
// statement, the way a crash, a full disk or a lost libSQL connection would interrupt them between
// two writes. Everything else passes through to the real database.
import type { Db, ResultSet, Statement, Transaction } from "../../lib/db/client.ts";

export class InjectedFault extends Error {}

/**
 * `db`, except that inside each write transaction the `failAt`-th statement throws InjectedFault.
 * A write batch (one transaction of statements known up front, as a guarded batch is) runs as a
 * transaction of its statements one by one, so it fails between two of them the same way.
 */
export function failingAtStatement(db: Db, failAt: number): Db {
  const faulty: Db = new Proxy(db, {
    get(target, key, receiver) {
      if (key === "batch")
        return (stmts: Statement[]) =>
          faulty.transaction(async (tx) => {
            const results: ResultSet[] = [];
            for (const stmt of stmts) results.push(await tx.execute(stmt));
            return results;
          });
      if (key !== "transaction") {
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (work: (tx: Transaction) => Promise<unknown>) =>
        target.transaction((tx) => {
          let statements = 0;
          const failing: Transaction = {
            get closed() {
              return tx.closed;
            },
            execute(...a: Parameters<Transaction["execute"]>) {
              if (++statements === failAt) return Promise.reject(new InjectedFault(`injected failure at statement ${failAt}`));
              return tx.execute(...a);
            },
          };
          return work(failing);
        });
    },
  });
  return faulty;
}

/** Thrown after the first transaction's work, to roll that run back (rerunningFirstTransaction). */
class TakenBack extends Error {}

/**
 * `db`, except that its first write transaction is rolled back once its work is done, and the work
 * runs again from its start: what the write queue does when the database took the write lock back
 * (a libSQL server's TRANSACTION_TIMEOUT, lib/db/write-queue.ts). `between` runs after the
 * rollback and before the rerun: what another process commits meanwhile. `reruns` counts them.
 */
export function rerunningFirstTransaction(db: Db, between?: () => Promise<void>): { db: Db; readonly reruns: number } {
  let transactions = 0;
  let reruns = 0;
  const rerunning: Db = new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== "transaction") return typeof value === "function" ? value.bind(target) : value;
      return async <T>(work: (tx: Transaction) => Promise<T>): Promise<T> => {
        if (transactions++ > 0) return target.transaction(work);
        try {
          await target.transaction(async (tx) => {
            await work(tx);
            throw new TakenBack();
          });
        } catch (error) {
          if (!(error instanceof TakenBack)) throw error;
        }
        await between?.();
        reruns++;
        return target.transaction(work);
      };
    },
  });
  return {
    db: rerunning,
    get reruns() {
      return reruns;
    },
  };
}

/** Every row of the tables a build's life touches, for "nothing changed" comparisons. */
export async function snapshotState(db: Db): Promise<Record<string, unknown[]>> {
  const tables = ["builds", "jobs", "build_logs", "build_log_stats", "operator_incidents", "projects"];
  const out: Record<string, unknown[]> = {};
  for (const table of tables) {
    const result = await db.execute(`SELECT * FROM ${table} ORDER BY rowid`);
    out[table] = result.rows.map((r) => ({ ...r }));
  }
  return out;
}
