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
import type { Db, Executor } from "../db/client.ts";
import { confirmRunner } from "../auth/authenticate.ts";
import { appendLogLines, readLogPosition, type AppendResult, type HeldCondition, type LineOwner, type LogPosition } from "./store.ts";

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
  /**
   * What authentication and `writer` judge, as a condition on the database: the runner's token
   * works (its row holds the hash it was read with and is not revoked), the runner holds the
   * writer, and the answer would say the build runs (X-Roost-Job-Status: running). With it, a
   * remote database's appends of a writer appended to here before read nothing first (see RememberedWriter).
   */
  held?(runner: { id: string; secretHash: string }, id: string): HeldCondition;
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

/**
 * A writer this process appended to for a runner, and where its lines stood after that append.
 * On a libSQL server every read is a request (a round trip, and the server's CPU per request is
 * far above its CPU per line: docs/benchmarks.md "Log appends on sqld"). A runner's next append of
 * the same writer is then written from these positions with nothing read first: the runner's
 * token as this daemon read it (lib/runners/store.ts RememberedRunner) and the writer, `held`, are
 * conditions of the append's own guarded write, so a revoked or rotated token, a job finished, lost or taken over,
 * or a build being canceled (through any daemon) writes nothing, and the request then reads and
 * judges as any other (a 401, job_finished, canceling). bun:sqlite reads in microseconds
 * in-process, where the conditions would cost the write more than they save: it always reads.
 */
interface RememberedWriter {
  runnerId: string;
  buildId: string;
  position: LogPosition;
}
const rememberedWriters = new WeakMap<Db, Map<string, RememberedWriter>>();
/** Bounded (more than a fleet's running jobs): the oldest entry makes room, its writer read at its next append. */
const WRITERS_KEPT = 10_000;

function recalled(db: Db, from: LineOwner, id: string): RememberedWriter | undefined {
  return db.driver === "libsql" ? rememberedWriters.get(db)?.get(`${from}:${id}`) : undefined;
}

function remember(db: Db, from: LineOwner, id: string, writer: RememberedWriter | null): void {
  if (db.driver !== "libsql") return;
  let kept = rememberedWriters.get(db);
  if (!kept) rememberedWriters.set(db, (kept = new Map()));
  const key = `${from}:${id}`;
  kept.delete(key);
  if (!writer) return;
  if (kept.size >= WRITERS_KEPT) kept.delete(kept.keys().next().value!);
  kept.set(key, writer);
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
      // A writer remembered here is written from memory first (RememberedWriter): nothing to read yet.
      if (id === undefined || (row.held && recalled(ctx.db, from, id) !== undefined)) return undefined;
      const early = { id, ...row.read(ctx.db, id) };
      early.found.catch(ignore);
      early.position.catch(ignore);
      return early;
    },
    ...operation,
    body: LogAppendRequest,
    plainBody: plainLogBatch,
    bodyLimitBytes: LOG_REQUEST_LIMIT,
    // The runner as remembered, held in the append's write when the writer is remembered too (RememberedWriter).
    runnerInWrite: (rawParams, ctx) => row.held !== undefined && rawParams[idParam] !== undefined && recalled(ctx.db, from, rawParams[idParam]) !== undefined,
    response: LogAppendAnswer,
    successStatus: 202,
    errors: ["job_not_assigned", "job_finished", "log_gap"],
    async handle({ params, body, prefetched }, ctx: RunnerContext) {
      const id = String((params as Record<string, unknown>)[idParam]);
      const kept = row.held && ctx.runnerStands ? recalled(ctx.db, from, id) : undefined;
      if (kept && kept.runnerId === ctx.runner.id) {
        const held = row.held!({ id: ctx.runner.id, secretHash: ctx.runnerStands!.secretHash }, id);
        const now = ctx.clock.now();
        const result = await appendLogLines(
          ctx.db,
          id,
          kept.buildId,
          body.first_line,
          body.lines,
          now,
          ctx.config.runners.maxBuildLogBytes,
          from,
          kept.position,
          held,
        );
        if (result.kind === "ok") {
          if (result.position) remember(ctx.db, from, id, { ...kept, position: result.position });
          return answered(ctx, kept.buildId, result, body.lines, { "x-roost-job-status": "running" });
        }
        remember(ctx.db, from, id, null);
      }
      // A runner taken as remembered (runnerInWrite) is read now, before anything is read for it.
      if (ctx.runnerStands) await confirmRunner(ctx, ctx.runner.id);
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
      const status = await w.status();
      if (result.kind === "gap") {
        fail("log_gap", `Lines from ${result.next_line} are missing; resend from line ${result.next_line}.`, {
          headers: { ...status, "x-roost-log-next-line": String(result.next_line) },
        });
      }
      if (result.kind !== "ok") throw new Error("An append without a held condition is answered ok or gap");
      if (row.held && result.position && status["x-roost-job-status"] === "running")
        remember(ctx.db, from, w.id, { runnerId: ctx.runner.id, buildId: w.build_id, position: result.position });
      return answered(ctx, w.build_id, result, body.lines, status);
    },
  });
}

/** A stored append's answer: its lines to the build's live streams (as stored, not read back), counted, and where the writer's log stands. */
async function answered(
  ctx: RunnerContext,
  buildId: string,
  result: Extract<AppendResult, { kind: "ok" }>,
  lines: { text: string }[],
  status: Record<string, string>,
): Promise<Response> {
  if (result.entries.length > 0) await ctx.live.logs.publish(buildId, result.entries);
  ctx.metrics.counter("roost_log_bytes_ingested_total", "Bytes of build log lines stored.").inc(
    {},
    lines.slice(Math.max(0, lines.length - result.accepted)).reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0),
  );
  return json({ next_line: result.next_line, last_seq: result.last_seq, accepted: result.accepted }, 202, {
    ...status,
    "x-roost-log-next-line": String(result.next_line),
  });
}
