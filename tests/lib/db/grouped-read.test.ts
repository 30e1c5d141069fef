// Point reads grouped across requests on a libSQL database (lib/db/grouped-read.ts): the keys
// asked while a read of their kind is on its way go next as one statement, each waiter gets its
// own row, nothing is answered from before it was asked, and when the statement fails each read
// goes again alone. On a libSQL file, through a Db that records what it is sent.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db, type ResultSet, type Statement } from "../../../lib/db/client.ts";
import { groupedRead } from "../../../lib/db/grouped-read.ts";

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-grouped-"));
  db = await openDatabase(`file:${join(dir, "g.db")}`, undefined, "libsql");
  await db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL)");
  await db.batch(["a", "b", "c"].map((id) => ({ sql: "INSERT INTO t (id, v) VALUES (?, ?)", args: [id, `${id}0`] })));
});
afterAll(() => {
  db?.close();
  rmSync(dir, { recursive: true, force: true });
});

const rowOf = groupedRead({
  alone: "SELECT * FROM t WHERE id = ?",
  grouped: "SELECT t.* FROM json_each(?) AS k JOIN t ON t.id = k.value",
  keyColumn: "id",
});

/**
 * `db` as the grouped reads see it (a libSQL Db), recording each statement; an answer is handed
 * over only when released (the statement itself has run), so a read can be held on its way.
 */
function recording(options: { fail?: (sql: string, args: unknown) => boolean } = {}) {
  const sent: string[] = [];
  const held: Array<() => void> = [];
  const view = {
    driver: "libsql",
    async execute(stmt: Statement): Promise<ResultSet> {
      const sql = typeof stmt === "string" ? stmt : stmt.sql;
      sent.push(sql.includes("json_each") ? "grouped" : "alone");
      if (options.fail?.(sql, typeof stmt === "string" ? [] : stmt.args)) throw new Error("the server refused it");
      const answer = await db.execute(stmt);
      await new Promise<void>((release) => held.push(release));
      return answer;
    },
  } as unknown as Db;
  const releaseAll = async () => {
    // Each release lets the next read leave; its answer is held in turn.
    for (let i = 0; i < 20 && (held.length > 0 || i < 2); i++) {
      held.splice(0).forEach((release) => release());
      await Bun.sleep(1);
    }
  };
  return { view, sent, releaseAll };
}

test("reads asked while one is on its way go next as one statement, each answered with its own row or null", async () => {
  const { view, sent, releaseAll } = recording();
  const first = rowOf(view, "a");
  await Bun.sleep(1);
  // Asked one by one in later turns (as requests arrive), while the first is on its way.
  const later: Array<ReturnType<typeof rowOf>> = [];
  for (const key of ["b", "c", "missing", "b"]) {
    later.push(rowOf(view, key));
    await Bun.sleep(1);
  }
  await releaseAll();
  expect((await first)?.v).toBe("a0");
  expect((await Promise.all(later)).map((row) => row?.v ?? null)).toEqual(["b0", "c0", null, "b0"]);
  expect(sent).toEqual(["alone", "grouped"]);
});

test("a read asked after a write sees it, though a read of the same row from before the write is still on its way", async () => {
  const { view, releaseAll } = recording();
  const before = rowOf(view, "a");
  await Bun.sleep(1);
  // The first read has run (its answer held): a revocation written now must not be answered from it.
  await db.execute({ sql: "UPDATE t SET v = 'revoked' WHERE id = 'a'", args: [] });
  const after = rowOf(view, "a");
  await releaseAll();
  expect((await before)?.v).toBe("a0");
  expect((await after)?.v).toBe("revoked");
});

test("when a grouped statement fails, each read it carried goes again alone and gets its own answer", async () => {
  const { view, sent, releaseAll } = recording({ fail: (sql, args) => sql.includes("json_each") || JSON.stringify(args) === '["boom"]' });
  const first = rowOf(view, "b");
  await Bun.sleep(1);
  const carried = Promise.allSettled(["b", "boom", "c", "missing"].map((key) => rowOf(view, key)));
  await releaseAll();
  expect((await first)?.v).toBe("b0");
  // The alone read of 'boom' fails here as a stand-in for a key the server refuses.
  const answers = (await carried).map((r) => (r.status === "fulfilled" ? (r.value?.v ?? null) : "refused"));
  expect(answers).toEqual(["b0", "refused", "c0", null]);
  expect(sent).toEqual(["alone", "grouped", "alone", "alone", "alone", "alone"]);
});

test("on bun:sqlite and in a transaction each read goes alone, at once", async () => {
  const file = await openDatabase(`file:${join(dir, "s.db")}`, undefined, "bun:sqlite");
  try {
    await file.execute("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL)");
    await file.execute({ sql: "INSERT INTO t VALUES ('a', 'a0')", args: [] });
    expect((await Promise.all([rowOf(file, "a"), rowOf(file, "zz")])).map((r) => r?.v ?? null)).toEqual(["a0", null]);
  } finally {
    file.close();
  }
  // A transaction reads its own writes on its own connection.
  const seen = await db.transaction(async (tx) => {
    await tx.execute({ sql: "INSERT INTO t (id, v) VALUES ('d', 'd0')", args: [] });
    return rowOf(tx, "d");
  });
  expect(seen?.v).toBe("d0");
});
