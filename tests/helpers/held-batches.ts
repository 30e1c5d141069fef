// The app on a test app's database, except that write batches can be held until several have
// arrived and then let go at once: so the write queue (lib/db/write-queue.ts) finds them waiting
// together, in one group, as concurrent requests of a busy daemon are. Reads and transactions pass.
import { routes } from "../../handlers/routes.ts";
import type { Db } from "../../lib/db/client.ts";
import { createApp } from "../../lib/http/app.ts";
import type { TestApp } from "./app.ts";

export function appHoldingBatches(t: TestApp): { app: ReturnType<typeof createApp>; db: Db; holdNext(n: number): void } {
  let hold = 0;
  const waiting: (() => void)[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const release = () => {
    clearTimeout(timer);
    hold = 0;
    for (const go of waiting.splice(0)) go();
  };
  const db = new Proxy(t.db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === "batch")
        return async (...args: Parameters<Db["batch"]>) => {
          if (hold > 0)
            await new Promise<void>((resolve) => {
              waiting.push(resolve);
              if (waiting.length === hold) release();
            });
          return target.batch(...args);
        };
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    app: createApp({ ...t.ctx, db }, routes),
    db,
    /** The next `n` write batches wait until all `n` have arrived. */
    holdNext(n: number) {
      hold = n;
      // Never longer than this: a test whose requests send fewer batches fails on what they answer, not on its timeout.
      timer = setTimeout(release, 5_000);
    },
  };
}
