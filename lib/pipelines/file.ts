// The pipeline file (docs/pipelines.md): a YAML document in the repository (config_path, default
// roost.yaml) that defines one or more pipelines by name. Parsed with the `yaml` package (YAML 1.2)
// and validated with zod; every problem is reported with the line and column it is on, found by
// walking the parsed document to the node a zod issue's path names (a LineCounter turns the node's
// offset into a line). Each pipeline has the fields of a pipeline's execution_config at its top
// level, plus `triggers` and `concurrency`, so anything added to the API's pipeline fields
// (lib/pipelines/config.ts) is accepted in the file too.
import { z } from "zod";
import { LineCounter, isMap, isScalar, isNode, parseDocument, type Document } from "yaml";
import { ConcurrencyInput, ExecutionConfigInput, TriggerConfigInput, type Concurrency, type ExecutionConfig, type TriggerConfig } from "./config.ts";
import { CronExpression, TimeZone } from "./cron.ts";
import { BranchName } from "./wire.ts";
import { readableIssue } from "../http/validation-messages.ts";

/** A pipeline file larger than this is refused before parsing. */
export const MAX_PIPELINE_FILE_BYTES = 256 * 1024;
/** At most this many problems are reported for one file. */
export const MAX_REPORTED_PROBLEMS = 20;

export const FilePipelineName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, "a pipeline name is letters, digits, '_', '.' and '-' (at most 100), starting with a letter or digit");

// Plain variables only: a secret does not belong in a file everyone who can read the repository
// can read (secrets are set through the API, docs/secrets.md).
const FileEnv = z
  .record(
    z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be a shell variable name (letters, digits, _; at most 128)")
      .refine((k) => !k.startsWith("ROOST_"), "ROOST_ variables are set by the runner"),
    z.union([z.string().max(16_384, "must be at most 16384 characters"), z.number(), z.boolean()]).transform(String),
  )
  .default({})
  .describe("plain environment variables (NAME: value); secrets are set through the API, never in the file");

// Scheduled builds of the pipeline, with the API's validation. They take effect when the file is
// pushed to the project's default branch (syncFileSchedules in lib/schedules/schedules.ts); a schedule is known by
// its expression, time zone and branch, so the file may not name the same one twice.
export const FileSchedule = z
  .object({
    cron: CronExpression,
    timezone: TimeZone.default("UTC"),
    branch: BranchName.optional().describe("default: the project's default branch"),
    build_when_unchanged: z.boolean().default(true).describe("false: a slot whose branch head is the commit of the last scheduled build builds nothing"),
  })
  .strict();

const FileSchedules = z
  .array(FileSchedule)
  .max(20, "at most 20 schedules per pipeline")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      const key = JSON.stringify([s.cron.trim(), s.timezone, s.branch ?? null]);
      if (seen.has(key)) ctx.addIssue({ code: "custom", path: [i], message: "repeats an earlier schedule (same cron, timezone and branch)" });
      seen.add(key);
    });
  })
  .default([])
  .describe("scheduled builds (cron in a time zone, of a branch); read from the default branch's file only");

export const FilePipeline = ExecutionConfigInput.extend({
  triggers: TriggerConfigInput.default({ events: ["push", "pull_request"] }).describe(
    "which events and branches start this pipeline; branches default to the project's default branch",
  ),
  concurrency: ConcurrencyInput.default({ cancel_previous: false, max_concurrent: 1 }),
  env: FileEnv,
  schedules: FileSchedules,
}).strict();

export const PipelineFileSchema = z
  .object({
    version: z.literal(1).optional().describe("the file format's version; 1"),
    pipelines: z
      .record(FilePipelineName, FilePipeline)
      .refine((p) => Object.keys(p).length >= 1, "define at least one pipeline")
      .refine((p) => Object.keys(p).length <= 50, "at most 50 pipelines")
      .describe("the pipelines, by name"),
  })
  .strict()
  .describe("Roost pipeline file (roost.yaml)");

export type FilePipelineOutput = z.output<typeof FilePipeline>;

/** The JSON Schema (draft 2020-12) of the file as written, for editors (GET /v1/schemas/pipeline-file.json). */
export function pipelineFileJsonSchema(): Record<string, unknown> {
  return { ...z.toJSONSchema(PipelineFileSchema, { io: "input", unrepresentable: "any" }), title: "Roost pipeline file", $id: "pipeline-file.json" };
}

export interface FileProblem {
  /** 1-based line and column in the file. */
  line: number;
  column: number;
  /** Where in the document, e.g. pipelines.android-release.platforms.0 ("" for the file itself). */
  path: string;
  message: string;
}

/** A valid file's pipelines by name, and the line each one's name is on (for people reading the file). */
export type ParsedPipelineFile = { ok: true; pipelines: Map<string, FilePipelineOutput>; lines: Map<string, number> } | { ok: false; problems: FileProblem[] };

/** Parses and validates a pipeline file's text. */
export function parsePipelineFile(text: string): ParsedPipelineFile {
  if (Buffer.byteLength(text) > MAX_PIPELINE_FILE_BYTES)
    return { ok: false, problems: [{ line: 1, column: 1, path: "", message: `the file is larger than ${MAX_PIPELINE_FILE_BYTES / 1024} KiB` }] };
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true, version: "1.2" });
  if (doc.errors.length) {
    return {
      ok: false,
      problems: doc.errors
        .slice(0, MAX_REPORTED_PROBLEMS)
        .map((e) => ({ line: e.linePos?.[0].line ?? 1, column: e.linePos?.[0].col ?? 1, path: "", message: firstLine(e.message) })),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { ok: false, problems: [{ line: 1, column: 1, path: "", message: firstLine((error as Error).message) }] };
  }
  const result = PipelineFileSchema.safeParse(value ?? {}, { error: readableIssue });
  if (result.success) return { ok: true, pipelines: new Map(Object.entries(result.data.pipelines)), lines: pipelineLines(doc, lineCounter) };
  const problems: FileProblem[] = [];
  for (const issue of result.error.issues) {
    const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
    // An unknown key is reported on the key's own line; other problems on the value's.
    const keys = issue.code === "unrecognized_keys" ? issue.keys : [null];
    for (const key of keys) {
      const at = positionOf(doc, lineCounter, path, key);
      const where = key === null ? path : [...path, key];
      problems.push({ ...at, path: where.join("."), message: key === null ? issue.message : `unknown key "${key}"` });
    }
  }
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  return { ok: false, problems: problems.slice(0, MAX_REPORTED_PROBLEMS) };
}

/** "line 7, column 5: pipelines.pr-check.platforms.0: must be one of android, ios or macos" */
export function describeProblem(p: FileProblem): string {
  return `line ${p.line}, column ${p.column}: ${p.path ? `${p.path}: ` : ""}${p.message}`;
}

/**
 * The line and column of the deepest node on `path` that the document has (a missing key: its
 * parent's). An unknown key points at the key; a map or list value at the key that holds it (a
 * block collection starts on the line after its key).
 */
function positionOf(doc: Document, lineCounter: LineCounter, path: (string | number)[], key: string | null): { line: number; column: number } {
  const keyOf = (map: unknown, name: string | number): number | null => {
    if (!isMap(map)) return null;
    const pair = map.items.find((item) => isScalar(item.key) && String(item.key.value) === String(name));
    return pair && isNode(pair.key) && pair.key.range ? pair.key.range[0] : null;
  };
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    if (!isNode(node) || !node.range) continue;
    let offset: number | null = null;
    if (depth === path.length && key !== null) offset = keyOf(node, key);
    if (offset === null && !isScalar(node) && depth > 0)
      offset = keyOf(depth === 1 ? doc.contents : doc.getIn(path.slice(0, depth - 1), true), path[depth - 1]!);
    const pos = lineCounter.linePos(offset ?? node.range[0]);
    return { line: pos.line, column: pos.col };
  }
  return { line: 1, column: 1 };
}

/** The line of each pipeline's name under `pipelines:`. */
function pipelineLines(doc: Document, lineCounter: LineCounter): Map<string, number> {
  const lines = new Map<string, number>();
  const map = doc.getIn(["pipelines"], true);
  if (!isMap(map)) return lines;
  for (const item of map.items) if (isScalar(item.key) && item.key.range) lines.set(String(item.key.value), lineCounter.linePos(item.key.range[0]).line);
  return lines;
}

function firstLine(message: string): string {
  return (message.split("\n")[0] ?? message).slice(0, 300);
}

/** What a file pipeline means as a pipeline's stored fields (branches default to the project's default branch). */
export function fileDefinition(
  p: FilePipelineOutput,
  projectDefaultBranch: string,
): { concurrency: Concurrency; trigger_config: TriggerConfig; execution_config: ExecutionConfig } {
  const { triggers, concurrency, env, schedules: _schedules, ...execution } = p;
  return {
    concurrency,
    trigger_config: { branches: triggers.branches ?? [projectDefaultBranch], events: triggers.events },
    execution_config: { ...(execution as Omit<ExecutionConfig, "env">), env: Object.entries(env).map(([key, value]) => ({ key, value, secret: false })) },
  };
}
