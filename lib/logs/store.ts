// Build logs (docs/runners.md "Logs"): lines numbered per job by the runner (idempotent
// appends) and per build by Roost (seq, the stable SSE id). Past the per-build cap the head (the
// first half) stays and a rolling tail (the second half) keeps the newest lines; what was cut in
// between is counted, and readers are told where and how much.
import type { Db, Executor, Row, SqlCondition, Statement } from "../db/client.ts";
import { all, ALWAYS, inTransaction, one, readInPieces } from "../db/client.ts";
import { MAX_MERGED_BYTES } from "../db/write-queue.ts";

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

export type AppendResult =
  | {
      kind: "ok";
      next_line: number;
      last_seq: number;
      accepted: number;
      entries: StoredLine[];
      /** Where the job's lines and its build's log stand after it, when the guarded batch wrote it (the hint for its job's next append). */
      position?: LogPosition;
    }
  | { kind: "gap"; next_line: number }
  /** An append with a held condition (appendLogLines `held`) that did not hold, or whose job or build moved since its hint: nothing written. */
  | { kind: "unconfirmed" };

const lineBytes = (l: { text: string }) => Buffer.byteLength(l.text) + 1;

/** With the u flag a surrogate pair is one code point: this matches lone surrogates only. */
const LONE_SURROGATE = /\p{Cs}/u;
/** The text with each lone UTF-16 surrogate as U+FFFD, as SQLite stores a bound string (String.prototype.toWellFormed, ES2024). */
const wellFormed = (text: string): string => (LONE_SURROGATE.test(text) ? text.replace(/\p{Cs}/gu, "\ufffd") : text);

/** Rows per INSERT: 8 values each, well under SQLite's 32,766 bound variables (https://www.sqlite.org/limits.html#max_variable_number). */
const ROWS_PER_INSERT = 500;
/** At most this many appends share one transaction. */
const MAX_APPENDS_TOGETHER = 64;

/**
 * A condition an append is written under (appendLogLines `held`), as data: `item`, an entry of a
 * JSON array, and `counted`, the SQL that counts the entries of such an array (its parameter
 * `param`) that hold. The appends written together are checked by one statement whose text is the
 * same whatever their number: a condition of its own for each (three subqueries and five
 * arguments a runner) made sqld parse and bind more than the lines themselves cost it (about 18 %
 * of its CPU on appends, scripts/bench/sqld-append-ab.ts).
 */
export interface HeldCondition {
  counted(param: string): string;
  item: unknown;
}

/** Whose lines: a job's, or a deployment's publishing the build (numbered the same way). */
export type LineOwner = "jobs" | "deployments";

/** Where a job's (or deployment's) lines and its build's log stood when read (readLogPosition). */
export interface LogPosition {
  next_line: number;
  stats: LogStats;
}

interface Append {
  from: LineOwner;
  jobId: string;
  buildId: string;
  firstLine: number;
  lines: LogLineInput[];
  now: number;
  capBytes: number;
  /** Where its job and build stood, read by the caller: the first try need not read them again. */
  known: LogPosition | undefined;
  /** A condition its lines are written under, with `known` as the positions (appendLogLines `held`). */
  held: HeldCondition | undefined;
}

interface Waiting extends Append {
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

/** Appends waiting for a database's next log transaction, and whether one is under way. */
const waitingFor = new WeakMap<Db, { queue: Waiting[]; running: boolean }>();

/**
 * Appends lines [firstLine, firstLine + lines.length) of a job (or of a deployment publishing
 * the build, which numbers its lines the same way: `from` "deployments"). Lines it already has
 * are skipped (a retried request duplicates nothing); a request that starts past the next
 * expected line is a gap and stores nothing (the runner resends from next_line).
 *
 * Appends that arrive together, from every runner, are written together in two requests
 * whatever their number (appendGuarded): one read of the jobs' next lines and their builds' log
 * stats, outside any transaction, then one write batch of every new line, the stats and the jobs'
 * next lines, each append's writes guarded by what was read. When every caller passed `known`
 * (readLogPosition, read beside its own look-up of the job) the first try reads nothing: the
 * write batch alone. On a remote database each request is
 * a round trip, and the write lock is held only while the batch runs on the server. An append
 * whose job or build another process wrote in between writes nothing and goes again; appends that
 * reach the cap (which deletes lines it must read first) are written in one transaction instead
 * (appendAll). If the write fails, its appends are written again one by one, so that only a
 * failing one fails. With `held` (and `known`), an append is written only under that condition,
 * in one try from `known`, and is otherwise answered unconfirmed, nothing written (appendHeld).
 */
export function appendLogLines(
  db: Db,
  jobId: string,
  buildId: string,
  firstLine: number,
  lines: LogLineInput[],
  now: number,
  capBytes: number,
  from: LineOwner = "jobs",
  known?: LogPosition,
  held?: HeldCondition,
): Promise<AppendResult> {
  let state = waitingFor.get(db);
  if (!state) waitingFor.set(db, (state = { queue: [], running: false }));
  const queue = state;
  return new Promise((resolve, reject) => {
    // A held condition is written under with the positions its caller knew, never without them.
    if (held && !known) return resolve({ kind: "unconfirmed" });
    queue.queue.push({ from, jobId, buildId, firstLine, lines, now, capBytes, known, held, resolve, reject });
    if (!queue.running) {
      queue.running = true;
      // After this turn's I/O: appends of requests read together share the transaction.
      setImmediate(() => void writeWaiting(db, queue));
    }
  });
}

async function writeWaiting(db: Db, state: { queue: Waiting[]; running: boolean }): Promise<void> {
  try {
    while (state.queue.length > 0 && !db.closed) {
      const taken = state.queue.splice(0, MAX_APPENDS_TOGETHER);
      const held = taken.filter((t) => t.held);
      if (held.length > 0) {
        const results = await appendHeld(db, held);
        held.forEach((t, i) => t.resolve(results[i]!));
      }
      const rest = held.length > 0 ? taken.filter((t) => !t.held) : taken;
      if (rest.length === 0) continue;
      try {
        const results = await appendTogether(db, rest);
        rest.forEach((t, i) => t.resolve(results[i]!));
      } catch (error) {
        if (rest.length === 1) rest[0]!.reject(error);
        else for (const t of rest) await inTransaction(db, (tx) => appendAll(tx, [t])).then(([r]) => t.resolve(r!), t.reject);
      }
    }
    for (const t of state.queue.splice(0)) t.reject(new Error("The database is closed"));
  } finally {
    state.running = false;
  }
}

/**
 * Appends whose callers hold a condition for them (appendLogLines `held`): one guarded batch from
 * the positions the callers knew, each append's writes under its condition too. Whatever it did
 * not write (the condition failed, a job or build moved, a gap, the cap, an error) is unconfirmed
 * and written nothing: never again without its condition. The caller then reads and judges it as
 * any append, and meets the error itself if it lasts.
 */
async function appendHeld(db: Db, appends: Append[]): Promise<AppendResult[]> {
  const answers = await appendGuarded(db, appends, true).catch(() => null);
  return appends.map((_, i) => answers?.[i] ?? { kind: "unconfirmed" });
}

/** How often an append that lost a race to another process goes again before it takes a transaction. */
const GUARDED_TRIES = 5;

/** The appends, each one's result: guarded batches while races allow, else one transaction. */
async function appendTogether(db: Db, appends: Append[]): Promise<AppendResult[]> {
  const results: Array<AppendResult | undefined> = new Array(appends.length);
  let left = appends.map((_, i) => i);
  // The first try from the positions their callers read, when every one did (no request of its own).
  let hinted = appends.every((a) => a.known !== undefined);
  for (let tries = 0; tries < GUARDED_TRIES + (hinted ? 1 : 0) && left.length > 0; tries++, hinted = false) {
    const answers = await appendGuarded(
      db,
      left.map((i) => appends[i]!),
      hinted,
    );
    if (answers === null) break;
    answers.forEach((r, k) => (results[left[k]!] = r));
    left = left.filter((i) => results[i] === undefined);
  }
  if (left.length > 0) {
    const rest = await inTransaction(db, (tx) =>
      appendAll(
        tx,
        left.map((i) => appends[i]!),
      ),
    );
    rest.forEach((r, k) => (results[left[k]!] = r));
  }
  return results as AppendResult[];
}

const key = (a: Append) => `${a.from}:${a.jobId}`;
const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** Where each job's (or deployment's) lines and each build's log stand: read together. */
async function readPositions(ex: Executor, appends: Append[]): Promise<{ nextLine: Map<string, number>; stats: Map<string, LogStats> }> {
  const owners = (from: LineOwner) => [...new Set(appends.filter((a) => a.from === from).map((a) => a.jobId))];
  const buildIds = [...new Set(appends.map((a) => a.buildId))];
  const [jobs, deployments, statRows] = await Promise.all([
    ...(["jobs", "deployments"] as const).map((from) => {
      const ids = owners(from);
      return ids.length === 0 ? [] : all(ex, `SELECT id, next_line FROM ${from} WHERE id IN (${marks(ids.length)})`, ids);
    }),
    all(ex, `SELECT * FROM build_log_stats WHERE build_id IN (${marks(buildIds.length)})`, buildIds),
  ]);
  const nextLine = new Map<string, number>();
  for (const row of jobs!) nextLine.set(`jobs:${String(row.id)}`, Number(row.next_line));
  for (const row of deployments!) nextLine.set(`deployments:${String(row.id)}`, Number(row.next_line));
  const stats = new Map<string, LogStats>(buildIds.map((id) => [id, { last_seq: 0, bytes: 0, head_last_seq: null, cut_lines: 0, cut_bytes: 0 }]));
  for (const row of statRows!) stats.set(String(row.build_id), statsFrom(row));
  return { nextLine, stats };
}

/**
 * The positions the appends' callers read: per job the furthest next line, per build the stats
 * furthest on (a copy: the guarded write counts on it). Any may be stale; the guards tell.
 */
function knownPositions(appends: Append[]): { nextLine: Map<string, number>; stats: Map<string, LogStats> } {
  const nextLine = new Map<string, number>();
  const stats = new Map<string, LogStats>();
  for (const a of appends) {
    const known = a.known!;
    if ((nextLine.get(key(a)) ?? -1) < known.next_line) nextLine.set(key(a), known.next_line);
    if ((stats.get(a.buildId)?.last_seq ?? -1) < known.stats.last_seq) stats.set(a.buildId, { ...known.stats });
  }
  return { nextLine, stats };
}

/**
 * Where a job's (or deployment's) lines and its build's log stand, in one statement: what an
 * append's caller reads beside its own look-up (one request to a remote server), for appendLogLines.
 */
export async function readLogPosition(db: Executor, from: LineOwner, id: string): Promise<LogPosition | null> {
  const row = await one(
    db,
    `SELECT o.next_line, s.last_seq, s.bytes, s.head_last_seq, s.cut_lines, s.cut_bytes FROM ${from} o LEFT JOIN build_log_stats s ON s.build_id = o.build_id WHERE o.id = +?`,
    [id],
  );
  return row ? logPositionFrom(row) : null;
}

/** A row with its owner's next_line and its build's log stats (NULL where it has none yet) as a position. */
export function logPositionFrom(row: Row): LogPosition {
  return { next_line: Number(row.next_line), stats: statsFrom(row) };
}

/** A build's log stats as the guards compare them (a build without a row has zeros). */
const STATS_NOW = `COALESCE((SELECT printf('%d %d %d %d', last_seq, bytes, cut_lines, IFNULL(head_last_seq, -1)) FROM build_log_stats WHERE build_id = ?), '0 0 0 -1')`;
const statsSignature = (s: LogStats) => `${s.last_seq} ${s.bytes} ${s.cut_lines} ${s.head_last_seq ?? -1}`;

/**
 * The appends as one write batch after one read, both outside any transaction. Each append's
 * statements are guarded by what was read of its job and build: first its job's next_line moves
 * on if the job and the build's stats are as read; then its lines and the new stats are written
 * if the job's next_line is the new one and the stats still as read, which holds only if that
 * first statement ran. An append whose guard failed (another process wrote its job's or build's
 * log since the read) writes nothing, and its result is undefined; so is every later append of
 * the same job or build in the batch. With `hinted`, the positions are the ones the appends'
 * callers read (knownPositions) instead, and an append they make a gap or a repeat is undefined
 * too. Null when an append would pass the cap: that needs the lines it cuts read under the write
 * lock (appendAll).
 */
async function appendGuarded(db: Db, appends: Append[], hinted: boolean): Promise<Array<AppendResult | undefined> | null> {
  const { nextLine, stats } = hinted ? knownPositions(appends) : await readPositions(db, appends);
  const answers: Array<AppendResult | undefined> = [];
  const statements: Statement[] = [];
  /** Per append, the index of its guarding statement (the next_line UPDATE) in the batch. */
  const guards = new Map<number, number>();
  /** The same writes as a few statements for all the appends (libsql only: mergedAppends). */
  const merged: Merged = { from: new Set(), jobs: new Map(), builds: new Map(), appends: 0, lines: [], held: [] };
  /** libsql: each append's INSERT of its lines, whose JSON argument is made only if it is sent. */
  const linesOf: Array<[Array<string | number>, StoredLine[]]> = [];
  for (const [i, a] of appends.entries()) {
    const next = nextLine.get(key(a));
    if (next === undefined) throw new Error(`${a.from} ${a.jobId} has no row to append log lines to`);
    const build = stats.get(a.buildId)!;
    const fresh = a.lines.slice(Math.max(0, next - a.firstLine));
    if (hinted && (a.firstLine > next || fresh.length === 0)) {
      // A gap or a repeat is answered only from positions read now: the caller's may be stale.
      answers.push(undefined);
      continue;
    }
    if (a.firstLine > next) {
      answers.push({ kind: "gap", next_line: next });
      continue;
    }
    if (fresh.length === 0) {
      answers.push({ kind: "ok", next_line: next, last_seq: build.last_seq, accepted: 0, entries: [] });
      continue;
    }
    const before = statsSignature(build);
    const entries: StoredLine[] = [];
    const headCap = Math.floor(a.capBytes / 2);
    for (const l of fresh) {
      const size = lineBytes(l);
      if (build.head_last_seq === null && build.bytes + size > headCap) build.head_last_seq = build.last_seq;
      if (build.head_last_seq !== null && build.bytes + size > a.capBytes) return null;
      build.last_seq++;
      build.bytes += size;
      entries.push({ seq: build.last_seq, step: l.step, stream: l.stream, ts: l.ts ?? a.now, text: l.text });
    }
    const line = next + fresh.length;
    nextLine.set(key(a), line);
    if (db.driver === "libsql") {
      merged.from.add(a.from);
      merged.jobs.set(a.jobId, { next: merged.jobs.get(a.jobId)?.next ?? next, line });
      if (!merged.builds.has(a.buildId)) merged.builds.set(a.buildId, { before, stats: build });
      for (const [k, e] of entries.entries()) merged.lines.push([a.buildId, e.seq, a.jobId, next + k, wellFormed(e.step), e.stream, e.ts, wellFormed(e.text)]);
      if (a.held) merged.held.push(a.held);
      merged.appends++;
    }
    // Each statement after the guarding UPDATE runs only if the one before it changed the rows it
    // was to change (changes(): https://www.sqlite.org/lang_corefunc.html#changes), so all of the
    // append's writes happen exactly when the UPDATE did. A batch runs its statements one after
    // the other on one connection, inside one transaction.
    let changed = 1;
    guards.set(i, statements.length);
    statements.push({
      sql: `UPDATE ${a.from} SET next_line = ? WHERE id = ? AND next_line = ? AND ${STATS_NOW} = ?${a.held ? ` AND (${a.held.counted("?")}) = 1` : ""}`,
      args: [line, a.jobId, next, a.buildId, before, ...(a.held ? [JSON.stringify([a.held.item])] : [])],
    });
    if (db.driver === "libsql") {
      // Over Hrana every bound value is a JSON object the server decodes, and the statement's text
      // is parsed twice there (sqld's analysis, then SQLite's): the lines go as one JSON argument
      // of a short statement whose text is the same for every append (filled in below, if sent).
      const args: Array<string | number> = [a.buildId, entries[0]!.seq, a.jobId, next, "", changed];
      linesOf.push([args, entries]);
      statements.push({
        sql: `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text)
              SELECT ?, ? + j.key, ?, ? + j.key, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3 FROM json_each(?) AS j WHERE changes() = ?`,
        args,
      });
      changed = entries.length;
    } else
      for (let at = 0; at < entries.length; at += ROWS_PER_INSERT) {
        const chunk = entries.slice(at, at + ROWS_PER_INSERT);
        statements.push({
          sql: `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text)
                SELECT * FROM (VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}) WHERE changes() = ?`,
          args: [...chunk.flatMap((e, k) => [a.buildId, e.seq, a.jobId, next + at + k, e.step, e.stream, e.ts, e.text]), changed],
        });
        changed = chunk.length;
      }
    statements.push({
      sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes, head_last_seq, cut_lines, cut_bytes) SELECT ?, ?, ?, ?, ?, ? WHERE changes() = ?
            ON CONFLICT (build_id) DO UPDATE SET last_seq = excluded.last_seq, bytes = excluded.bytes, head_last_seq = excluded.head_last_seq,
              cut_lines = excluded.cut_lines, cut_bytes = excluded.cut_bytes`,
      args: [a.buildId, build.last_seq, build.bytes, build.head_last_seq, build.cut_lines, build.cut_bytes, changed],
    });
    answers.push({
      kind: "ok",
      next_line: line,
      last_seq: build.last_seq,
      accepted: fresh.length,
      entries,
      position: { next_line: line, stats: { ...build } },
    });
  }
  if (statements.length === 0) return answers;
  const together = db.driver === "libsql" ? mergedAppends(merged) : null;
  // All of them or none: when a guard moved, the appends go again as their own statements, so only
  // the ones another process wrote in between go round again.
  if (together && (await db.batch(together.statements))[0]!.rowsAffected === together.jobs) return answers;
  // Each append's lines as its JSON argument, made only now: when the merged statements wrote, they
  // are never sent (stringifying them up front was about 2.5 % of the daemon's CPU on appends to sqld).
  for (const [args, entries] of linesOf) args[4] = JSON.stringify(entries.map((e) => [wellFormed(e.step), e.stream, e.ts, wellFormed(e.text)]));
  const written = await db.batch(statements);
  // An append after a lost one of the same job or build was answered from what the lost one would have written.
  const lost = new Set<string>();
  for (const [i, a] of appends.entries()) {
    const at = guards.get(i);
    if (lost.has(a.buildId) || lost.has(key(a)) || (at !== undefined && written[at]!.rowsAffected !== 1)) {
      lost.add(a.buildId).add(key(a));
      answers[i] = undefined;
    }
  }
  return answers;
}

/** What appendGuarded's appends write, per job (as of `from`), per build and per append, for mergedAppends. */
interface Merged {
  from: Set<LineOwner>;
  /** Each job's next line as read, and as its last append in the call leaves it. */
  jobs: Map<string, { next: number; line: number }>;
  /** Each build's stats as read (statsSignature), and the object its appends moved on (its last stats). */
  builds: Map<string, { before: string; stats: LogStats }>;
  /** How many appends write. */
  appends: number;
  /**
   * Every line as [build, seq, job, line, step, stream, ts, text]: one flat array. (Lines nested in
   * their append's array cost sqld more CPU than the statements saved: each value read from the
   * outer array parses it again.)
   */
  lines: Array<[string, number, string, number, string, string, number, string]>;
  /** The conditions the appends' callers hold (appendLogLines `held`), each of which must hold for any to be written. */
  held: HeldCondition[];
}

/**
 * A guarded write batch's appends as three statements whatever their number, for a remote libSQL
 * server, which prepares and parses every statement afresh (about 0.6 ms of its CPU for a guarded
 * statement against 0.15 ms for its rows; docs/benchmarks.md "Log appends on sqld: merged
 * statements"). First one UPDATE of every job's next line from a JSON array, which writes only if
 * every job's next line and every build's stats are still as read (the guards are counted before
 * any row is written: an uncorrelated subquery runs once, https://www.sqlite.org/lang_expr.html#cosub),
 * so it changes the rows of all the jobs or of none; then the lines of all the appends, and the
 * stats of all the builds, each written only if the statement before it changed what it was to
 * (changes()). A job or build appended to twice in the call is guarded once, as read, and written
 * once, as its last append leaves it. Null where merging saves nothing (one append), where the
 * appends are of jobs and deployments (two tables), or where the lines would make an argument
 * larger than a merge may send (MAX_MERGED_BYTES).
 */
function mergedAppends(merged: Merged): { statements: Statement[]; jobs: number } | null {
  if (merged.appends < 2 || merged.from.size !== 1) return null;
  const from = [...merged.from][0]!;
  const lines = JSON.stringify(merged.lines);
  if (Buffer.byteLength(lines) > MAX_MERGED_BYTES) return null;
  const jobs = JSON.stringify([...merged.jobs].map(([id, j]) => [id, j.next, j.line]));
  // The held conditions, one statement for all (of one kind: else each append goes as its own statements).
  const held = merged.held[0];
  if (held && merged.held.some((c) => c.counted !== held.counted)) return null;
  const builds = [...merged.builds];
  const guards = JSON.stringify(builds.map(([id, b]) => [id, b.before]));
  return {
    jobs: merged.jobs.size,
    statements: [
      {
        sql: `UPDATE ${from} SET next_line = j.value ->> 2 FROM json_each(?1) AS j
              WHERE ${from}.id = j.value ->> 0
                AND (SELECT count(*) FROM json_each(?1) AS g JOIN ${from} AS o ON o.id = g.value ->> 0 AND o.next_line = g.value ->> 1) = +?2
                AND (SELECT count(*) FROM json_each(?3) AS b
                     WHERE COALESCE((SELECT printf('%d %d %d %d', last_seq, bytes, cut_lines, IFNULL(head_last_seq, -1)) FROM build_log_stats WHERE build_id = b.value ->> 0), '0 0 0 -1') = b.value ->> 1) = +?4${held ? ` AND (${held.counted("?5")}) = +?6` : ""}`,
        args: [jobs, merged.jobs.size, guards, builds.length, ...(held ? [JSON.stringify(merged.held.map((c) => c.item)), merged.held.length] : [])],
      },
      {
        sql: `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text)
              SELECT l.value ->> 0, l.value ->> 1, l.value ->> 2, l.value ->> 3, l.value ->> 4, l.value ->> 5, l.value ->> 6, l.value ->> 7
              FROM json_each(?) AS l WHERE changes() = ?`,
        args: [lines, merged.jobs.size],
      },
      {
        sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes, head_last_seq, cut_lines, cut_bytes)
              SELECT s.value ->> 0, s.value ->> 1, s.value ->> 2, s.value ->> 3, s.value ->> 4, s.value ->> 5 FROM json_each(?) AS s WHERE changes() = ?
              ON CONFLICT (build_id) DO UPDATE SET last_seq = excluded.last_seq, bytes = excluded.bytes, head_last_seq = excluded.head_last_seq,
                cut_lines = excluded.cut_lines, cut_bytes = excluded.cut_bytes`,
        args: [JSON.stringify(builds.map(([id, { stats: b }]) => [id, b.last_seq, b.bytes, b.head_last_seq, b.cut_lines, b.cut_bytes])), merged.lines.length],
      },
    ],
  };
}

/** The appends in order, in the caller's transaction; each one's result. */
async function appendAll(tx: Executor, appends: Append[]): Promise<AppendResult[]> {
  // 1. Where each job's (or deployment's) lines and each build's log stand.
  const { nextLine, stats } = await readPositions(tx, appends);

  // 2. The lines each append adds, in memory: seqs, bytes and the cap.
  let rows: Array<[Append, number, StoredLine]> = [];
  const insertRows = async (): Promise<void> => {
    const sent = rows;
    rows = [];
    const writes: Promise<unknown>[] = [];
    for (let at = 0; at < sent.length; at += ROWS_PER_INSERT) {
      const chunk = sent.slice(at, at + ROWS_PER_INSERT);
      writes.push(
        tx.execute({
          sql: `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text) VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
          args: chunk.flatMap(([a, line, e]) => [a.buildId, e.seq, a.jobId, line, e.step, e.stream, e.ts, e.text]),
        }),
      );
    }
    await Promise.all(writes);
  };
  const changedJobs = new Set<string>();
  const changedBuilds = new Set<string>();
  const results: AppendResult[] = [];
  for (const a of appends) {
    const next = nextLine.get(key(a));
    if (next === undefined) throw new Error(`${a.from} ${a.jobId} has no row to append log lines to`);
    if (a.firstLine > next) {
      results.push({ kind: "gap", next_line: next });
      continue;
    }
    const fresh = a.lines.slice(next - a.firstLine);
    const build = stats.get(a.buildId)!;
    if (fresh.length === 0) {
      results.push({ kind: "ok", next_line: next, last_seq: build.last_seq, accepted: 0, entries: [] });
      continue;
    }
    const entries: StoredLine[] = [];
    const headCap = Math.floor(a.capBytes / 2);
    let line = next;
    for (const l of fresh) {
      const size = lineBytes(l);
      if (build.head_last_seq === null && build.bytes + size > headCap) build.head_last_seq = build.last_seq;
      if (build.head_last_seq !== null && build.bytes + size > a.capBytes) {
        // Make room in the tail: drop its oldest lines (never the head), the ones just added included.
        if (rows.length > 0) await insertRows();
        // Each line's size in bytes, not its text: 1,000 lines of up to 64 KiB would pass what a
        // libSQL server answers at once (10 MB), and every append to a full log would fail there.
        const oldest = await all(
          tx,
          "SELECT seq, length(CAST(text AS BLOB)) AS bytes FROM build_logs WHERE build_id = +? AND seq > ? ORDER BY seq LIMIT 1000",
          [a.buildId, build.head_last_seq],
        );
        let freed = 0;
        let upTo = build.head_last_seq;
        for (const row of oldest) {
          if (build.bytes - freed + size <= a.capBytes) break;
          freed += Number(row.bytes) + 1;
          upTo = Number(row.seq);
          build.cut_lines++;
        }
        if (upTo > build.head_last_seq)
          await tx.execute({ sql: "DELETE FROM build_logs WHERE build_id = ? AND seq > ? AND seq <= ?", args: [a.buildId, build.head_last_seq, upTo] });
        build.bytes -= freed;
        build.cut_bytes += freed;
        if (build.bytes + size > a.capBytes) {
          // A single line larger than the tail: count it as cut.
          build.cut_lines++;
          build.cut_bytes += size;
          line++;
          continue;
        }
      }
      build.last_seq++;
      const entry: StoredLine = { seq: build.last_seq, step: l.step, stream: l.stream, ts: l.ts ?? a.now, text: l.text };
      rows.push([a, line, entry]);
      entries.push(entry);
      build.bytes += size;
      line++;
    }
    nextLine.set(key(a), line);
    changedJobs.add(key(a));
    changedBuilds.add(a.buildId);
    results.push({ kind: "ok", next_line: line, last_seq: build.last_seq, accepted: fresh.length, entries });
  }

  // 3. Everything written at once: independent statements, and the transaction undoes all if one fails.
  const builds = [...changedBuilds];
  await Promise.all([
    insertRows(),
    builds.length === 0
      ? undefined
      : tx.execute({
          sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes, head_last_seq, cut_lines, cut_bytes) VALUES ${builds.map(() => "(?, ?, ?, ?, ?, ?)").join(", ")}
                ON CONFLICT (build_id) DO UPDATE SET last_seq = excluded.last_seq, bytes = excluded.bytes, head_last_seq = excluded.head_last_seq,
                  cut_lines = excluded.cut_lines, cut_bytes = excluded.cut_bytes`,
          args: builds.flatMap((id) => {
            const b = stats.get(id)!;
            return [id, b.last_seq, b.bytes, b.head_last_seq, b.cut_lines, b.cut_bytes];
          }),
        }),
    ...[...changedJobs].map((owner) => {
      const [from, id] = owner.split(":") as [LineOwner, string];
      return tx.execute({ sql: `UPDATE ${from} SET next_line = ? WHERE id = ?`, args: [nextLine.get(owner)!, id] });
    }),
  ]);
  return results;
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
  const [line, stats] = systemLineStatements(buildId, text, now);
  const seq = Number((await tx.execute(line!)).rows[0]!.seq);
  await tx.execute(stats!);
  return seq;
}

/**
 * A system line as two statements for a batch, written only where `when` holds: the line takes
 * the seq after the build's last (read by the statement itself, so several lines in one batch
 * follow each other), and the build's log stats count it. The first RETURNs its seq.
 */
export function systemLineStatements(buildId: string, text: string, now: number, when: SqlCondition = ALWAYS): Statement[] {
  return [
    {
      sql: `INSERT INTO build_logs (build_id, seq, job_id, line, step, stream, ts, text)
            SELECT ?, COALESCE((SELECT last_seq FROM build_log_stats WHERE build_id = ?), 0) + 1, 'roost', -1, '', 'system', ?, ? WHERE ${when.sql}
            RETURNING seq`,
      args: [buildId, buildId, now, text, ...when.args],
    },
    {
      // WHERE before ON CONFLICT: without it the parser could take the conflict clause for a join's (https://www.sqlite.org/lang_upsert.html).
      sql: `INSERT INTO build_log_stats (build_id, last_seq, bytes) SELECT ?, 1, ? WHERE ${when.sql}
            ON CONFLICT (build_id) DO UPDATE SET last_seq = last_seq + 1, bytes = bytes + excluded.bytes`,
      args: [buildId, Buffer.byteLength(text) + 1, ...when.args],
    },
  ];
}

export async function statsOf(db: Executor, buildId: string): Promise<LogStats> {
  const row = await one(db, "SELECT * FROM build_log_stats WHERE build_id = ?", [buildId]);
  return row ? statsFrom(row) : { last_seq: 0, bytes: 0, head_last_seq: null, cut_lines: 0, cut_bytes: 0 };
}

/** A build_log_stats row (its columns NULL where the build has no log yet) as stats. */
function statsFrom(row: Row): LogStats {
  if (row.last_seq === null || row.last_seq === undefined) return { last_seq: 0, bytes: 0, head_last_seq: null, cut_lines: 0, cut_bytes: 0 };
  return {
    last_seq: Number(row.last_seq),
    bytes: Number(row.bytes),
    head_last_seq: row.head_last_seq === null ? null : Number(row.head_last_seq),
    cut_lines: Number(row.cut_lines),
    cut_bytes: Number(row.cut_bytes),
  };
}

/**
 * One page of lines after `afterSeq`, oldest first: `limit` lines unless the log ends first. A line
 * may be 64 KiB, so a page of them can pass what a libSQL server answers at once (10 MB): then it
 * is read in smaller requests, as many as it takes.
 */
export async function readLogPage(db: Executor, buildId: string, afterSeq: number, limit: number): Promise<LogEntry[]> {
  const rows = await readInPieces(limit, (count, last: Row | undefined) =>
    all(db, "SELECT seq, job_id, line, step, stream, ts, text FROM build_logs WHERE build_id = +? AND seq > ? ORDER BY seq LIMIT +?", [
      buildId,
      last ? Number(last.seq) : afterSeq,
      count,
    ]),
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    job_id: String(r.job_id),
    line: Number(r.line),
    step: String(r.step),
    stream: String(r.stream),
    ts: Number(r.ts),
    text: String(r.text),
  }));
}

/** The sentence readers show where the cap cut lines out. */
export function cutNotice(stats: LogStats): string {
  return `[roost] ${stats.cut_lines} lines (${stats.cut_bytes} bytes) were cut here: the build log passed its cap; the beginning and the end are kept.`;
}
