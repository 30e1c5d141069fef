// Versioned migrations from schema.sql (lib/db/migrate.ts).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../../lib/db/client.ts";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate, parseMigrations } from "../../../lib/db/migrate.ts";

let dir: string;
let db: Db;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-migrate-"));
  db = await openDatabase(`file:${join(dir, "roost.db")}`);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("migrate", () => {
  test("applies every block once and records it; a second run changes nothing", async () => {
    expect(await migrate(db, () => 1)).toEqual({ from: 0, to: LATEST_SCHEMA_VERSION });
    expect(await migrate(db, () => 2)).toEqual({ from: LATEST_SCHEMA_VERSION, to: LATEST_SCHEMA_VERSION });
    const rows = await db.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version");
    expect(rows.rows.map((r) => [r.version, r.name, r.applied_at])).toEqual(MIGRATIONS.map((m) => [m.version, m.name, 1]));
    const instance = await db.execute("SELECT COUNT(*) AS n FROM instance");
    expect(instance.rows[0]!.n).toBe(1);
  });

  test("two processes' worth of concurrent migrations apply each block exactly once", async () => {
    const other = await openDatabase(`file:${join(dir, "roost.db")}`);
    await Promise.all([migrate(db, () => 1), migrate(other, () => 1)]);
    other.close();
    const rows = await db.execute("SELECT COUNT(*) AS n FROM schema_migrations");
    expect(rows.rows[0]!.n).toBe(LATEST_SCHEMA_VERSION);
  });

  test("a database newer than this build is refused", async () => {
    await migrate(db, () => 1);
    await db.execute(`INSERT INTO schema_migrations VALUES (${LATEST_SCHEMA_VERSION + 1}, 'future', 1)`);
    await expect(migrate(db, () => 1)).rejects.toThrow("newer than this roost");
  });

  test("blocks out of order are a build error", () => {
    expect(() => parseMigrations("-- migration 1: a\nSELECT 1;\n-- migration 3: c\nSELECT 1;")).toThrow("out of order");
  });

  test("foreign keys are enforced", async () => {
    await migrate(db, () => 1);
    await expect(
      db.execute("INSERT INTO sessions (id, secret_hash, user_id, method, created_at, expires_at) VALUES ('s', 'h', 'missing', 'local', 1, 2)"),
    ).rejects.toThrow();
  });
});
