// Runners (docs/runners.md): registered by an admin, authenticated by roost_rt_ tokens stored hashed.
import type { Executor, Row, SqlCondition } from "../db/client.ts";
import { all, json, num, numOrNull, one, rowMapper, str, strOrNull } from "../db/client.ts";
import { mintSecret, parseSecret, secretMatches } from "../auth/secrets.ts";
import { groupedRead } from "../db/grouped-read.ts";
import type { RunnerResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export interface RunnerCapabilities {
  os?: string;
  arch?: string;
  flutter_versions?: string[];
  xcode?: string | null;
}

/** One registered runner (table runners). */
const toRunner = rowMapper({
  id: str,
  name: str,
  labels: json<string[]>(),
  advertised_labels: json<string[]>(),
  capabilities: json<RunnerCapabilities>(),
  version: str,
  created_at: num,
  last_seen_at: numOrNull,
  revoked_at: numOrNull,
});
export type Runner = ReturnType<typeof toRunner>;

export function allLabels(r: Runner): string[] {
  return [...new Set([...r.labels, ...r.advertised_labels])];
}

export async function insertRunner(
  db: Executor,
  f: { name: string; labels: string[]; createdBy: string },
  now: number,
): Promise<{ runner: Runner; token: string }> {
  const minted = mintSecret("rt");
  const row = await one(db, "INSERT INTO runners (id, name, secret_hash, labels, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *", [
    minted.id,
    f.name,
    minted.hash,
    JSON.stringify(f.labels),
    f.createdBy,
    now,
  ]);
  return { runner: toRunner(row!), token: minted.token };
}

export async function rotateRunnerToken(db: Executor, id: string): Promise<string> {
  const minted = mintSecret("rt", id);
  await db.execute({ sql: "UPDATE runners SET secret_hash = ? WHERE id = ?", args: [minted.hash, id] });
  return minted.token;
}

export async function findRunner(db: Executor, id: string): Promise<Runner | null> {
  const row = await one(db, "SELECT * FROM runners WHERE id = ?", [id]);
  return row ? toRunner(row) : null;
}

/**
 * A runner's row as its token is checked against it. Read afresh for every request (nothing kept:
 * a revoked token is refused at once, by every daemon); on a libSQL server the rows of the
 * runners whose requests arrive together are read in one statement (groupedRead).
 */
const runnerRow = groupedRead({
  alone: "SELECT * FROM runners WHERE id = ?",
  grouped: "SELECT r.* FROM json_each(?) AS k JOIN runners AS r ON r.id = k.value",
  keyColumn: "id",
});

/** The runner a presented token belongs to, when valid and not revoked. */
export async function runnerForToken(db: Executor, token: string): Promise<Runner | null> {
  const parsed = parseSecret("rt", token);
  if (!parsed) return null;
  const row = await runnerRow(db, parsed.id);
  if (!row || !secretMatches(parsed.secret, str(row, "secret_hash")) || strOrNull(row, "revoked_at") !== null) {
    // The runner as remembered here no longer stands (revoked, rotated, gone): forgotten, so its old
    // token's further requests are refused after one read, as before, not after a write batch.
    const kept = rememberedRunners.get(db);
    const was = kept?.get(parsed.id);
    if (was && (!row || str(row, "secret_hash") !== was.stands.secretHash || strOrNull(row, "revoked_at") !== null)) kept!.delete(parsed.id);
    return null;
  }
  const runner = toRunner(row);
  rememberRunner(db, runner, row);
  return runner;
}

/**
 * A runner as this process last read it with a valid token, and the condition under which it still
 * stands: its row holds the same token hash, is not revoked, and routes as read (labels and
 * capabilities, what lib/runners/routing.ts reads). A handler that writes (a claim, a finish) takes
 * the runner from here without a read and puts the condition in its own write batch, where the
 * writer's page cache is warm and a remote database gets no request of its own; a batch whose
 * condition fails writes nothing, and the handler reads the runner as any other request does
 * (confirmRunner, lib/auth/authenticate.ts), so a revoked or rotated token is refused by that very
 * request, as by one read first.
 */
export interface RememberedRunner {
  runner: Runner;
  stands: RunnerStands;
}

/** The condition under which a remembered runner stands, with the token hash it was read with (a log append holds only that: lib/logs/append-endpoint.ts). */
export interface RunnerStands extends SqlCondition {
  secretHash: string;
}

const rememberedRunners = new WeakMap<Executor, Map<string, RememberedRunner>>();
/** Bounded (a fleet has fewer runners): the oldest entry makes room, its runner read at its next request. */
const RUNNERS_KEPT = 10_000;

function rememberRunner(db: Executor, runner: Runner, row: Row): void {
  let kept = rememberedRunners.get(db);
  if (!kept) rememberedRunners.set(db, (kept = new Map()));
  kept.delete(runner.id);
  if (kept.size >= RUNNERS_KEPT) kept.delete(kept.keys().next().value!);
  const hash = str(row, "secret_hash");
  kept.set(runner.id, {
    runner,
    stands: {
      // A scalar subquery (NULL, false, when the row is gone), not EXISTS: in the finish's guarded
      // INSERTs, `EXISTS (SELECT 1 FROM runners …)` made SQLite compile the statement again on every
      // call (about 100 µs of CPU against 3; a throwaway test on the fixture's file, bun:sqlite), as
      // bare parameters beside an ORDER BY do (docs/benchmarks.md, "The runner fleet's CPU per job: its reads").
      sql: "(SELECT secret_hash = +? AND revoked_at IS NULL AND labels = +? AND advertised_labels = +? AND capabilities = +? FROM runners WHERE id = +?)",
      args: [hash, str(row, "labels"), str(row, "advertised_labels"), str(row, "capabilities"), runner.id],
      secretHash: hash,
    },
  });
}

/** The runner this token belonged to when last read here (not asked of the database: see RememberedRunner), or null. */
export function rememberedRunner(db: Executor, token: string): RememberedRunner | null {
  const parsed = parseSecret("rt", token);
  const kept = parsed && rememberedRunners.get(db)?.get(parsed.id);
  if (!kept || !secretMatches(parsed.secret, kept.stands.secretHash)) return null;
  return kept;
}

export async function listRunners(db: Executor): Promise<Runner[]> {
  return (await all(db, "SELECT * FROM runners ORDER BY name, id")).map(toRunner);
}

export async function recordConnect(
  db: Executor,
  id: string,
  f: { labels: string[]; capabilities: RunnerCapabilities; version: string },
  now: number,
): Promise<void> {
  await db.execute({
    sql: "UPDATE runners SET advertised_labels = ?, capabilities = ?, version = ?, last_seen_at = ? WHERE id = ?",
    args: [JSON.stringify(f.labels), JSON.stringify(f.capabilities), f.version, now, id],
  });
  // Its labels and capabilities as remembered no longer stand: its next request reads them.
  rememberedRunners.get(db)?.delete(id);
}

/**
 * `stands`: the runner was taken as remembered, not read (RememberedRunner): seen only where its row
 * still stands, so a revoked or rotated token's request, refused by its handler, writes nothing.
 */
export async function touchRunner(db: Executor, id: string, now: number, stands?: SqlCondition): Promise<void> {
  await db.execute({
    sql: `UPDATE runners SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)${stands ? ` AND ${stands.sql}` : ""}`,
    args: [now, id, now, ...(stands?.args ?? [])],
  });
  const kept = rememberedRunners.get(db)?.get(id);
  if (kept) kept.runner = { ...kept.runner, last_seen_at: now };
}

export async function revokeRunner(db: Executor, id: string, now: number): Promise<void> {
  await db.execute({ sql: "UPDATE runners SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", args: [now, id] });
}

/** Runners seen within `seconds` and not revoked (routing and the unroutable check use them). */
export async function liveRunners(db: Executor, now: number, seconds: number): Promise<Runner[]> {
  return (await all(db, "SELECT * FROM runners WHERE revoked_at IS NULL AND last_seen_at >= ?", [now - seconds])).map(toRunner);
}

export function toPublicRunner(r: Runner): WireOf<typeof RunnerResource> {
  return { ...r, labels: r.labels, all_labels: allLabels(r) };
}

/**
 * Runners that contacted the daemon in the last minute before `now`; null before the runners table exists (an
 * unmigrated database). `now` is the daemon's clock, which wrote last_seen_at (touchRunner), not the database's
 * unixepoch(): on a libSQL server that is another host's clock.
 */
export async function connectedRunnerCount(db: Executor, now: number): Promise<number | null> {
  const table = await all(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runners'");
  if (table.length === 0) return null;
  const columns = await all(db, "SELECT name FROM pragma_table_info('runners') WHERE name = 'last_seen_at'");
  if (columns.length === 0) return null;
  const rows = await all(db, "SELECT COUNT(*) AS n FROM runners WHERE last_seen_at > ?", [now - 60]);
  return Number(rows[0]?.n ?? 0);
}
