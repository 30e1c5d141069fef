// docs/schema.md is the schema the migrations leave, so a reader never has to replay them.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { currentSchema } from "../../../lib/db/current-schema.ts";
import { MIGRATIONS } from "../../../lib/db/migrate.ts";

describe("docs/schema.md", () => {
  const doc = readFileSync(resolve(import.meta.dir, "../../../docs/schema.md"), "utf8");

  test("is up to date (run `npm run docs` after adding a migration)", () => {
    expect(doc).toBe(currentSchema());
  });

  test("shows the newest version's tables, columns added by later migrations included", () => {
    expect(doc).toContain(`Schema version ${MIGRATIONS.length}`);
    expect(doc).toMatch(/CREATE TABLE builds \(/);
    // builds.flutter_sdk came with migration 12 as an ALTER TABLE: it shows in the table itself.
    const builds = doc.slice(doc.indexOf("CREATE TABLE builds ("));
    expect(builds.slice(0, builds.indexOf("\n);"))).toContain("flutter_sdk TEXT");
  });
});
