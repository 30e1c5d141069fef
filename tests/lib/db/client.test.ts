// The database layer (lib/db/client.ts and the drivers behind it): the same behaviour through
// bun:sqlite, through @libsql/client on a file, and through @libsql/client on a real libSQL server
// (sqld, tests/support/sqld.ts); one async write queue with group commit, and a busy database
// (another process writing) waited out without blocking the event loop.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { driverFromEnv, inTransaction, isUniqueViolation, openDatabase, type Db, type DriverChoice } from "../../../lib/db/client.ts";
import type { BunSqliteDb } from "../../../lib/db/bun-sqlite.ts";
import type { MergeKind } from "../../../lib/db/database.ts";
import { MAX_MERGED_BYTES } from "../../../lib/db/write-queue.ts";
import { startSqld, type Sqld } from "../../support/sqld.ts";

const TARGETS: Array<DriverChoice | "sqld"> = ["bun:sqlite", "libsql", "sqld"];

describe.each(TARGETS)("through %s", (target) => {
  let dir: string;
  /** The SQLite file behind the database (sqld's own, for a server). */
  let file: string;
  let sqld: Sqld | undefined;
  let db: Db;
  const open = (): Promise<Db> => (sqld ? openDatabase(sqld.url) : openDatabase(`file:${file}`, undefined, target as DriverChoice));
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "roost-db-"));
    if (target === "sqld") {
      sqld = await startSqld();
      file = sqld.dataFile;
    } else {
      file = join(dir, "t.db");
    }
    db = await open();
    await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE, n INTEGER)");
  });
  afterEach(async () => {
    db.close();
    await sqld?.stop();
    sqld = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Names in t as a second, independent connection sees them: only what is committed. Opened
   * through the same SQLite library as the driver's: two SQLite copies in one process must not
   * open one file (their POSIX locks do not see each other; https://www.sqlite.org/howtocorrupt.html).
   */
  async function committedNames(): Promise<string[]> {
    const other = await open();
    try {
      return (await other.execute("SELECT name FROM t ORDER BY id")).rows.map((r) => String(r.name));
    } finally {
      other.close();
    }
  }

  describe("results", () => {
    test("rows are plain objects by column name, with rowsAffected and lastInsertRowid", async () => {
      const insert = await db.execute({ sql: "INSERT INTO t (name, n) VALUES (?, ?)", args: ["a", 1] });
      expect(insert.rowsAffected).toBe(1);
      expect(Number(insert.lastInsertRowid)).toBe(1);
      const rs = await db.execute({ sql: "SELECT name, n FROM t WHERE name = ?", args: ["a"] });
      expect(rs.columns).toEqual(["name", "n"]);
      expect(rs.rows).toEqual([{ name: "a", n: 1 }]);
      expect(Object.keys(rs.rows[0]!)).toEqual(["name", "n"]);
      expect(JSON.stringify(rs.rows)).toBe('[{"name":"a","n":1}]');
    });

    test("a write with RETURNING says how many rows it wrote, alone, in a batch and in a transaction (a push's delivery INSERT is read so)", async () => {
      await db.execute("INSERT INTO t (name, n) VALUES ('a', 1), ('b', 1)");
      const alone = await db.execute({ sql: "UPDATE t SET n = n + 1 WHERE n = ? RETURNING name", args: [1] });
      expect([alone.rowsAffected, alone.rows.length]).toEqual([2, 2]);
      const [written, skipped] = await db.batch([
        { sql: "INSERT INTO t (name, n) SELECT ?, 3 WHERE true RETURNING id", args: ["c"] },
        { sql: "INSERT INTO t (name, n) SELECT ?, 3 WHERE false RETURNING id", args: ["d"] },
      ]);
      expect([written!.rowsAffected, skipped!.rowsAffected]).toEqual([1, 0]);
      const inside = await inTransaction(db, (tx) => tx.execute("DELETE FROM t WHERE n = 2 RETURNING name"));
      expect(inside.rowsAffected).toBe(2);
    });

    test("named arguments, booleans as 1, BLOBs as bytes; undefined is refused, not stored as NULL", async () => {
      await db.execute({ sql: "INSERT INTO t (name, n) VALUES (:name, :n)", args: { name: "b", n: true } });
      expect((await db.execute("SELECT n FROM t WHERE name = 'b'")).rows).toEqual([{ n: 1 }]);
      expect((await db.execute("SELECT x'0102' AS b")).rows[0]!.b).toEqual(new Uint8Array([1, 2]));
      await expect(db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [undefined as never] })).rejects.toThrow("undefined");
      expect(await committedNames()).toEqual(["b"]);
    });

    test("a named argument the statement does not use is ignored (a statement made of optional parts, like retention's)", async () => {
      const args = { name: "c", n: 3, unused: 4, n_other: 5 };
      await db.execute({ sql: "INSERT INTO t (name, n) VALUES (:name, :n)", args });
      expect((await db.execute({ sql: "SELECT n FROM t WHERE name = :name", args })).rows).toEqual([{ n: 3 }]);
    });

    test("a UNIQUE violation is recognised (for a clean 409)", async () => {
      await db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: ["dup"] });
      const error = await db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: ["dup"] }).catch((e) => e);
      expect(isUniqueViolation(error)).toBe(true);
      expect(isUniqueViolation(new Error("something else"))).toBe(false);
    });

    test("a cached statement still sees a column added later", async () => {
      await db.execute("INSERT INTO t (name) VALUES ('c')");
      expect(Object.keys((await db.execute("SELECT * FROM t")).rows[0]!)).toEqual(["id", "name", "n"]);
      await db.execute("ALTER TABLE t ADD COLUMN extra TEXT DEFAULT 'x'");
      expect((await db.execute("SELECT * FROM t")).rows[0]!.extra).toBe("x");
    });
  });

  // A local file's own settings, and `roost backup` (VACUUM INTO); a server has its own
  // (docs/operations.md "Several hosts").
  if (target !== "sqld") {
    describe("a local file", () => {
      test("reader and writer both use WAL, synchronous=FULL, foreign keys and no sleeping busy handler", async () => {
        const settings = ["journal_mode", "synchronous", "foreign_keys", "busy_timeout"];
        const read = async (ex: { execute: Db["execute"] }) =>
          Promise.all(settings.map(async (p) => Object.values((await ex.execute(`PRAGMA ${p}`)).rows[0]!)[0]));
        expect(await read(db)).toEqual(["wal", 2, 1, 0]);
        expect(await inTransaction(db, (tx) => read(tx))).toEqual(["wal", 2, 1, 0]);
      });

      test("VACUUM INTO (roost backup) runs outside any transaction", async () => {
        await db.execute("INSERT INTO t (name) VALUES ('kept')");
        const copy = join(dir, "copy.db");
        await db.execute({ sql: "VACUUM INTO ?", args: [copy] });
        expect(existsSync(copy)).toBe(true);
        const other = await openDatabase(`file:${copy}`, undefined, target as DriverChoice);
        expect((await other.execute("SELECT name FROM t")).rows).toEqual([{ name: "kept" }]);
        other.close();
      });
    });
  }

  describe("transactions", () => {
    test("a failed transaction leaves nothing behind", async () => {
      await expect(
        inTransaction(db, async (tx) => {
          await tx.execute("INSERT INTO t (name) VALUES ('gone')");
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect(await committedNames()).toEqual([]);
    });

    test("reads outside a transaction see only committed data, and do not wait for it", async () => {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let inserted!: () => void;
      const insertedYet = new Promise<void>((r) => (inserted = r));
      const pending = inTransaction(db, async (tx) => {
        await tx.execute("INSERT INTO t (name) VALUES ('pending')");
        inserted();
        await gate;
      });
      await insertedYet;
      expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows).toEqual([{ c: 0 }]);
      open();
      await pending;
      expect((await db.execute("SELECT COUNT(*) AS c FROM t")).rows).toEqual([{ c: 1 }]);
    });

    test("50 concurrent read-modify-write transactions lose no update", async () => {
      await db.execute("INSERT INTO t (name, n) VALUES ('counter', 0)");
      await Promise.all(
        Array.from({ length: 50 }, () =>
          inTransaction(db, async (tx) => {
            const n = Number((await tx.execute("SELECT n FROM t WHERE name = 'counter'")).rows[0]!.n);
            await Bun.sleep(1);
            await tx.execute({ sql: "UPDATE t SET n = ? WHERE name = 'counter'", args: [n + 1] });
          }),
        ),
      );
      expect((await db.execute("SELECT n FROM t WHERE name = 'counter'")).rows).toEqual([{ n: 50 }]);
    });

    // On a server, statements started together leave in one request (lib/db/libsql.ts).
    test("statements a transaction starts together each get their own answer; a failing one fails alone", async () => {
      await db.execute("INSERT INTO t (name) VALUES ('taken')");
      const answers = await inTransaction(db, async (tx) => {
        const settled = await Promise.allSettled([
          tx.execute("INSERT INTO t (name, n) VALUES ('x', 1) RETURNING name"),
          tx.execute("INSERT INTO t (name) VALUES ('taken')"),
          tx.execute("UPDATE t SET n = 2 WHERE name IN ('x', 'taken')"),
        ]);
        return settled.map((o) => (o.status === "fulfilled" ? o.value : isUniqueViolation(o.reason)));
      });
      expect(answers.map((a) => (typeof a === "boolean" ? a : a.rows))).toEqual([[{ name: "x" }], true, []]);
      expect(answers[2]).toMatchObject({ rowsAffected: 2 });
      expect((await db.execute("SELECT name, n FROM t ORDER BY id")).rows).toEqual([
        { name: "taken", n: 2 },
        { name: "x", n: 2 },
      ]);
    });

    test("a single write waits for an open transaction instead of failing", async () => {
      const { first, open } = await holdingTheQueue(db);
      const write = db.execute("INSERT INTO t (name) VALUES ('after')");
      open();
      await Promise.all([first, write]);
      expect(await committedNames()).toEqual(["first", "after"]);
    });

    test("batches are atomic", async () => {
      await expect(db.batch(["INSERT INTO t (name) VALUES ('x')", "INSERT INTO t (name) VALUES ('x')"])).rejects.toThrow();
      expect(await committedNames()).toEqual([]);
      expect((await db.batch(["INSERT INTO t (name) VALUES ('y')", "SELECT name FROM t"])).map((r) => r.rows)).toEqual([[], [{ name: "y" }]]);
    });
  });

  describe("group commit", () => {
    test("concurrent write transactions share one commit, and each caller is answered only after it", async () => {
      await db.execute("INSERT INTO t (name) VALUES ('warm-up')");
      const before = db.commits;
      const seenAtAnswer: string[][] = [];
      const names = Array.from({ length: 10 }, (_, i) => `w${i}`);
      const results = await Promise.all(
        names.map((name) =>
          inTransaction(db, async (tx) => {
            await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [name] });
            return name;
          }).then(async (value) => {
            // The moment this caller hears back, its write is visible to any other connection.
            seenAtAnswer.push(await committedNames());
            return value;
          }),
        ),
      );
      expect(results).toEqual(names);
      expect(db.commits - before).toBe(1);
      for (const seen of seenAtAnswer) expect(seen).toEqual(["warm-up", ...names]);
    });

    test("plain writes started together share a commit too", async () => {
      const before = db.commits;
      await Promise.all(["p", "q", "r"].map((name) => db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [name] })));
      expect(db.commits - before).toBe(1);
      expect(await committedNames()).toEqual(["p", "q", "r"]);
    });

    test("a failing transaction rolls back only its own writes; the others in its commit are kept", async () => {
      const before = db.commits;
      const outcomes = await Promise.allSettled(
        ["a", "b", "c", "d"].map((name) =>
          inTransaction(db, async (tx) => {
            await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [name] });
            if (name === "b") {
              await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: ["b2"] });
              throw new Error("b fails");
            }
            // A constraint error the caller catches keeps the rest of its work.
            if (name === "c") await tx.execute("INSERT INTO t (name) VALUES ('a')").catch(() => {});
            return name;
          }),
        ),
      );
      expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message))).toEqual(["a", "b fails", "c", "d"]);
      expect(db.commits - before).toBe(1);
      expect(await committedNames()).toEqual(["a", "c", "d"]);
    });

    test("a batch that fails after its first statement wrote, among others in one commit, leaves none of its writes; the others commit", async () => {
      await db.execute("INSERT INTO t (name) VALUES ('taken')");
      // A transaction holds the queue while the batches line up behind it, so they share one group.
      const { first, open } = await holdingTheQueue(db);
      const batches = [
        ["INSERT INTO t (name) VALUES ('b1')", "INSERT INTO t (name) VALUES ('b2')"],
        ["INSERT INTO t (name) VALUES ('half')", "INSERT INTO t (name) VALUES ('taken')"],
        ["INSERT INTO t (name) VALUES ('c1')"],
      ].map((stmts) => db.batch(stmts));
      open();
      const outcomes = await Promise.allSettled([first, ...batches]);
      expect(outcomes.map((o) => (o.status === "fulfilled" ? "ok" : isUniqueViolation(o.reason) ? "unique" : String(o.reason)))).toEqual([
        "ok",
        "ok",
        "unique",
        "ok",
      ]);
      expect(await committedNames()).toEqual(["taken", "first", "b1", "b2", "c1"]);
    });

    describe("batches of one kind merged (Db.batch's merge)", () => {
      /**
       * A name each, merged into one INSERT of all of them that writes them all or none (none when
       * one is taken), as lib/webhooks/merged-writes.ts merges webhook pushes. `fail`: a name whose
       * merge is a statement that fails. `merges`: the merges made.
       */
      function names(fail?: string) {
        const merges: string[][] = [];
        const kind: MergeKind<string> = {
          merge(items) {
            merges.push(items);
            const list = JSON.stringify(items);
            return {
              statements: [
                items.includes(fail!)
                  ? { sql: "INSERT INTO missing_table (name) VALUES (?)", args: [list] }
                  : {
                      sql: "INSERT INTO t (name) SELECT value FROM json_each(?) WHERE NOT EXISTS (SELECT 1 FROM t WHERE name IN (SELECT value FROM json_each(?))) RETURNING name",
                      args: [list, list],
                    },
              ],
              split: (results) =>
                results[0]!.rows.length ? items.map((name) => [{ ...results[0]!, rows: results[0]!.rows.filter((r) => r.name === name) }]) : null,
            };
          },
        };
        const write = (name: string) => db.batch([{ sql: "INSERT INTO t (name) VALUES (?) RETURNING name", args: [name] }], "write", { kind, item: name });
        return { merges, write };
      }

      test("sent together, they are written by their merge; each caller gets its own results, after the commit", async () => {
        const { merges, write } = names();
        const seenAtAnswer: string[][] = [];
        const results = await Promise.all(["m1", "m2", "m3"].map((name) => write(name).then(async (r) => (seenAtAnswer.push(await committedNames()), r))));
        expect(merges).toEqual([["m1", "m2", "m3"]]);
        expect(results.map((r) => r.map((rs) => rs.rows))).toEqual([[[{ name: "m1" }]], [[{ name: "m2" }]], [[{ name: "m3" }]]]);
        for (const seen of seenAtAnswer) expect(seen).toEqual(["m1", "m2", "m3"]);
      });

      test("a merge that wrote nothing: each batch runs again as given, and only the one whose write fails fails", async () => {
        await db.execute("INSERT INTO t (name) VALUES ('taken')");
        const { merges, write } = names();
        const outcomes = await Promise.allSettled(["a", "taken", "c"].map(write));
        expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value[0]!.rows : isUniqueViolation(o.reason) ? "unique" : String(o.reason)))).toEqual([
          [{ name: "a" }],
          "unique",
          [{ name: "c" }],
        ]);
        expect(merges).toEqual([["a", "taken", "c"]]);
        expect(await committedNames()).toEqual(["taken", "a", "c"]);
      });

      test("a merge that fails: each batch runs again as given, and commits", async () => {
        const { merges, write } = names("y");
        const results = await Promise.all(["x", "y", "z"].map(write));
        expect(results.map((r) => r[0]!.rows)).toEqual([[{ name: "x" }], [{ name: "y" }], [{ name: "z" }]]);
        expect(merges).toEqual([["x", "y", "z"]]);
        expect(await committedNames()).toEqual(["x", "y", "z"]);
      });

      test("batches whose arguments pass MAX_MERGED_BYTES between them are merged in parts, and a larger one alone is not", async () => {
        const { merges, write } = names();
        const big = (c: string) => c.repeat(MAX_MERGED_BYTES * 0.4);
        const huge = "h".repeat(MAX_MERGED_BYTES + 1);
        await Promise.all([big("a"), big("b"), big("c"), big("d"), huge, big("e")].map(write));
        expect(merges.map((m) => m.map((name) => name[0]))).toEqual([
          ["a", "b"],
          ["c", "d"],
        ]);
        expect((await committedNames()).map((name) => `${name[0]}${name.length}`)).toEqual(
          [big("a"), big("b"), big("c"), big("d"), huge, big("e")].map((name) => `${name[0]}${name.length}`),
        );
      });

      test("batches of other kinds between them are not merged with them", async () => {
        const { merges, write } = names();
        const written = await Promise.all([write("k1"), db.batch(["INSERT INTO t (name) VALUES ('plain')"]), write("k2"), write("k3")]);
        expect(written).toHaveLength(4);
        expect(merges).toEqual([["k2", "k3"]]);
        expect(await committedNames()).toEqual(["k1", "plain", "k2", "k3"]);
      });
    });

    test("a failure that ends the whole transaction fails only its caller; the others run again and commit", async () => {
      await db.execute("CREATE TRIGGER no_boom BEFORE INSERT ON t WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom refused'); END");
      const outcomes = await Promise.allSettled(
        ["a", "boom", "c"].map((name) => inTransaction(db, async (tx) => (await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [name] }), name))),
      );
      expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : String((o.reason as Error).message)))).toEqual([
        "a",
        expect.stringContaining("boom refused"),
        "c",
      ]);
      expect(await committedNames()).toEqual(["a", "c"]);
    });
  });

  describe("another process holding the write lock", () => {
    /**
     * A second process takes the write lock of the database's file and keeps it for `ms`. On a
     * file it also writes a row; on a server's own file it only holds the lock (a row written
     * behind sqld's back would bypass its log), and sqld answers SQLITE_BUSY meanwhile.
     */
    async function holdWriteLock(ms: number): Promise<{ released: Promise<number>; wrote: string[] }> {
      const write = target !== "sqld";
      const holder = Bun.spawn(
        [
          process.execPath,
          "-e",
          `const { Database } = require("bun:sqlite");
           const db = new Database(${JSON.stringify(file)});
           db.exec("PRAGMA busy_timeout = 10000");
           db.exec("BEGIN IMMEDIATE");
           ${write ? `db.exec("INSERT INTO t (name) VALUES ('other process')");` : ""}
           console.log("locked");
           setTimeout(() => { db.exec(${write ? '"COMMIT"' : '"ROLLBACK"'}); db.close(); }, ${ms});`,
        ],
        { stdout: "pipe", stderr: "inherit" },
      );
      const reader = (holder.stdout as ReadableStream<Uint8Array>).getReader();
      const { value } = await reader.read();
      expect(new TextDecoder().decode(value)).toContain("locked");
      return { released: holder.exited, wrote: write ? ["other process"] : [] };
    }

    // Not a latency assertion (that lives in `npm run bench`): a write that slept inside SQLite's busy
    // handler would freeze the event loop for the whole second, so no timer would fire at all. The
    // lock is held a second from when the other process says so, and the write must wait 300 ms of
    // it: this process may read that line late on a loaded host (with 500 ms, 200 late failed it).
    test("a write waits for it on a timer: the event loop keeps running meanwhile", async () => {
      await db.execute("INSERT INTO t (name) VALUES ('before')");
      const holder = await holdWriteLock(1000);
      let ticks = 0;
      const probe = setInterval(() => ticks++, 5);
      const started = performance.now();
      try {
        await db.execute("INSERT INTO t (name) VALUES ('this process')");
        // A read meanwhile never waited: WAL readers run beside the writer.
      } finally {
        clearInterval(probe);
      }
      const waited = performance.now() - started;
      await holder.released;
      expect(waited).toBeGreaterThan(300);
      // ~200 at 5 ms intervals on an idle machine; a blocked loop gets 0 or 1. 10 leaves room for a loaded CI host.
      expect(ticks).toBeGreaterThan(10);
      expect(await committedNames()).toEqual(["before", ...holder.wrote, "this process"]);
    });

    // On a server the lock is taken by a transaction's first statement, inside its work: the busy
    // answer arrives there, and the whole transaction runs again once the lock is free.
    test("transactions and batches started meanwhile wait too, and commit each write once", async () => {
      const holder = await holdWriteLock(400);
      let runs = 0;
      const [tx, batch] = await Promise.all([
        inTransaction(db, async (tx) => {
          runs++;
          const n = Number((await tx.execute("SELECT COUNT(*) AS n FROM t")).rows[0]!.n);
          await tx.execute({ sql: "INSERT INTO t (name, n) VALUES ('in a transaction', ?)", args: [n] });
          return n;
        }),
        db.batch(["INSERT INTO t (name) VALUES ('in a batch')", "SELECT COUNT(*) AS n FROM t"]),
      ]);
      await holder.released;
      expect(runs).toBeGreaterThanOrEqual(1);
      expect(tx).toBe(holder.wrote.length);
      expect(batch[1]!.rows).toEqual([{ n: holder.wrote.length + 2 }]);
      expect(await committedNames()).toEqual([...holder.wrote, "in a transaction", "in a batch"]);
    });
  });

  describe("two processes on one database", () => {
    test("read-modify-write transactions through both at once lose no update", async () => {
      const second = await open();
      try {
        await db.execute("INSERT INTO t (name, n) VALUES ('counter', 0)");
        const increment = (through: Db) =>
          inTransaction(through, async (tx) => {
            const n = Number((await tx.execute("SELECT n FROM t WHERE name = 'counter'")).rows[0]!.n);
            await tx.execute({ sql: "UPDATE t SET n = ? WHERE name = 'counter'", args: [n + 1] });
          });
        await Promise.all(Array.from({ length: 60 }, (_, i) => increment(i % 2 ? db : second)));
        expect((await db.execute("SELECT n FROM t WHERE name = 'counter'")).rows).toEqual([{ n: 60 }]);
      } finally {
        second.close();
      }
    });
  });

  // sqld takes the write lock back from a transaction that has held it about 5 s while another
  // connection waits; the holder's next statement fails with TRANSACTION_TIMEOUT.
  if (target === "sqld") {
    // docs/operations.md "Several hosts", Backups: a copy taken beside the running server, restored
    // as the file of a new server's empty directory.
    describe("a backup of the server's file", () => {
      test("taken while it serves (VACUUM INTO on its file) restores into a new server", async () => {
        await db.execute("INSERT INTO t (name) VALUES ('before the backup')");
        const copy = join(dir, "backup.db");
        const copier = Bun.spawn(
          [
            process.execPath,
            "-e",
            `const { Database } = require("bun:sqlite"); new Database(${JSON.stringify(file)}, { readonly: true }).exec(${JSON.stringify(`VACUUM INTO '${copy}'`)});`,
          ],
          { stderr: "inherit" },
        );
        expect(await copier.exited).toBe(0);
        await db.execute("INSERT INTO t (name) VALUES ('after the backup')");
        const restoredDir = join(dir, "restored.sqld");
        mkdirSync(join(restoredDir, "dbs/default"), { recursive: true });
        copyFileSync(copy, join(restoredDir, "dbs/default/data"));
        const restored = await startSqld({ dir: restoredDir });
        try {
          const other = await openDatabase(restored.url);
          expect((await other.execute("SELECT name FROM t")).rows).toEqual([{ name: "before the backup" }]);
          await other.execute("INSERT INTO t (name) VALUES ('written to the restored server')");
          other.close();
        } finally {
          await restored.stop();
        }
      });
    });

    describe("a transaction the server timed out", () => {
      test("runs again from its start and commits once; nothing of the first run is kept", async () => {
        const second = await open();
        try {
          let runs = 0;
          let started!: () => void;
          const holding = new Promise<void>((r) => (started = r));
          const slow = inTransaction(db, async (tx) => {
            runs++;
            await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [`slow run ${runs}`] });
            if (runs === 1) {
              started();
              await Bun.sleep(6_000);
            }
            await tx.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [`slow run ${runs}, second write`] });
            return runs;
          });
          await holding;
          await second.execute("INSERT INTO t (name) VALUES ('the other connection')");
          expect(await slow).toBe(2);
          expect(await committedNames()).toEqual(["the other connection", "slow run 2", "slow run 2, second write"]);
        } finally {
          second.close();
        }
      }, 20_000);
    });
  }
});

describe("a libSQL server that requires a token", () => {
  // sqld --auth-jwt-key-file: clients send a JWT signed with the matching Ed25519 private key
  // (ROOST_DATABASE_AUTH_TOKEN), over either transport.
  test("opens with ROOST_DATABASE_AUTH_TOKEN over HTTP and WebSocket, and is refused without it", async () => {
    const { generateKeyPair, exportJWK, SignJWT } = await import("jose");
    const { publicKey, privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    const dir = mkdtempSync(join(tmpdir(), "roost-db-"));
    const keyFile = join(dir, "jwt.key");
    await Bun.write(keyFile, (await exportJWK(publicKey)).x!);
    const server = await startSqld({ args: ["--auth-jwt-key-file", keyFile] });
    try {
      const token = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA" }).sign(privateKey);
      const urls = [server.url, `libsql://127.0.0.1:${new URL(server.url).port}?tls=0`];
      for (const url of urls) {
        const db = await openDatabase(url, token);
        await db.execute("CREATE TABLE IF NOT EXISTS t (name TEXT)");
        await db.execute({ sql: "INSERT INTO t (name) VALUES (?)", args: [url] });
        db.close();
      }
      const db = await openDatabase(server.url, token);
      expect((await db.execute("SELECT name FROM t")).rows.map((r) => r.name)).toEqual(urls);
      db.close();
      const without = await openDatabase(server.url);
      await expect(without.execute("SELECT 1")).rejects.toThrow("401");
      without.close();
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a libSQL server over WebSocket (a libsql: URL)", () => {
  // Write batches waiting together go to a server as one request (lib/db/write-queue.ts); sqld
  // closed the WebSocket on one of 16 MiB, failing every request on it (HRANA_WEBSOCKET_ERROR,
  // code 1006). Pieces of webhook bodies (lib/webhooks/delivery-bodies.ts) are such batches.
  test("write batches of 4 MiB each, sent together, all commit", async () => {
    const server = await startSqld();
    const db = await openDatabase(`libsql://127.0.0.1:${new URL(server.url).port}?tls=0`, undefined, "libsql");
    try {
      await db.execute("CREATE TABLE pieces (batch INTEGER, seq INTEGER, piece BLOB)");
      const piece = new Uint8Array(1024 * 1024).fill(7);
      const batch = (n: number) => db.batch([0, 1, 2, 3].map((seq) => ({ sql: "INSERT INTO pieces VALUES (?, ?, ?)", args: [n, seq, piece] })));
      const settled = await Promise.allSettled([0, 1, 2, 3].map(batch));
      expect(settled.map((s) => (s.status === "fulfilled" ? "committed" : String(s.reason)))).toEqual(["committed", "committed", "committed", "committed"]);
      expect((await db.execute("SELECT COUNT(*) AS n, SUM(length(piece)) AS bytes FROM pieces")).rows).toEqual([{ n: 16, bytes: 16 * 1024 * 1024 }]);
    } finally {
      db.close();
      await server.stop();
    }
  }, 30_000);

  // A log line's ANSI escapes: each control character travels as \u00XX in the request's JSON. A
  // JSON text (each log append's lines go as one): each quote as two characters (the write queue
  // counts such a string as twice its bytes without escaping it, lib/db/write-queue.ts).
  test.each([
    ["six times longer on the wire (control characters)", "\u001b".repeat(500 * 1024)],
    ["twice as long on the wire (quotes, as in JSON text)", '"'.repeat(1536 * 1024)],
  ])(
    "write batches of text that escaping makes %s, sent together, all commit",
    async (_, text) => {
      const server = await startSqld();
      const db = await openDatabase(`libsql://127.0.0.1:${new URL(server.url).port}?tls=0`, undefined, "libsql");
      try {
        await db.execute("CREATE TABLE lines (batch INTEGER, seq INTEGER, text TEXT)");
        const batch = (n: number) => db.batch([0, 1, 2, 3].map((seq) => ({ sql: "INSERT INTO lines VALUES (?, ?, ?)", args: [n, seq, text] })));
        const settled = await Promise.allSettled([0, 1, 2, 3].map(batch));
        expect(settled.map((s) => (s.status === "fulfilled" ? "committed" : String(s.reason)))).toEqual(["committed", "committed", "committed", "committed"]);
        expect((await db.execute("SELECT COUNT(*) AS n, SUM(length(text)) AS chars FROM lines")).rows).toEqual([{ n: 16, chars: 16 * text.length }]);
      } finally {
        db.close();
        await server.stop();
      }
    },
    60_000,
  );
});

describe("the driver switch", () => {
  test("ROOST_DB_DRIVER picks bun:sqlite by default, libsql when asked, and refuses anything else", async () => {
    expect(driverFromEnv({})).toBe("bun:sqlite");
    expect(driverFromEnv({ ROOST_DB_DRIVER: "libsql" })).toBe("libsql");
    expect(() => driverFromEnv({ ROOST_DB_DRIVER: "sqlite3" })).toThrow("ROOST_DB_DRIVER");
    const dir = mkdtempSync(join(tmpdir(), "roost-db-"));
    try {
      const local = await openDatabase(`file:${join(dir, "a.db")}`, undefined, "bun:sqlite");
      const viaLibsql = await openDatabase(`file:${join(dir, "a.db")}`, undefined, "libsql");
      expect([local.driver, viaLibsql.driver]).toEqual(["bun:sqlite", "libsql"]);
      expect((local as BunSqliteDb).pragma("foreign_keys")).toEqual({ reader: 1, writer: 1 });
      // The writer's statement journals stay in memory (2 = MEMORY); the reader's sorts may spill to files (0 = default).
      expect((local as BunSqliteDb).pragma("temp_store")).toEqual({ reader: 0, writer: 2 });
      // The writer's page cache holds 32 MiB (a negative size is in KiB); the reader's is the default.
      expect((local as BunSqliteDb).pragma("cache_size")).toEqual({ reader: -2000, writer: -32768 });
      // The writer's commits checkpoint the WAL at 10,000 pages; the reader, which commits nothing, keeps the default.
      expect((local as BunSqliteDb).pragma("wal_autocheckpoint")).toEqual({ reader: 1000, writer: 10000 });
      local.close();
      viaLibsql.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A transaction of `db` that holds its write queue (and inserts 'first') until `open` is called,
 * so that writes started meanwhile line up behind it and share one group.
 */
async function holdingTheQueue(db: Db): Promise<{ first: Promise<void>; open: () => void }> {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const first = inTransaction(db, async (tx) => {
    await gate;
    await tx.execute("INSERT INTO t (name) VALUES ('first')");
  });
  await Bun.sleep(5);
  return { first, open };
}
