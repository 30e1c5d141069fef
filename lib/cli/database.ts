// The database of an existing instance, for the admin commands (`roost user`, `roost token`,
// `roost backup`). Opening a SQLite file that is not there creates it, so a mistyped or unset
// ROOST_DATA_DIR would silently manage a new, empty instance; these commands refuse instead
// (exit 2) and say where they looked. Only `roost serve` and `roost migrate` create a database.
import { existsSync } from "node:fs";
import { displayDatabaseUrl, type Config } from "../daemon/config.ts";
import { filePath, openDatabase, type Db } from "../db/client.ts";
import { appliedVersion } from "../db/migrate.ts";
import { UsageError } from "./args.ts";

/** The configured database if it holds a Roost schema; otherwise a UsageError (exit 2) that starts with `command`. */
export async function openExistingDatabase(config: Config, command: string): Promise<Db> {
  // A backup or the WAL files this process may create are for the daemon's user only, like the rest of the data dir.
  process.umask(0o077);
  const where = displayDatabaseUrl(config.databaseUrl);
  if (config.databaseUrl.startsWith("file:")) {
    const path = filePath(config.databaseUrl);
    if (!existsSync(path)) {
      throw new UsageError(
        `${command}: no Roost database in ${config.dataDir} (looked for ${path}); set ROOST_DATA_DIR (or ROOST_DATABASE_URL) to the daemon's, or run 'roost serve' to create one`,
      );
    }
  }
  let db: Db | null = null;
  try {
    db = await openDatabase(config.databaseUrl, config.databaseAuthToken, undefined, config.databaseTimeoutMs);
    if ((await appliedVersion(db)) > 0) return db;
  } catch (error) {
    db?.close();
    throw new UsageError(`${command}: cannot open the database ${where}: ${(error as Error).message.replace(/\s*\n\s*/g, " ")}`);
  }
  db.close();
  throw new UsageError(
    `${command}: ${where} is not a Roost database (it has no schema_migrations); set ROOST_DATA_DIR (or ROOST_DATABASE_URL) to the daemon's`,
  );
}
