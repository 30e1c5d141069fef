// A new database in one step. Replaying forty-odd migrations on an empty database costs about
// 35 ms of CPU (table rebuilds re-parse the whole schema on every ALTER ... RENAME), most of the
// compiled binary's first start. The build (scripts/build.ts) replays them once, in memory, and
// embeds what they leave behind: every table, index and trigger in creation order, and the rows
// the migrations seed. A new database gets that whole (lib/db/migrate.ts); an existing one still
// takes its pending migrations one by one, so upgrades never go through a snapshot.
// tests/lib/db/schema-snapshot.test.ts checks that both routes give the same database.
import { Database } from "bun:sqlite";
import { statements as statementsOf, type Migration } from "./migrate.ts";

export interface SchemaSnapshot {
  /** The migration the snapshot stands for: only applied when it is this build's latest. */
  version: number;
  /** CREATE statements and seed INSERTs, in the order they are to run. */
  statements: string[];
}

let embedded: SchemaSnapshot | null = null;

/** Called by the compiled binary's entry (dist/.embed/entry.ts) before the CLI runs. */
export function registerSchemaSnapshot(snapshot: SchemaSnapshot | null): void {
  embedded = snapshot;
}

export function embeddedSchemaSnapshot(): SchemaSnapshot | null {
  return embedded;
}

/** A timestamp column's value that the migrations took from the clock (`unixepoch()`) while they ran. */
function clockValue(column: string, value: unknown, from: number, to: number): boolean {
  return column.endsWith("_at") && typeof value === "number" && value >= from && value <= to;
}

function literal(value: unknown): string {
  if (value === null) return "NULL";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`schema snapshot: a seeded value of type ${typeof value} has no SQL literal here`);
}

/**
 * Replays `migrations` on an in-memory database and returns its schema and seeded rows as
 * statements. A seeded timestamp the migrations read from the clock becomes `unixepoch()` again,
 * so a database made from the snapshot is dated when it is made, as a migrated one is.
 */
export function takeSchemaSnapshot(migrations: Migration[]): SchemaSnapshot {
  const db = new Database(":memory:");
  try {
    const from = Math.floor(Date.now() / 1000);
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    // Statement by statement as lib/db/migrate.ts runs them (comments dropped), so the schema's text is the same too.
    for (const migration of migrations) for (const statement of statementsOf(migration.sql)) db.exec(statement);
    const to = Math.ceil(Date.now() / 1000);
    // Creation order: a table before its indexes and triggers, as the migrations left them.
    const objects = db
      .query<{ type: string; name: string; sql: string }, []>(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY rowid",
      )
      .all();
    const statements = objects.map((o) => o.sql);
    for (const table of objects.filter((o) => o.type === "table")) {
      const columns = db.query<{ name: string; hidden: number }, []>(`SELECT name, hidden FROM pragma_table_xinfo('${table.name}')`).all();
      const stored = columns.filter((c) => c.hidden === 0).map((c) => c.name);
      for (const row of db.query<Record<string, unknown>, []>(`SELECT ${stored.map((c) => `"${c}"`).join(", ")} FROM "${table.name}"`).all()) {
        const values = stored.map((c) => (clockValue(c, row[c], from, to) ? "unixepoch()" : literal(row[c])));
        statements.push(`INSERT INTO "${table.name}" (${stored.map((c) => `"${c}"`).join(", ")}) VALUES (${values.join(", ")})`);
      }
    }
    return { version: migrations.length, statements };
  } finally {
    db.close();
  }
}
