// The streams Roost keeps open on a libSQL server (lib/db/kept-streams.ts): sqld drops a stream
// left idle for 10 s and refuses the next request on it with STREAM_EXPIRED, having run nothing of
// it. A stand-in in front of sqld refuses so, on demand, the next request that carries a baton;
// the read or write batch that met it answers as if nothing had happened, on a new stream.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";

let sqld: Sqld;
let standIn: ReturnType<typeof Bun.serve>;
let db: Db;
/** Set: the next request on an existing stream is refused as sqld refuses one on an expired stream. */
let expireNext = false;
let refused = 0;

beforeAll(async () => {
  sqld = await startSqld();
  standIn = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === "POST" ? await request.text() : undefined;
      if (expireNext && body && (JSON.parse(body) as { baton?: string | null }).baton) {
        expireNext = false;
        refused++;
        // As sqld answers (its content type exactly, which @libsql/hrana-client looks for).
        return new Response(JSON.stringify({ message: "The stream has expired due to inactivity", code: "STREAM_EXPIRED" }), {
          status: 400,
          headers: { "content-type": "application/json" },
        });
      }
      const headers = new Headers(request.headers);
      headers.delete("host");
      const answer = await fetch(`${sqld.url}${url.pathname}${url.search}`, { method: request.method, headers, body });
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers });
    },
  });
  db = await openDatabase(`http://127.0.0.1:${standIn.port}`, undefined, "libsql");
  await db.execute("CREATE TABLE kept (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
});
afterAll(async () => {
  db?.close();
  standIn?.stop(true);
  await sqld?.stop();
  if (sqld) rmSync(join(sqld.dir, ".."), { recursive: true, force: true });
});

test("a read whose kept stream sqld dropped answers, on a new stream", async () => {
  expect((await db.execute("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  expireNext = true;
  expect((await db.execute("SELECT 2 AS two")).rows).toEqual([{ two: 2 }]);
  expect(refused).toBe(1);
  // Reads started together go in one batch on a kept stream; that one is refused and sent again too.
  expireNext = true;
  const [a, b] = await Promise.all([db.execute("SELECT 3 AS n"), db.execute("SELECT 4 AS n")]);
  expect([a.rows, b.rows]).toEqual([[{ n: 3 }], [{ n: 4 }]]);
  expect(refused).toBe(2);
});

test("a write batch whose kept stream sqld dropped is written once, on a new stream", async () => {
  await db.batch([{ sql: "INSERT INTO kept (key, value) VALUES (?, ?)", args: ["kept-a", "1"] }]);
  expireNext = true;
  await db.batch([
    { sql: "INSERT INTO kept (key, value) VALUES (?, ?)", args: ["kept-b", "2"] },
    { sql: "UPDATE kept SET value = value || '+' WHERE key = ?", args: ["kept-a"] },
  ]);
  expect(refused).toBe(3);
  const rows = (await db.execute("SELECT key, value FROM kept WHERE key LIKE 'kept-%' ORDER BY key")).rows;
  expect(rows).toEqual([
    { key: "kept-a", value: "1+" },
    { key: "kept-b", value: "2" },
  ]);
});

// sqld ends a request at once, in the middle of its statements, when its answer would pass the
// size it answers (10 MB by default, "RESPONSE_TOO_LARGE"): a builder error stops the program
// (https://github.com/tursodatabase/libsql, libsql-server/src/connection/program.rs). A batch's
// COMMIT or ROLLBACK then never runs, and the kept stream's connection stays inside the
// transaction unless Roost ends it.
const bigValue = "printf('%.*c', 4000000, 'x')";

test("reads sent together that sqld answers as too large leave no transaction open on their kept stream: later reads see later writes", async () => {
  await db.batch([{ sql: `INSERT INTO kept (key, value) VALUES ('big', ${bigValue})` }, { sql: "INSERT INTO kept (key, value) VALUES ('counter', '1')" }]);
  // Three reads of 4 MB together: one answer of 12 MB, which sqld refuses; each alone is answered.
  const big = () => db.execute("SELECT length(value) AS n, value FROM kept WHERE key = 'big'");
  const answers = await Promise.all([big(), big(), big()]);
  expect(answers.map((a) => a.rows[0]!.n)).toEqual([4_000_000, 4_000_000, 4_000_000]);
  await db.execute("UPDATE kept SET value = '2' WHERE key = 'counter'");
  for (let i = 0; i < 3; i++) expect((await db.execute("SELECT value FROM kept WHERE key = 'counter'")).rows).toEqual([{ value: "2" }]);
  const together = await Promise.all([0, 1, 2].map(() => db.execute("SELECT value FROM kept WHERE key = 'counter'")));
  expect(together.map((a) => a.rows)).toEqual([[{ value: "2" }], [{ value: "2" }], [{ value: "2" }]]);
});

test("a write batch that sqld answers as too large writes nothing and leaves no transaction open: the next write commits", async () => {
  await expect(
    db.batch([
      { sql: "INSERT INTO kept (key, value) VALUES ('too-large', '1')" },
      { sql: `SELECT ${bigValue}, ${bigValue}, ${bigValue} FROM kept WHERE key = 'too-large'` },
    ]),
  ).rejects.toMatchObject({ code: "RESPONSE_TOO_LARGE" });
  await db.execute("INSERT INTO kept (key, value) VALUES ('after-too-large', '1')");
  expect((await db.execute("SELECT key FROM kept WHERE key LIKE '%too-large' ORDER BY key")).rows).toEqual([{ key: "after-too-large" }]);
});

test("over WebSocket too (a libsql: URL), reads and a write batch sqld answers as too large leave no transaction open", async () => {
  const own = await startSqld();
  const ws = await openDatabase(`libsql://127.0.0.1:${new URL(own.url).port}?tls=0`, undefined, "libsql");
  try {
    await ws.execute("CREATE TABLE kept (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    await ws.batch([{ sql: `INSERT INTO kept (key, value) VALUES ('big', ${bigValue})` }, { sql: "INSERT INTO kept (key, value) VALUES ('counter', '1')" }]);
    const big = () => ws.execute("SELECT length(value) AS n, value FROM kept WHERE key = 'big'");
    expect((await Promise.all([big(), big(), big()])).map((a) => a.rows[0]!.n)).toEqual([4_000_000, 4_000_000, 4_000_000]);
    await ws.execute("UPDATE kept SET value = '2' WHERE key = 'counter'");
    expect((await ws.execute("SELECT value FROM kept WHERE key = 'counter'")).rows).toEqual([{ value: "2" }]);
    await expect(
      ws.batch([
        { sql: "INSERT INTO kept (key, value) VALUES ('too-large', '1')" },
        { sql: `SELECT ${bigValue}, ${bigValue}, ${bigValue} FROM kept WHERE key = 'too-large'` },
      ]),
    ).rejects.toMatchObject({ code: "RESPONSE_TOO_LARGE" });
    await ws.execute("INSERT INTO kept (key, value) VALUES ('after-too-large', '1')");
    expect((await ws.execute("SELECT key FROM kept WHERE key LIKE '%too-large' ORDER BY key")).rows).toEqual([{ key: "after-too-large" }]);
  } finally {
    ws.close();
    await own.stop();
    rmSync(join(own.dir, ".."), { recursive: true, force: true });
  }
});
