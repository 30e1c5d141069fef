// Where a delivery's body is kept (schema.sql migration 45). GitHub and GitLab send bodies of up to
// 25 MB ("Payloads are capped at 25 MB", https://docs.github.com/en/webhooks/webhook-events-and-payloads),
// where a libSQL server refuses a value of more than about 4 MB ("string or blob too big") and
// answers at most 10 MB a request (RESPONSE_TOO_LARGE); a file has neither limit, and keeps its
// bodies the same way so both behave alike. A body of up to INLINE_BODY_BYTES stays in its record
// (webhook_deliveries.body, written in the delivery's own write batch, as every body was); a larger
// one is compressed and kept in pieces (webhook_delivery_bodies), written before the record, a few
// pieces a request, and read back the same way.
import type { Db, Executor } from "../db/client.ts";
import { all, num } from "../db/client.ts";

/** A body of at most this many bytes (UTF-8) stays in its delivery's record. */
export const INLINE_BODY_BYTES = 1024 * 1024;
/** A compressed body is kept in pieces of at most this many bytes, well under the value a server takes. */
export const PIECE_BYTES = 1024 * 1024;
/**
 * Pieces written or read in one request: about 5.6 MB of JSON (a piece travels as base64), under
 * the 10 MB a server answers and the message its WebSocket takes (16 MiB; a larger one closes it).
 */
const PIECES_PER_REQUEST = 4;

/** A delivery's body as its record holds it: the text itself, or the number of its pieces; neither when it is not kept. */
export interface StoredBody {
  text: string | null;
  pieces: number;
}

export const NO_BODY: StoredBody = { text: null, pieces: 0 };

/**
 * Keeps `text` as delivery `deliveryId`'s body until `expiresAt`: a small one is only handed back
 * for the record; a larger one is compressed (zstd, off the event loop) and its pieces written now.
 * The record that points at them is written afterwards; pieces whose record never was expire too.
 */
export async function storeBody(db: Db, deliveryId: string, text: string, expiresAt: number): Promise<StoredBody> {
  // A UTF-8 byte is at least a third of a UTF-16 unit: no encoding needed for most bodies.
  if (text.length * 3 <= INLINE_BODY_BYTES) return { text, pieces: 0 };
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= INLINE_BODY_BYTES) return { text, pieces: 0 };
  const packed = await Bun.zstdCompress(bytes);
  const pieces = Math.ceil(packed.length / PIECE_BYTES);
  for (let first = 0; first < pieces; first += PIECES_PER_REQUEST) {
    const statements = [];
    for (let seq = first; seq < Math.min(first + PIECES_PER_REQUEST, pieces); seq++) {
      statements.push({
        sql: "INSERT INTO webhook_delivery_bodies (delivery_id, seq, piece, expires_at) VALUES (?, ?, ?, ?)",
        args: [deliveryId, seq, packed.subarray(seq * PIECE_BYTES, (seq + 1) * PIECE_BYTES), expiresAt],
      });
    }
    await db.batch(statements);
  }
  return { text: null, pieces };
}

/** A body kept in `pieces` pieces, read back whole; null when any of them is gone (expired). */
export async function readBody(db: Executor, deliveryId: string, pieces: number): Promise<string | null> {
  const parts: Uint8Array[] = [];
  for (let first = 0; first < pieces; first += PIECES_PER_REQUEST) {
    const rows = await all(db, "SELECT seq, piece FROM webhook_delivery_bodies WHERE delivery_id = +? AND seq >= +? AND seq < +? ORDER BY seq", [
      deliveryId,
      first,
      first + PIECES_PER_REQUEST,
    ]);
    for (const row of rows) {
      if (num(row, "seq") !== parts.length) return null;
      const piece = row.piece;
      parts.push(piece instanceof Uint8Array ? piece : new Uint8Array(piece as unknown as ArrayBuffer));
    }
  }
  if (parts.length !== pieces) return null;
  return new TextDecoder().decode(await Bun.zstdDecompress(Buffer.concat(parts)));
}

/** The pieces of a body no record points at (its delivery turned out a duplicate, which keeps no body). */
export async function discardBody(db: Db, deliveryId: string, body: StoredBody): Promise<void> {
  if (body.pieces > 0) await db.execute({ sql: "DELETE FROM webhook_delivery_bodies WHERE delivery_id = ?", args: [deliveryId] });
}

/** Housekeeping: pieces past their body's retention, and those of records never written. */
export async function pruneBodies(db: Executor, now: number): Promise<void> {
  await db.execute({ sql: "DELETE FROM webhook_delivery_bodies WHERE expires_at <= ?", args: [now] });
}
