// Preloaded into a server process by `npm run bench` (BUN_OPTIONS="--preload <this file>") to
// measure that process's own longest event-loop stall: a 5 ms interval notes how late each tick
// fires. It also times every synchronous bun:sqlite call (they run on the event loop), so a
// stall can be laid at a statement's door or not. SIGUSR2 writes {"seq", "max_ms", "sql_max_ms",
// "sql"} (the longest lateness and the longest SQLite call since the previous SIGUSR2) to
// $ROOST_BENCH_STALL_FILE and starts over, so the bench can bracket exactly its load window.
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";

const file = process.env.ROOST_BENCH_STALL_FILE;
if (file) {
  const INTERVAL_MS = 5;
  let last = performance.now();
  let max = 0;
  let sqlMax = 0;
  let sqlText = "";
  let seq = 0;
  setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - INTERVAL_MS);
    last = now;
  }, INTERVAL_MS).unref();

  const time = (run: () => unknown, sql: () => string) => {
    const started = performance.now();
    try {
      return run();
    } finally {
      const took = performance.now() - started;
      if (took > sqlMax) {
        sqlMax = took;
        sqlText = sql().replace(/\s+/g, " ").slice(0, 120);
      }
    }
  };
  const proto = Database.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const exec = proto.exec!;
  proto.exec = proto.run = function (this: unknown, ...args: unknown[]) {
    return time(
      () => exec.apply(this, args),
      () => String(args[0]),
    );
  };
  // A statement's all/get/run/values are set on each statement, not its prototype: wrap each
  // statement the first time query() or prepare() hands it out.
  const wrapped = new WeakSet<object>();
  for (const name of ["query", "prepare"]) {
    const make = proto[name]!;
    proto[name] = function (this: unknown, ...args: unknown[]) {
      const statement = make.apply(this, args) as Record<string, (...a: unknown[]) => unknown>;
      if (!wrapped.has(statement)) {
        wrapped.add(statement);
        for (const method of ["all", "get", "run", "values"]) {
          const original = statement[method];
          if (typeof original !== "function") continue;
          statement[method] = (...a: unknown[]) =>
            time(
              () => original.apply(statement, a),
              () => String(statement),
            );
        }
      }
      return statement;
    };
  }

  process.on("SIGUSR2", () => {
    writeFileSync(file, JSON.stringify({ seq: ++seq, max_ms: max, sql_max_ms: sqlMax, sql: sqlText }));
    max = 0;
    sqlMax = 0;
    sqlText = "";
    last = performance.now();
  });
}
