// The integrations and a repository id's catalogue entries as this daemon last read them, for a
// webhook's verification and routing (lib/forges/github/index.ts). Reading them is two statements
// before anything else on every push, each one a libSQL server prepares afresh (docs/benchmarks.md
// "Webhook pushes on sqld"). What is kept is tagged with the catalogue's count of changes
// (catalogue_version, schema.sql migration 46, moved by triggers on every change of an integration
// or a repository), and a delivery verified from it is written only if that count still holds
// (`asRead`, a condition of its write batch, lib/webhooks/accept.ts). So a secret rotated, an
// integration removed or a repository added since makes that write nothing, and the delivery is
// verified again from what the database holds (lib/webhooks/receive.ts); a delivery the kept secrets
// do not verify is verified again from the database at once.
import type { Executor, SqlCondition } from "../db/client.ts";
import { one } from "../db/client.ts";
import { findRepositoriesByExternalId, type Repository } from "./repositories.ts";
import { listIntegrations, type Integration } from "./store.ts";

interface Kept {
  version: number;
  integrations: Integration[];
  /** By forge and repository id. */
  repositories: Map<string, Repository[]>;
}

const kept = new WeakMap<Executor, Kept>();
/** Repository ids kept per database at most; the oldest is forgotten first. */
const REPOSITORIES_KEPT = 1_000;

export interface CatalogueRead {
  integrations: Integration[];
  /** The catalogue entries of the repository id asked for (none without one). */
  repositories: Repository[];
  /** Set when served as last read: the condition under which the delivery may be written (the catalogue unchanged since). */
  asRead?: SqlCondition;
}

/**
 * Every integration and the catalogue entries of `externalId` on `forge`: as this daemon last read
 * them when `asLastRead` and it has, otherwise read now (and kept).
 */
export async function catalogueForWebhook(db: Executor, forge: string, externalId: string | null, asLastRead: boolean): Promise<CatalogueRead> {
  const key = `${forge}\n${externalId ?? ""}`;
  const last = kept.get(db);
  const repositories = last?.repositories.get(key);
  if (asLastRead && last && repositories) {
    return { integrations: last.integrations, repositories, asRead: { sql: "(SELECT n FROM catalogue_version WHERE id = 1) = ?", args: [last.version] } };
  }
  // The count first: read side by side (one request to a remote server, each statement as alone), a
  // change between it and the rows leaves rows newer than the count, which only makes the next
  // write from them fail its guard; never older.
  const [version, integrations, read] = await Promise.all([
    one(db, "SELECT n FROM catalogue_version WHERE id = 1"),
    listIntegrations(db),
    externalId ? findRepositoriesByExternalId(db, forge, externalId) : [],
  ]);
  const n = Number(version?.n ?? 0);
  let entry = kept.get(db);
  if (!entry || entry.version !== n) kept.set(db, (entry = { version: n, integrations, repositories: new Map() }));
  if (entry.repositories.size >= REPOSITORIES_KEPT) entry.repositories.delete(entry.repositories.keys().next().value!);
  entry.repositories.set(key, read);
  return { integrations, repositories: read };
}
