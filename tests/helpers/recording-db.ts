// A database that shows the test each statement run through it, before running it: for the
// query-plan tests (tests/helpers/query-plans.ts) and for tests that count what a stream reads.
import type { Args, Db, Statement } from "../../lib/db/client.ts";

/** `db`, telling `seen` of every statement run through it, in its transactions and batches too. */
export function recordingDb(db: Db, seen: (sql: string, args: Args) => void): Db {
  const record = (stmt: Statement, args?: Args) => (typeof stmt === "string" ? seen(stmt, args ?? []) : seen(stmt.sql, stmt.args ?? []));
  const recording = <E extends object>(target: E): E =>
    new Proxy(target, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== "function") return value;
        if (key === "execute") return (stmt: Statement, args?: Args) => (record(stmt, args), value.call(target, stmt, args));
        if (key === "batch") return (stmts: Statement[], mode?: "write" | "deferred") => (stmts.forEach((s) => record(s)), value.call(target, stmts, mode));
        if (key === "transaction") return (work: (tx: object) => Promise<unknown>) => value.call(target, (tx: object) => work(recording(tx)));
        return value.bind(target);
      },
    });
  return recording(db);
}
