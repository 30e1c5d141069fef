// The embedded database client (lib/db/embedded-client.ts): @libsql/client's Client contract with
// cached statements, and in-process write serialization that never stalls the event loop.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LibsqlError } from "@libsql/client";
import { inTransaction, openDatabase, type Db } from "../../lib/db/client.ts";

let dir: string;
let db: Db;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-embedded-"));
  db = await openDatabase(`file:${join(dir, "t.db")}`);
  await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER)");
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("results look like @libsql/client's", () => {
  test("rows by name and by index, length, rowsAffected and lastInsertRowid", async () => {
    const insert = await db.execute({ sql: "INSERT INTO t (name, n) VALUES (?, ?)", args: ["a", 1] });
    expect(insert.rowsAffected).toBe(1);
    expect(insert.lastInsertRowid).toBe(1n);
    const rs = await db.execute({ sql: "SELECT name, n FROM t WHERE name = ?", args: ["a"] });
    expect(rs.columns).toEqual(["name", "n"]);
    const row = rs.rows[0]!;
    expect([row.name, row.n, row[0], row[1], row.length]).toEqual(["a", 1, "a", 1, 2]);
    expect(JSON.parse(JSON.stringify(row))).toEqual({ name: "a", n: 1 });
    expect(Object.keys(row)).toEqual(["name", "n"]);
  });

  test("named arguments and booleans", async () => {
    await db.execute({ sql: "INSERT INTO t (name, n) VALUES (:name, :n)", args: { name: "b", n: true } });
    expect((await db.execute("SELECT n FROM t WHERE name = 'b'")).rows[0]!.n).toBe(1);
  });

  test("constraint violations are LibsqlError with SQLite's codes", async () => {
    await db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: ["dup"] });
    const error = await db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: ["dup"] }).catch((e) => e);
    expect(error).toBeInstanceOf(LibsqlError);
    expect(error.code).toBe("SQLITE_CONSTRAINT");
    expect(error.extendedCode).toBe("SQLITE_CONSTRAINT_UNIQUE");
  });

  test("a cached statement still sees a column added later", async () => {
    await db.execute("INSERT INTO t (name) VALUES ('c')");
    expect(Object.keys((await db.execute("SELECT * FROM t")).rows[0]!)).toEqual(["id", "name", "n"]);
    await db.execute("ALTER TABLE t ADD COLUMN extra TEXT DEFAULT 'x'");
    expect((await db.execute("SELECT * FROM t")).rows[0]!.extra).toBe("x");
  });
});

describe("transactions", () => {
  test("a failed transaction leaves nothing behind", async () => {
    await expect(
      inTransaction(db, async (tx) => {
        await tx.execute("INSERT INTO t (name) VALUES ('gone')");
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows[0]!.c).toBe(0);
  });

  test("reads outside a transaction see only committed data, and do not wait for it", async () => {
    const tx = await db.transaction("write");
    await tx.execute("INSERT INTO t (name) VALUES ('pending')");
    expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows[0]!.c).toBe(0);
    await tx.commit();
    expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows[0]!.c).toBe(1);
  });

  test("50 concurrent read-modify-write transactions lose no update and do not stall", async () => {
    await db.execute("INSERT INTO t (name, n) VALUES ('counter', 0)");
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, () =>
        inTransaction(db, async (tx) => {
          const n = Number((await tx.execute("SELECT n FROM t WHERE name = 'counter'")).rows[0]!.n);
          await Bun.sleep(1);
          await tx.execute({ sql: "UPDATE t SET n = ? WHERE name = 'counter'", args: [n + 1] });
        }),
      ),
    );
    expect((await db.execute("SELECT n FROM t WHERE name = 'counter'")).rows[0]!.n).toBe(50);
    // A stalled event loop would wait for the 10 s busy timeout at least once.
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test("a single write waits for an open transaction instead of failing", async () => {
    const tx = await db.transaction("write");
    const write = db.execute("INSERT INTO t (name) VALUES ('after')");
    await tx.execute("INSERT INTO t (name) VALUES ('first')");
    await tx.commit();
    await write;
    const names = (await db.execute("SELECT name FROM t ORDER BY id")).rows.map((r) => r.name);
    expect(names).toEqual(["first", "after"]);
  });

  test("batches are atomic", async () => {
    await expect(db.batch([{ sql: "INSERT INTO t (name) VALUES ('x')", args: [] }, { sql: "INSERT INTO t (name) VALUES ('x')", args: [] }], "write")).rejects.toThrow();
    expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows[0]!.c).toBe(0);
  });
});

describe("connection settings", () => {
  test("both connections use WAL, synchronous=FULL (acknowledged writes survive a power loss) and foreign keys", async () => {
    const { createEmbeddedClient } = await import("../../lib/db/embedded-client.ts");
    const client = createEmbeddedClient(join(dir, "settings.db"), 1000);
    expect(client.pragma("journal_mode")).toEqual({ reader: "wal", writer: "wal" });
    expect(client.pragma("synchronous")).toEqual({ reader: 2, writer: 2 });
    expect(client.pragma("foreign_keys")).toEqual({ reader: 1, writer: 1 });
    client.close();
  });
});
