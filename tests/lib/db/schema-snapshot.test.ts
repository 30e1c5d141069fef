// A new database made from the compiled binary's schema snapshot (lib/db/schema-snapshot.ts) is the
// database the migrations make, and an existing one never goes through the snapshot.
import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../../lib/db/client.ts";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate, statements } from "../../../lib/db/migrate.ts";
import { registerSchemaSnapshot, takeSchemaSnapshot } from "../../../lib/db/schema-snapshot.ts";

let dir: string;
const opened: Db[] = [];
async function database(name: string): Promise<Db> {
  const db = await openDatabase(`file:${join(dir, name)}`);
  opened.push(db);
  return db;
}
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "roost-snapshot-"));
});
afterEach(() => {
  registerSchemaSnapshot(null);
  for (const db of opened.splice(0)) db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Everything a database holds: its schema objects and every table's rows, timestamps of the last minute shown as "now". */
async function contents(db: Db): Promise<unknown> {
  const objects = (await db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")).rows;
  const now = Date.now() / 1000;
  const rows: Record<string, unknown[]> = {};
  for (const { name } of objects.filter((o) => o.type === "table")) {
    rows[String(name)] = (await db.execute(`SELECT * FROM "${name}"`)).rows
      .map((row) => JSON.stringify(Object.entries(row).map(([k, v]) => [k, k.endsWith("_at") && typeof v === "number" && Math.abs(v - now) < 60 ? "now" : v])))
      .sort();
  }
  return { objects: objects.map((o) => ({ ...o })), rows };
}

describe("a new database from the schema snapshot", () => {
  test("holds the same tables, indexes, triggers and seeded rows as one made by replaying every migration", async () => {
    const replayed = await database("replayed.db");
    expect(await migrate(replayed, () => 7)).toEqual({ from: 0, to: LATEST_SCHEMA_VERSION });

    const snapshot = takeSchemaSnapshot(MIGRATIONS);
    // The instance row is dated by the clock, in the snapshot as in the migration.
    expect(snapshot.statements.find((s) => s.startsWith('INSERT INTO "instance"'))).toContain("unixepoch()");
    registerSchemaSnapshot(snapshot);
    const fresh = await database("fresh.db");
    expect(await migrate(fresh, () => 7)).toEqual({ from: 0, to: LATEST_SCHEMA_VERSION });

    expect(await contents(fresh)).toEqual(await contents(replayed));
    // A second start finds it up to date.
    expect(await migrate(fresh, () => 8)).toEqual({ from: LATEST_SCHEMA_VERSION, to: LATEST_SCHEMA_VERSION });
  });

  test("an existing database takes its pending migrations one by one, not the snapshot", async () => {
    // A database three migrations behind, as an earlier release's `roost migrate` left it.
    const before = MIGRATIONS.slice(0, MIGRATIONS.length - 3);
    const earlier = new Database(join(dir, "older.db"));
    earlier.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const migration of before) {
      for (const statement of statements(migration.sql)) earlier.exec(statement);
      earlier.run("INSERT INTO schema_migrations VALUES (?, ?, 1)", [migration.version, migration.name]);
    }
    earlier.close();
    const older = await database("older.db");
    // A snapshot whose tables would collide with the existing ones: taking it would fail.
    registerSchemaSnapshot(takeSchemaSnapshot(MIGRATIONS));
    expect(await migrate(older, () => 7)).toEqual({ from: before.length, to: LATEST_SCHEMA_VERSION });

    const replayed = await database("replayed.db");
    await migrate(replayed, () => 7);
    const schema = async (db: Db) =>
      (await db.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")).rows.map((r) => ({ ...r }));
    expect(await schema(older)).toEqual(await schema(replayed));
  });

  test("is what a new database is made from, in one step", async () => {
    const snapshot = takeSchemaSnapshot(MIGRATIONS);
    registerSchemaSnapshot({ ...snapshot, statements: [...snapshot.statements, "CREATE TABLE made_from_the_snapshot (x)"] });
    const db = await database("roost.db");
    await migrate(db, () => 7);
    expect((await db.execute("SELECT name FROM sqlite_master WHERE name = 'made_from_the_snapshot'")).rows).toHaveLength(1);
    expect((await db.execute("SELECT COUNT(*) AS n FROM schema_migrations WHERE applied_at = 7")).rows[0]!.n).toBe(LATEST_SCHEMA_VERSION);
  });

  test("a snapshot of another schema version is not taken: the migrations run", async () => {
    registerSchemaSnapshot({ version: LATEST_SCHEMA_VERSION - 1, statements: ["CREATE TABLE not_roost (x)"] });
    const db = await database("roost.db");
    await migrate(db, () => 7);
    expect((await db.execute("SELECT name FROM sqlite_master WHERE name = 'not_roost'")).rows).toEqual([]);
    expect((await db.execute("SELECT COUNT(*) AS n FROM schema_migrations")).rows[0]!.n).toBe(LATEST_SCHEMA_VERSION);
  });
});
