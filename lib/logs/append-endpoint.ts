// POST /v1/runners/{runner_id}/jobs/{job_id}/logs and …/deployments/{deployment_id}/logs (runner
// token; docs/runners.md "Protocol"): a job's or a publish's log lines, appended to its build's log.
// Body {first_line, lines}: the index of the first line and up to 1 MiB of lines. Idempotent:
// lines Roost already has are skipped (202 with next_line), so a retried request never
// duplicates; a request that starts past next_line stores nothing and answers 416 log_gap with
// next_line, and the runner resends from there, so nothing is lost. Every answer carries
// X-Roost-Job-Status (running | canceling).
import type { z } from "zod";
import type { RunnerContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { json } from "../http/io.ts";
import { defineEndpoint } from "../http/route.ts";
import { LOG_REQUEST_LIMIT, LogAppendAnswer, LogAppendRequest, plainLogBatch } from "../runners/protocol-wire.ts";
import type { Executor } from "../db/client.ts";
import { appendLogLines, readLogPosition, type LineOwner, type LogPosition } from "./store.ts";

/** Whose lines they are: the job or publish the runner holds, and the status its answers carry. */
export interface LogWriter {
  id: string;
  build_id: string;
  status(): Promise<Record<string, string>>;
}

/** Where a writer's row is: its table, the path parameter naming it, and its read (which refuses nobody). */
export interface LogWriterRow<R> {
  from: LineOwner;
  idParam: string;
  /** The writer's row and where its lines stand (readLogPosition), read side by side or in one statement. */
  read(db: Executor, id: string): WriterRead<R>;
}

/** A writer's row and its log position, as read (each settles on its own). */
export interface WriterRead<R> {
  found: Promise<R>;
  position: Promise<LogPosition | null>;
}

/** The read of a writer whose row is read by `find`, beside its log position (one request to a remote database). */
export function besidePosition<R>(from: LineOwner, find: (db: Executor, id: string) => Promise<R>): LogWriterRow<R>["read"] {
  return (db, id) => ({ found: find(db, id), position: readLogPosition(db, from, id) });
}

/** What the endpoint reads before the caller is authenticated (Endpoint.prefetch). */
interface Prefetched<R> extends WriterRead<R> {
  id: string;
}

const ignore = () => undefined;

/**
 * The endpoint for one kind of writer: `row` reads it, `writer` judges what was read, refusing a
 * writer the runner does not hold. The writer's row and its log position are read beside the
 * runner's token (Endpoint.prefetch), so on a remote database a request reads in one round trip.
 */
export function logAppendEndpoint<P extends z.ZodObject<z.ZodRawShape>, R>(
  operation: { operationId: string; summary: string; params: P },
  row: LogWriterRow<R>,
  writer: (ctx: RunnerContext, id: string, found: Promise<R>) => Promise<LogWriter>,
) {
  const { from, idParam } = row;
  return defineEndpoint({
    prefetch(rawParams, ctx): Prefetched<R> | undefined {
      const id = rawParams[idParam];
      if (id === undefined) return undefined;
      const early = { id, ...row.read(ctx.db, id) };
      early.found.catch(ignore);
      early.position.catch(ignore);
      return early;
    },
    ...operation,
    body: LogAppendRequest,
    plainBody: plainLogBatch,
    bodyLimitBytes: LOG_REQUEST_LIMIT,
    response: LogAppendAnswer,
    successStatus: 202,
    errors: ["job_not_assigned", "job_finished", "log_gap"],
    async handle({ params, body, prefetched }, ctx: RunnerContext) {
      const id = String((params as Record<string, unknown>)[idParam]);
      const early = prefetched as Prefetched<R> | undefined;
      const read = early?.id === id ? early : row.read(ctx.db, id);
      // Where its lines stand, read beside the writer, so that the append need not read it again;
      // it is only a hint, which the append's guarded write checks.
      const [w, known] = await Promise.all([writer(ctx, id, read.found), read.position]);
      const now = ctx.clock.now();
      const result = await appendLogLines(
        ctx.db,
        w.id,
        w.build_id,
        body.first_line,
        body.lines,
        now,
        ctx.config.runners.maxBuildLogBytes,
        from,
        known ?? undefined,
      );
      // Committed: the stored lines themselves go to the build's live streams at once (no re-read).
      if (result.kind === "ok" && result.entries.length > 0) await ctx.live.logs.publish(w.build_id, result.entries);
      const status = await w.status();
      if (result.kind === "gap") {
        fail("log_gap", `Lines from ${result.next_line} are missing; resend from line ${result.next_line}.`, {
          headers: { ...status, "x-roost-log-next-line": String(result.next_line) },
        });
      }
      ctx.metrics.counter("roost_log_bytes_ingested_total", "Bytes of build log lines stored.").inc(
        {},
        body.lines.slice(Math.max(0, body.lines.length - result.accepted)).reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0),
      );
      return json({ next_line: result.next_line, last_seq: result.last_seq, accepted: result.accepted }, 202, {
        ...status,
        "x-roost-log-next-line": String(result.next_line),
      });
    },
  });
}
