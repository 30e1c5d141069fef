// Build logs (docs/runners.md "Logs"): lines numbered per job by the runner (idempotent
// appends) and per build by Roost (seq, the stable SSE id). Past the per-build cap the head (the
// first half) stays and a rolling tail (the second half) keeps the newest lines; what was cut in
// between is counted, and readers are told where and how much.
import type { Db, Executor } from "./client.ts";
import { all, inTransaction, one } from "./client.ts";

export interface LogLineInput {
  step: string;
  stream: "stdout" | "stderr" | "system";
  ts?: number | undefined;
  text: string;
}

export interface LogEntry {
  seq: number;
  job_id: string;
  line: number;
  step: string;
  stream: string;
  ts: number;
  text: string;
}

export interface LogStats {
  last_seq: number;
  bytes: number;
  head_last_seq: number | null;
  cut_lines: number;
  cut_bytes: number;
}

/** A stored line as live readers get it (lib/live/hub.ts publishes these without reading them back). */
export interface StoredLine {
  seq: number;
  step: string;
  stream: string;
  ts: number;
  text: string;
}

export type AppendResult = { kind: "ok"; next_line: number; last_seq: number; accepted: number; entries: StoredLine[] } | { kind: "gap"; next_line: number };

const lineBytes = (l: { text: string }) => Buffer.byteLength(l.text) + 1;

/**
 * Appends lines [firstLine, firstLine + lines.length) of a job (or of a deployment publishing
 * the build, which numbers its lines the same way: `from` "deployments"). Lines it already has
 * are skipped (a retried request duplicates nothing); a request that starts past the next
 * expected line is a gap and stores nothing (the runner resends from next_line).
 */
export async function appendLogLines(db: Db, jobId: string, buildId: string, firstLine: number, lines: LogLineInput[], now: number, capBytes: number, from: "jobs" | "deployments" = "jobs"): Promise<AppendResult> {
  return inTransaction(db, async (tx) => {
    const job = await one(tx, `SELECT next_line FROM ${from} WHERE id = ?`, [jobId]);
    const next = Number(job!.next_line);
    if (firstLine > next) return { kind: "gap", next_line: next };
    const fresh = lines.slice(next - firstLine);
    const stats = await statsOf(tx, buildId);
    if (fresh.length === 0) return { kind: "ok", next_line: next, last_seq: stats.last_seq, accepted: 0, entries: [] };
    const entries: StoredLine[] = [];

    let { last_seq, bytes, head_last_seq, cut_lines, cut_bytes } = stats;
    const headCap = Math.floor(capBytes / 2);
    let line = next;
    for (const l of fresh) {
      const size = lineBytes(l);
      if (head_last_seq === null && bytes + size > headCap) head_last_seq = last_seq;
      if (head_last_seq !== null && bytes + size > capBytes) {
        // Make room in the tail: drop its oldest lines (never the head).
        const oldest = await all(tx, "SELECT seq, text FROM build_logs WHERE build_id = ? AND seq > ? ORDER BY seq LIMIT 1000", [buildId, head_last_seq]);
        let freed = 0;
        let upTo = head_last_seq;
        for (const row of oldest) {
          if (bytes - freed + size <= capBytes) break;
          freed += Buffer.byteLength(String(row.text)) + 1;
          upTo = Number(row.seq);
          cut_lines++;
        }
        if (upTo > head_last_seq) await tx.execute({ sql: "DELETE FROM build_logs WHERE build_id = ? AND seq > ? AND seq <= ?", args: [buildId, head_last_seq, upTo] });
        bytes -= freed;
        cut_bytes += freed;
        if (bytes + size > capBytes) {
          // A single line larger than the tail: count it as cut.
          cut_lines++;
          cut_bytes += size;
          line++;
          continue;
        }
      }
      last_seq++;
      await tx.execute({
        sql: "INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        args: [buildId, last_seq, jobId, line, l.step, l.stream, l.ts ?? now, l.text],
      });
      entries.push({ seq: last_seq, step: l.step, stream: l.stream, ts: l.ts ?? now, text: l.text });
      bytes += size;
      line++;
    }
    await tx.execute({
      sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes, head_last_seq, cut_lines, cut_bytes) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (build_id) DO UPDATE SET last_seq = excluded.last_seq, bytes = excluded.bytes, head_last_seq = excluded.head_last_seq,
              cut_lines = excluded.cut_lines, cut_bytes = excluded.cut_bytes`,
      args: [buildId, last_seq, bytes, head_last_seq, cut_lines, cut_bytes],
    });
    await tx.execute({ sql: `UPDATE ${from} SET next_line = ? WHERE id = ?`, args: [line, jobId] });
    return { kind: "ok", next_line: line, last_seq, accepted: fresh.length, entries };
  });
}

/**
 * A line from Roost itself (stream "system", job "roost"), outside any job's line numbering:
 * it takes the next seq, so viewers get it like any other line, and counts against the cap.
 */
export async function appendSystemLine(db: Db, buildId: string, text: string, now: number): Promise<number> {
  return inTransaction(db, (tx) => appendSystemLineIn(tx, buildId, text, now));
}

/** appendSystemLine inside the caller's transaction (a state change that also writes a log line). */
export async function appendSystemLineIn(tx: Executor, buildId: string, text: string, now: number): Promise<number> {
  const stats = await statsOf(tx, buildId);
  const seq = stats.last_seq + 1;
  await tx.execute({ sql: "INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text) VALUES (?, ?, 'roost', -1, '', 'system', ?, ?)", args: [buildId, seq, now, text] });
  await tx.execute({
    sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes) VALUES (?, ?, ?)
          ON CONFLICT (build_id) DO UPDATE SET last_seq = excluded.last_seq, bytes = excluded.bytes`,
    args: [buildId, seq, stats.bytes + Buffer.byteLength(text) + 1],
  });
  return seq;
}

export async function statsOf(db: Executor, buildId: string): Promise<LogStats> {
  const row = await one(db, "SELECT * FROM build_log_stats WHERE build_id = ?", [buildId]);
  if (!row) return { last_seq: 0, bytes: 0, head_last_seq: null, cut_lines: 0, cut_bytes: 0 };
  return {
    last_seq: Number(row.last_seq),
    bytes: Number(row.bytes),
    head_last_seq: row.head_last_seq === null ? null : Number(row.head_last_seq),
    cut_lines: Number(row.cut_lines),
    cut_bytes: Number(row.cut_bytes),
  };
}

/** One page of lines after `afterSeq`, oldest first. */
export async function readLogPage(db: Executor, buildId: string, afterSeq: number, limit: number): Promise<LogEntry[]> {
  const rows = await all(db, "SELECT seq, job_id, line, step, stream, ts, text FROM build_logs WHERE build_id = ? AND seq > ? ORDER BY seq LIMIT ?", [buildId, afterSeq, limit]);
  return rows.map((r) => ({ seq: Number(r.seq), job_id: String(r.job_id), line: Number(r.line), step: String(r.step), stream: String(r.stream), ts: Number(r.ts), text: String(r.text) }));
}

/** The sentence readers show where the cap cut lines out. */
export function cutNotice(stats: LogStats): string {
  return `[roost] ${stats.cut_lines} lines (${stats.cut_bytes} bytes) were cut here: the build log passed its cap; the beginning and the end are kept.`;
}
