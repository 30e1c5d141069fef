// Finished build logs in the object store (docs/operations.md "Object storage"). While a build
// runs its lines are rows of build_logs, where appends, the live hubs and the streams work on them.
// With an S3-compatible store configured, a build finished for ARCHIVE_AFTER_SECONDS has its lines
// written to the bucket as one gzip-compressed JSON-lines object, logs/<build_id>.jsonl.gz, and
// its rows deleted; build_log_stats.archived_seq says up to which seq (0 when retention deleted the
// log before it moved: nothing in the store, nothing left to move). Lines appended later (a
// deployment publishing the build) stay rows after that seq. Readers (openLogReader) read the
// object up to archived_seq and the rows after it, so GET /v1/builds/{id}/logs and the stream
// answer the same from any daemon.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { AppContext } from "../http/context.ts";
import { all, inTransaction, num, one, run, str } from "../db/client.ts";
import { readLogPage, type LogEntry } from "./store.ts";
import type { ObjectStore } from "../object-store/store.ts";

/** How long after its build finished a log moves: past the streams that follow it to its end and the statuses that quote it. */
export const ARCHIVE_AFTER_SECONDS = 60;
/** How long a daemon holds a log it archives (the upload's deadline is shorter): no other daemon starts on it meanwhile. */
export const ARCHIVE_LEASE_SECONDS = 3600;
/** Builds archived per pass. */
const ARCHIVE_BATCH = 20;
/** Rows read from the database per page while one is written out. */
const PAGE = 1000;
/** No archive may exceed this: the per-build cap (ROOST_MAX_BUILD_LOG_BYTES, at most 1 GiB) plus the JSON around each line. */
const MAX_ARCHIVE_BYTES = 16 * 1024 ** 3;

export function logArchiveKey(buildId: string): string {
  return `logs/${buildId}.jsonl.gz`;
}

/**
 * One pass: the logs of builds finished ARCHIVE_AFTER_SECONDS ago (no job or deployment still
 * sending lines), not yet archived nor deleted by retention, go to the object store. For each:
 * 0. take the log for this daemon (`owner`) for ARCHIVE_LEASE_SECONDS, or leave it to the daemon
 *    that holds it: two daemons archiving one log at once could end with the slower upload, of
 *    fewer lines, overwriting the object after the other had archived a line appended since;
 * 1. note the last seq, and write every row up to it, as JSON lines through gzip, to a file in the
 *    data directory;
 * 2. only if the log is still where it was (not archived by another daemon, no line added, not
 *    deleted by retention), send that file to the store: every row was there while it was read,
 *    since another daemon's step 3 deletes them in the transaction that sets archived_seq;
 * 3. in one transaction, set archived_seq, only if no line arrived meanwhile and retention has not
 *    deleted the log, and delete the rows the object now holds.
 * A build whose step 3 did not happen is taken again by a later pass (its object is rewritten);
 * several daemons may run passes side by side, since step 3 is conditional and steps 1 and 2 never
 * send a log whose rows went meanwhile. (Streaming the rows straight to the store did: the daemon
 * that read them after another's step 3 overwrote the object with an empty log. Nor can an upload
 * be called off once begun: the S3 client completes what was written.) Two daemons that both pass
 * step 2 write the same lines.
 * Only with an S3-compatible store: on a single host the default keeps logs in the database.
 */
export async function archiveFinishedLogs(
  ctx: Pick<AppContext, "db" | "objects" | "clock" | "log" | "config">,
  owner: string,
  limit = ARCHIVE_BATCH,
): Promise<{ archived: number }> {
  if (ctx.objects.kind !== "s3") return { archived: 0 };
  const due = await all(
    ctx.db,
    // From the logs not yet archived (build_log_stats_unarchived), never from the builds' history.
    `SELECT b.id, s.last_seq FROM build_log_stats s CROSS JOIN builds b ON b.id = s.build_id
      WHERE b.finished_at IS NOT NULL AND b.finished_at <= ? AND b.logs_deleted_at IS NULL AND s.archived_seq IS NULL AND s.last_seq > 0
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.build_id = b.id AND j.status = 'running')
        AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.build_id = b.id AND d.status = 'running')
      ORDER BY b.finished_at LIMIT +?`,
    [ctx.clock.now() - ARCHIVE_AFTER_SECONDS, limit],
  );
  let archived = 0;
  for (const row of due) {
    const buildId = str(row, "id");
    const lastSeq = num(row, "last_seq");
    const key = logArchiveKey(buildId);
    const spool = join(ctx.config.dataDir, `.log-archive-${buildId}-${crypto.randomUUID()}.jsonl.gz`);
    const now = ctx.clock.now();
    const taken = await one(
      ctx.db,
      `UPDATE build_log_stats SET archive_taken_by = ?, archive_taken_until = ?
        WHERE build_id = ? AND archived_seq IS NULL AND (archive_taken_until IS NULL OR archive_taken_until < ? OR archive_taken_by = ?) RETURNING build_id`,
      [owner, now + ARCHIVE_LEASE_SECONDS, buildId, now, owner],
    );
    if (!taken) continue;
    // A log this pass leaves unmoved (a line came meanwhile) is let go at once, not at the lease's
    // end: the next pass of any daemon, or of this one restarted under a new name, takes it.
    const release = () =>
      run(ctx.db, "UPDATE build_log_stats SET archive_taken_by = NULL, archive_taken_until = NULL WHERE build_id = ? AND archive_taken_by = ?", [
        buildId,
        owner,
      ]);
    try {
      await Bun.write(spool, new Response(compressedLines(ctx.db, buildId, lastSeq)));
      const unmoved = await one(
        ctx.db,
        `SELECT 1 FROM build_log_stats s CROSS JOIN builds b ON b.id = s.build_id
          WHERE s.build_id = +? AND s.archived_seq IS NULL AND s.last_seq = +? AND b.logs_deleted_at IS NULL`,
        [buildId, lastSeq],
      );
      if (!unmoved) {
        await release();
        continue;
      }
      await ctx.objects.put(key, Bun.file(spool).stream(), {
        maxBytes: MAX_ARCHIVE_BYTES,
        tooLarge: `The log of build ${buildId} is too large to archive.`,
      });
    } finally {
      await rm(spool, { force: true });
    }
    const moved = await inTransaction(ctx.db, async (tx) => {
      const marked = await one(
        tx,
        `UPDATE build_log_stats SET archived_seq = ? WHERE build_id = ? AND archived_seq IS NULL AND last_seq = ?
            AND (SELECT logs_deleted_at FROM builds WHERE id = ?) IS NULL RETURNING build_id`,
        [lastSeq, buildId, lastSeq, buildId],
      );
      if (!marked) return false;
      await tx.execute({ sql: "DELETE FROM build_logs WHERE build_id = ? AND seq <= ?", args: [buildId, lastSeq] });
      return true;
    });
    if (moved) archived++;
    else {
      await release();
      if (await one(ctx.db, "SELECT 1 FROM builds WHERE id = ? AND logs_deleted_at IS NOT NULL", [buildId])) await ctx.objects.delete(key);
    }
  }
  if (archived) ctx.log.info("build logs archived to the object store", { builds: archived });
  return { archived };
}

/** The rows of one build up to `lastSeq`, one JSON object a line, gzip-compressed, read a page at a time. */
function compressedLines(db: AppContext["db"], buildId: string, lastSeq: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let cursor = 0;
  const lines = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const page = cursor < lastSeq ? (await readLogPage(db, buildId, cursor, PAGE)).filter((e) => e.seq <= lastSeq) : [];
      if (page.length === 0) return controller.close();
      cursor = page.at(-1)!.seq;
      controller.enqueue(encoder.encode(page.map((e) => JSON.stringify(e) + "\n").join("")));
    },
  });
  // The DOM typings declare CompressionStream's writable side as BufferSource, wider than what a byte stream pipes.
  return lines.pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>);
}

export interface LogReader {
  /** Up to `limit` lines after `afterSeq`, oldest first, wherever they are kept. */
  page(afterSeq: number, limit: number): Promise<LogEntry[]>;
}

/**
 * A reader of one build's log for one request or stream. Where the log is archived it reads the
 * object once, forward, as the pages are asked for (never the whole log in memory), then the rows
 * after archived_seq. Whether the log is archived is read again for each page, so a reader that
 * began on the rows goes on in the object when the log moves under it.
 */
export function openLogReader(ctx: Pick<AppContext, "db" | "objects">, buildId: string): LogReader {
  const archive = new ArchiveCursor(ctx.objects, logArchiveKey(buildId));
  const archivedSeq = async () => {
    const row = await one(ctx.db, "SELECT archived_seq FROM build_log_stats WHERE build_id = ?", [buildId]);
    return row && row.archived_seq !== null ? num(row, "archived_seq") : null;
  };
  return {
    async page(afterSeq, limit) {
      let upTo = await archivedSeq();
      if (upTo === null) {
        const rows = await readLogPage(ctx.db, buildId, afterSeq, limit);
        // Fewer rows than asked may mean the log moved while they were read.
        if (rows.length === limit || (upTo = await archivedSeq()) === null) return rows;
      }
      const fromArchive = afterSeq < upTo ? await archive.read(afterSeq, upTo, limit) : [];
      const after = fromArchive.at(-1)?.seq ?? afterSeq;
      if (fromArchive.length === limit || after < upTo) return fromArchive;
      return fromArchive.concat(await readLogPage(ctx.db, buildId, Math.max(after, upTo), limit - fromArchive.length));
    },
  };
}

/** Reads a gzip-compressed JSON-lines object forward; asked for lines behind where it stands, it starts over. */
class ArchiveCursor {
  #lines: AsyncGenerator<LogEntry> | null = null;
  /** The seq of the last line taken from #lines. */
  #at = 0;

  constructor(
    readonly objects: ObjectStore,
    readonly key: string,
  ) {}

  async read(afterSeq: number, upTo: number, limit: number): Promise<LogEntry[]> {
    if (!this.#lines || afterSeq < this.#at) {
      const body = await this.objects.get(this.key);
      this.#lines = entries(body === null ? null : body instanceof Blob ? body.stream() : body);
      this.#at = 0;
    }
    const out: LogEntry[] = [];
    while (out.length < limit && this.#at < upTo) {
      const next = await this.#lines.next();
      if (next.done) break;
      this.#at = next.value.seq;
      if (next.value.seq > afterSeq) out.push(next.value);
    }
    return out;
  }
}

async function* entries(body: ReadableStream<Uint8Array> | null): AsyncGenerator<LogEntry> {
  if (!body) return;
  const reader = body.pipeThrough(new DecompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    buffer += decoder.decode(next.value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line) yield JSON.parse(line) as LogEntry;
    }
  }
}
