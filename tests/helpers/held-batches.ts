// The app on a test app's database, except that write batches can be held until several have
// arrived and then let go at once: so the write queue (lib/db/write-queue.ts) finds them waiting
// together, in one group, as concurrent requests of a busy daemon are. Reads and transactions pass.
import { routes } from "../../handlers/routes.ts";
import type { Db } from "../../lib/db/client.ts";
import { createApp } from "../../lib/http/app.ts";
import type { TestApp } from "./app.ts";

export function appHoldingBatches(t: TestApp): {
  app: ReturnType<typeof createApp>;
  db: Db;
  holdNext(n: number, options?: { transactions?: boolean }): void;
  /** How many held writes are waiting. */
  waiting(): number;
} {
  let hold = 0;
  let holdTransactions = false;
  const waiting: (() => void)[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const release = () => {
    clearTimeout(timer);
    hold = 0;
    holdTransactions = false;
    for (const go of waiting.splice(0)) go();
  };
  const db = new Proxy(t.db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      const held = () =>
        new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === hold) release();
        });
      if (key === "batch")
        return async (...args: Parameters<Db["batch"]>) => {
          if (hold > 0) await held();
          return target.batch(...args);
        };
      if (key === "transaction")
        return async <T>(work: (tx: Parameters<Parameters<Db["transaction"]>[0]>[0]) => Promise<T>) => {
          if (hold > 0 && holdTransactions) await held();
          return target.transaction(work);
        };
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    app: createApp({ ...t.ctx, db }, routes),
    db,
    /**
     * The next `n` write batches (with `transactions`, write batches and transactions) wait until
     * all `n` have arrived, and go to the write queue in the order they arrived.
     */
    holdNext(n: number, options: { transactions?: boolean } = {}) {
      hold = n;
      holdTransactions = options.transactions === true;
      // Never longer than this: a test whose requests send fewer batches fails on what they answer, not on its timeout.
      timer = setTimeout(release, 5_000);
    },
    waiting: () => waiting.length,
  };
}
