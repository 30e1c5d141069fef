// A delivery's dedupe keys: the host's delivery identities and, where it has one, a digest of its
// body. A key already held makes the delivery a duplicate of the one that holds it; only that key's
// own conflict does (lib/webhooks/accept.ts). The write batch reads them in its delivery's INSERT
// (dedupeKeyHolder: a key held makes the record the duplicate's), whose trigger takes them
// (webhook_dedupe_keys_taken, schema.sql migration 44: a content digest past its window is taken
// over by the new delivery there; the trigger's 604800 is CONTENT_KEY_WINDOW_SECONDS); the write
// transaction takes them first (takeDedupeKeys).
import type { Executor, SqlCondition, Transaction } from "../db/client.ts";
import { all, marks, one } from "../db/client.ts";
import { BODY_RETENTION_SECONDS } from "./deliveries.ts";

/** How long an identical GitHub body counts as a replay: as long as Roost keeps bodies. */
export const CONTENT_KEY_WINDOW_SECONDS = BODY_RETENTION_SECONDS;

/** What a delivery says of its identity (AcceptInput's dedupeKeys and contentKey). */
export interface DeliveryKeys {
  dedupeKeys: string[];
  contentKey?: string | null;
}

export class Duplicate extends Error {
  constructor(readonly of: string) {
    super("duplicate");
  }
}

/** The delivery's dedupe keys, each once: the host's identities and, where it has one, its content digest. */
export function dedupeKeysOf(input: DeliveryKeys): string[] {
  return [...new Set(input.contentKey ? [...input.dedupeKeys, input.contentKey] : input.dedupeKeys)];
}

/** The arguments of `NOT (key IS ? AND created_at <= ?)`: the content digest, once older than its window. */
function expired(input: DeliveryKeys, now: number): [string | null, number] {
  return [input.contentKey ?? null, now - CONTENT_KEY_WINDOW_SECONDS];
}

/** The delivery that holds one of these keys, if any; a content digest older than its window no longer counts. */
export async function heldDedupeKey(db: Executor, input: DeliveryKeys, keys: string[], now: number): Promise<string | null> {
  if (!keys.length) return null;
  const holder = dedupeKeyHolder(input, keys, now)!;
  const row = await one(db, `SELECT ${holder.sql} AS delivery_id`, holder.args);
  return typeof row?.delivery_id === "string" ? row.delivery_id : null;
}

/**
 * For a write batch: the delivery that holds one of the keys, as an SQL expression, NULL when none
 * does (a content digest older than its window no longer counts); null without keys.
 */
export function dedupeKeyHolder(input: DeliveryKeys, keys: string[], now: number): SqlCondition | null {
  if (!keys.length) return null;
  return {
    sql: `(SELECT delivery_id FROM webhook_dedupe_keys WHERE key IN (${marks(keys)}) AND NOT (key IS ? AND created_at <= ?) LIMIT 1)`,
    args: [...keys, ...expired(input, now)],
  };
}

/**
 * Takes the delivery's dedupe keys, or throws Duplicate naming the delivery that holds one. A
 * content digest older than its window no longer counts: it is dropped so this delivery can take it.
 */
export async function takeDedupeKeys(tx: Transaction, input: DeliveryKeys, id: string, now: number): Promise<void> {
  if (input.contentKey)
    await tx.execute({
      sql: "DELETE FROM webhook_dedupe_keys WHERE key = ? AND created_at <= ?",
      args: [input.contentKey, now - CONTENT_KEY_WINDOW_SECONDS],
    });
  const keys = dedupeKeysOf(input);
  if (!keys.length) return;
  const seen = await all(tx, `SELECT delivery_id FROM webhook_dedupe_keys WHERE key IN (${marks(keys)}) LIMIT 1`, keys);
  if (seen[0]) throw new Duplicate(String(seen[0].delivery_id));
  // Another process may insert the same key between our check and this insert: the key's
  // own conflict, and only that, makes this delivery a duplicate of the one that holds it.
  for (const key of keys) {
    const taken = await tx.execute({
      sql: "INSERT INTO webhook_dedupe_keys (key, delivery_id, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
      args: [key, id, now],
    });
    if (taken.rowsAffected === 0)
      throw new Duplicate(String((await one(tx, "SELECT delivery_id FROM webhook_dedupe_keys WHERE key = ?", [key]))?.delivery_id ?? "a concurrent delivery"));
  }
}
