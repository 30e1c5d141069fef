// What happens to a delivery once its signature or token has been checked: deduplicated,
// matched against the pipelines of the one project that builds the repository, recorded with a
// reason for every decision, and its builds created, all in one write, so a delivery is either
// recorded with its builds or not at all (a retry after a crash then acts normally).
//
// On a remote libSQL server every statement is a round trip, and those of a write transaction hold
// the server's write lock, which every daemon queues for (docs/operations.md "Several hosts"). So
// what a delivery acts on is read first, outside any transaction (its dedupe keys, project,
// pipelines, pipeline files), its decisions are made from that, and everything it writes goes in
// one write batch: one request, the lock held only while it runs there. Each write of the batch is
// guarded by what was read (the keys still free, the project and pipelines as read), so the batch
// writes nothing if the state moved meanwhile, and the delivery is read and decided again. What the
// batch cannot say (a pipeline the file names for the first time, file schedules to change) takes
// the write transaction instead, as every delivery once did.
// Only the dedupe key's own conflict makes a delivery a duplicate; any other error while acting
// on it is recorded as a failed delivery, logged, and answered 5xx so the host redelivers it.
import type { Db, Executor, Transaction } from "../db/client.ts";
import { all, inTransaction, one } from "../db/client.ts";
import { isDatabaseUnreachable, isRead, type InValue } from "../db/database.ts";
import { newId } from "../auth/secrets.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Logger } from "../daemon/log.ts";
import type { TriggerEvent } from "../forges/event.ts";
import type { Repository } from "../integrations/repositories.ts";
import { insertPipeline, listPipelinesOfRepository, pipelinesState, snapshotOf, type Pipeline } from "../pipelines/store.ts";
import { buildsForkPullRequests, buildsRepositoryAsRead, findProjectBuildingRepository, findProjectOfRepository, type Project } from "../projects/store.ts";
import { findIntegration, type Integration } from "../integrations/store.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import type { ForgeName } from "../forges/registry.ts";
import { DEFAULT_CONFIG_PATH, type ConfigSnapshot } from "../pipelines/config.ts";
import { API_DEFINITION, type DefinitionSource } from "../pipelines/definition.ts";
import { fileDefinition } from "../pipelines/file.ts";
import { configPathsOf, definitionOf, fileLabel, fileSnapshot, invalidFileSentence, readPipelineFile, type PipelineFileRead } from "../pipelines/source.ts";
import {
  createBuildInTransaction,
  createBuildsStatements,
  plannedBuildNumber,
  publishCreated,
  type CreateBuildInput,
  type PlannedBuild,
  type SqlPart,
} from "../builds/create.ts";
import type { Build } from "../builds/store.ts";
import { concurrencyKeyOf, decideForPipeline, deliveryLevelReason, type PipelineDecision } from "./triggers.ts";
import { BODY_RETENTION_SECONDS, insertDelivery, insertDeliveryStatement, recentFailures, type DeliveryResult, type NewDelivery } from "./deliveries.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { fileSchedulesState, syncFileSchedules, type FileScheduleFields } from "../schedules/schedules.ts";

export interface Deps extends ForgeDeps {
  db: Db;
  clock: Clock;
  events: EventBus;
  log: Logger;
}

export interface AcceptInput {
  forge: ForgeName;
  /** X-GitHub-Delivery / X-Gitlab-Event-UUID, for the log. */
  deliveryId: string;
  /** The host's delivery identities: one already acted on (within the 30 days keys are kept) makes this a duplicate. */
  dedupeKeys: string[];
  /**
   * A digest of the body, only where the host guarantees that distinct events have distinct
   * bodies (GitHub); a duplicate within CONTENT_KEY_WINDOW_SECONDS. Never for GitLab, which sends
   * identical bytes for distinct events.
   */
  contentKey?: string | null;
  event: TriggerEvent;
  /** The one catalogue entry the verified delivery is for, or null with the reason nothing matched. */
  repository: Repository | null;
  /**
   * The repository's integration as the verification read it (one whose secret verified the body),
   * when it did: the write batch's reads then need not read it again.
   */
  integration?: Integration;
  unroutedReason?: string;
  body: string;
}

/** How long an identical GitHub body counts as a replay: as long as Roost keeps bodies. */
export const CONTENT_KEY_WINDOW_SECONDS = BODY_RETENTION_SECONDS;

export interface AcceptResult {
  deliveryId: string;
  duplicate: boolean;
  result: DeliveryResult;
  reason: string;
  builds: Build[];
}

class Duplicate extends Error {
  constructor(readonly of: string) {
    super("duplicate");
  }
}

/** The delivery's record before what it did is known. */
type Received = Omit<NewDelivery, "result" | "reason" | "repository_id" | "project_id" | "decisions" | "duplicate_of" | "body">;

/** What acting on a delivery did: its result, its one-line reason, and the builds it created. */
interface Outcome {
  result: DeliveryResult;
  reason: string;
  created: { build: Build; canceled: Build[] }[];
}

export async function acceptDelivery(deps: Deps, input: AcceptInput): Promise<AcceptResult> {
  const now = deps.clock.now();
  const id = newId();
  const { event } = input;
  const base: Received = {
    id,
    host: input.forge,
    delivery_id: input.deliveryId,
    event: event.event,
    action: event.action,
    verified: true,
    repository_external_id: event.repository.externalId,
    repository_full_name: event.repository.fullName,
    commit_sha: event.commitSha,
    received_at: now,
  };
  try {
    const tried = await acceptInOneBatch(deps, input, base);
    const outcome = "created" in tried ? tried : await acceptInTransaction(deps, input, base, tried.files);
    for (const c of outcome.created) publishCreated(deps, c);
    return { deliveryId: id, duplicate: false, result: outcome.result, reason: outcome.reason, builds: outcome.created.map((c) => c.build) };
  } catch (error) {
    // The database server down: nothing can be recorded, and the receiver's 503 makes the host redeliver.
    if (isDatabaseUnreachable(error)) throw error;
    if (!(error instanceof Duplicate)) return recordFailed(deps, { ...base, repository: input.repository, body: input.body }, error);
    const of = error.of;
    const reason = `duplicate of delivery ${of}`;
    await insertDelivery(deps.db, {
      ...base,
      result: "duplicate",
      reason,
      repository_id: input.repository?.id ?? null,
      project_id: null,
      decisions: [],
      duplicate_of: of,
      body: null,
    });
    return { deliveryId: id, duplicate: true, result: "duplicate", reason, builds: [] };
  }
}

/** How often a delivery is read and decided again after its batch found the state moved, before it takes the transaction. */
const BATCH_ATTEMPTS = 3;

/**
 * The delivery as one write batch, planned from what was read before it (see the top of this
 * file); or, when it needs the transaction (acceptInTransaction), the pipeline files it read.
 * Throws Duplicate when one of its dedupe keys is taken.
 */
async function acceptInOneBatch(deps: Deps, input: AcceptInput, base: Received): Promise<Outcome | { files: PipelineFiles }> {
  const now = base.received_at;
  const keys = dedupeKeysOf(input);
  const { repository } = input;
  let files: PipelineFiles | undefined;
  for (let attempt = 0; attempt < BATCH_ATTEMPTS; attempt++) {
    // Read side by side: on a remote server, reads started together go in one request.
    // The pipelines' state is read before the pipelines, so a change between the two shows under the lock.
    const state = repository ? pipelinesState(repository.id) : null;
    const [held, pipelines, route] = await Promise.all([
      heldDedupeKey(deps.db, input, keys, now),
      state ? one(deps.db, `SELECT ${state.sql} AS state`, state.args) : null,
      readRoute(deps.db, input, input.integration?.id === repository?.integration_id ? input.integration : undefined),
    ]);
    if (held !== null) throw new Duplicate(held);
    files = await readPipelineFiles(deps, input, route);
    const guards: SqlPart[] = [];
    const expired = [input.contentKey ?? null, now - CONTENT_KEY_WINDOW_SECONDS];
    if (keys.length)
      guards.push({
        sql: `NOT EXISTS (SELECT 1 FROM webhook_dedupe_keys WHERE key IN (${marks(keys)}) AND NOT (key IS ? AND created_at <= ?))`,
        args: [...keys, ...expired],
      });
    if (repository) guards.push(buildsRepositoryAsRead(repository.id, route.project));
    if (state) guards.push({ sql: `${state.sql} IS ?`, args: [...state.args, pipelines?.state ?? null] });
    if (route.project) {
      // A push to the default branch keeps the file schedules in step with the file: planned from them as read now.
      if (touchesFileSchedules(input.event, files)) {
        const state = fileSchedulesState(route.project.id);
        const seen = (await one(deps.db, `SELECT ${state.sql} AS state`, state.args))?.state ?? null;
        guards.push({ sql: `${state.sql} IS ?`, args: [...state.args, seen] });
      }
    }
    const planned: PlannedBuild[] = [];
    const acting: Acting = {
      tx: readsOnly(deps.db),
      input,
      files,
      now,
      deliveryId: base.id,
      created: [],
      planned,
      decisions: [],
      fileReasons: [],
      scheduleNotes: [],
    };
    let decided: { result: DeliveryResult; reason: string };
    try {
      decided = await decide(acting, route);
    } catch (error) {
      if (error instanceof NeedsTransaction) return { files };
      throw error;
    }
    const numbers = new Map<number, SqlPart>();
    planned.forEach((b, k) =>
      numbers.set(
        acting.decisions.findIndex((d) => d.build_id === b.id),
        plannedBuildNumber(b.pipeline.project_id, k),
      ),
    );
    const record = {
      ...base,
      ...decided,
      repository_id: repository?.id ?? null,
      project_id: route.project?.id ?? null,
      decisions: acting.decisions,
      duplicate_of: null,
      body: input.body,
    };
    // `+?`: bound bare, the dedupe keys' INSERT ... SELECT FROM json_each(?) under this guard was
    // compiled again on every call (17 against 3 µs of CPU alone; bound-parameters.test.ts).
    const written: SqlPart = { sql: "EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = +?)", args: [base.id] };
    const statements = [
      insertDeliveryStatement(record, every(guards), numbers),
      // A content digest older than its window no longer counts (the guard above passes over it):
      // this delivery takes it over, in the insert of its keys rather than a delete of its own.
      ...(keys.length
        ? [
            {
              sql: `INSERT INTO webhook_dedupe_keys (key, delivery_id, created_at) SELECT value, ?, ? FROM json_each(?) WHERE ${written.sql}
                    ON CONFLICT (key) DO UPDATE SET delivery_id = excluded.delivery_id, created_at = excluded.created_at
                    WHERE webhook_dedupe_keys.key IS ? AND webhook_dedupe_keys.created_at <= ?`,
              args: [base.id, now, JSON.stringify(keys), ...written.args, ...expired],
            },
          ]
        : []),
    ];
    const builds = route.project ? createBuildsStatements(now, route.project.id, planned, written) : null;
    const results = await deps.db.batch([...statements, ...(builds?.statements ?? [])]);
    // Not written: a key was taken or the project or its pipelines moved since they were read; read again.
    if (results[0]!.rowsAffected === 0) continue;
    return { ...decided, created: builds?.created(results.slice(statements.length)) ?? [] };
  }
  return { files: files! };
}

/** The delivery in one write transaction, everything read and decided inside it: what the batch cannot say. */
async function acceptInTransaction(deps: Deps, input: AcceptInput, base: Received, files: PipelineFiles): Promise<Outcome> {
  const created: { build: Build; canceled: Build[] }[] = [];
  // The pipeline files were read before the write transaction (a host call must not hold it).
  const decided = await inTransaction(deps.db, async (tx) => {
    await takeDedupeKeys(tx, input, base.id, base.received_at);
    const route = await readRoute(tx, input);
    const acting: Acting = {
      tx,
      input,
      files,
      now: base.received_at,
      deliveryId: base.id,
      created,
      planned: null,
      decisions: [],
      fileReasons: [],
      scheduleNotes: [],
    };
    const decided = await decide(acting, route);
    await insertDelivery(tx, {
      ...base,
      ...decided,
      repository_id: input.repository?.id ?? null,
      project_id: route.project?.id ?? null,
      decisions: acting.decisions,
      duplicate_of: null,
      body: input.body,
    });
    return decided;
  });
  return { ...decided, created };
}

/** The project that builds the delivery's repository (by the repository's one project, schema.sql migration 7), its pipelines, and the repository's integration. */
interface Route {
  project: Project | null;
  pipelines: Pipeline[];
  integration: Integration | null;
}

/**
 * Read side by side: on a remote server, in one request. `verified`: the repository's integration
 * as the verification read it, for reads before a write batch (inside a transaction, everything is
 * read again).
 */
async function readRoute(db: Executor, input: AcceptInput, verified?: Integration): Promise<Route> {
  const { repository } = input;
  if (!repository) return { project: null, pipelines: [], integration: null };
  const [project, pipelines, integration] = await Promise.all([
    findProjectOfRepository(db, repository.id),
    listPipelinesOfRepository(db, repository.id),
    verified ?? findIntegration(db, repository.integration_id),
  ]);
  return { project, pipelines: project ? pipelines.filter((p) => p.project_id === project.id) : [], integration };
}

/**
 * Decides for the delivery: why it builds nothing, or each pipeline's decision with its build
 * (created in the transaction, or planned for the batch).
 */
async function decide(acting: Acting, route: Route): Promise<{ result: DeliveryResult; reason: string }> {
  let reason = routeReason(acting.input, route);
  if (reason === null && route.project) {
    const candidates = await pipelineCandidates(acting, route.project.id, route.pipelines);
    await buildWhatTriggers(acting, candidates);
    if (candidates.length === 0 && acting.decisions.length === 0) reason = "the project has no pipeline";
  }
  const builtAny = acting.decisions.some((d) => d.build);
  return { result: builtAny ? "built" : "ignored", reason: reason ?? summarize(acting) };
}

/** Why the delivery builds nothing before any pipeline is asked; null when its project's pipelines decide. */
function routeReason(input: AcceptInput, route: Route): string | null {
  const { event } = input;
  const reason = deliveryLevelReason(event);
  if (reason !== null) return reason;
  if (!input.repository) return input.unroutedReason ?? `no catalogue repository has ${input.forge} id ${event.repository.externalId}`;
  if (!route.project) return `no project builds ${event.repository.fullName ?? event.repository.externalId}`;
  // As the hosts' own CI does by default: code from a fork does not run unless the project says so.
  if (event.fromFork === true && !buildsForkPullRequests(route.project))
    return "pull request from a fork: this project does not build them (project setting build_fork_pull_requests)";
  return null;
}

/** What acting on one delivery gathers: the decisions, and the notes its summary names. */
interface Acting {
  /** The transaction; or, planning a batch, reads outside any transaction (a write there throws NeedsTransaction). */
  tx: Executor;
  input: AcceptInput;
  files: PipelineFiles;
  now: number;
  deliveryId: string;
  created: { build: Build; canceled: Build[] }[];
  /** Planning a batch: the builds to create in it. Null in the transaction, which creates them at once. */
  planned: PlannedBuild[] | null;
  decisions: PipelineDecision[];
  fileReasons: string[];
  scheduleNotes: string[];
}

/** Planning a batch, the delivery needed a write the batch cannot say: it takes the transaction. */
class NeedsTransaction extends Error {}

/** The database for planning a batch: reads outside any transaction; any write throws NeedsTransaction. */
function readsOnly(db: Db): Executor {
  return {
    execute(stmt, args) {
      if (!isRead(typeof stmt === "string" ? stmt : stmt.sql)) throw new NeedsTransaction("a write the batch cannot say");
      return db.execute(stmt, args);
    },
  };
}

type Candidate = { pipeline: Pipeline; snapshot: ConfigSnapshot; source: DefinitionSource };

/** The delivery's dedupe keys, each once: the host's identities and, where it has one, its content digest. */
function dedupeKeysOf(input: AcceptInput): string[] {
  return [...new Set(input.contentKey ? [...input.dedupeKeys, input.contentKey] : input.dedupeKeys)];
}

function marks(values: unknown[]): string {
  return values.map(() => "?").join(", ");
}

/** All of the conditions (an SQL condition that always holds for none). */
function every(conditions: SqlPart[]): SqlPart {
  if (!conditions.length) return { sql: "1", args: [] };
  return { sql: conditions.map((c) => `(${c.sql})`).join(" AND "), args: conditions.flatMap((c) => c.args) as InValue[] };
}

/** The delivery that holds one of these keys, if any; a content digest older than its window no longer counts. */
async function heldDedupeKey(db: Executor, input: AcceptInput, keys: string[], now: number): Promise<string | null> {
  if (!keys.length) return null;
  const row = await one(db, `SELECT delivery_id FROM webhook_dedupe_keys WHERE key IN (${marks(keys)}) AND NOT (key IS ? AND created_at <= ?) LIMIT 1`, [
    ...keys,
    input.contentKey ?? null,
    now - CONTENT_KEY_WINDOW_SECONDS,
  ]);
  return row ? String(row.delivery_id) : null;
}

/**
 * Takes the delivery's dedupe keys, or throws Duplicate naming the delivery that holds one. A
 * content digest older than its window no longer counts: it is dropped so this delivery can take it.
 */
async function takeDedupeKeys(tx: Transaction, input: AcceptInput, id: string, now: number): Promise<void> {
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

/**
 * The pipelines that may build, each with the definition it builds with. Each pipeline file
 * decides for the pipelines it names; without the file, the pipelines configured through the API
 * that read it decide (docs/pipelines.md). The pipelines left out get their decision and reason here.
 */
async function pipelineCandidates(acting: Acting, projectId: string, pipelines: Pipeline[]): Promise<Candidate[]> {
  const { tx, files, now, decisions } = acting;
  const candidates: Candidate[] = [];
  for (const path of configPathsOf(pipelines)) {
    const read = files.get(path);
    const reading = pipelines.filter((p) => p.config_path === path);
    if (!read || read.status === "missing") {
      for (const pipeline of reading) {
        candidates.push({ pipeline, snapshot: snapshotOf(pipeline), source: API_DEFINITION });
        if (read) await syncSchedules(acting, projectId, pipeline, path, [], fileLabel(read));
      }
    } else if (read.status === "valid") {
      for (const [name, definition] of read.pipelines) {
        let pipeline = pipelines.find((p) => p.name === name);
        if (pipeline && pipeline.config_path !== path) {
          const reason = `${fileLabel(read)} defines ${name}, but the pipeline reads ${pipeline.config_path}`;
          decisions.push({ pipeline_id: pipeline.id, pipeline_name: name, build: false, reason });
          continue;
        }
        // A pipeline the file names for the first time is created, so its builds, badge and history have a home.
        pipeline ??= await insertPipeline(
          tx,
          projectId,
          { name, enabled: true, config_path: path, config_path_explicit: path !== DEFAULT_CONFIG_PATH, ...fileDefinition(definition, files.defaultBranch) },
          now,
        );
        await syncSchedules(acting, projectId, pipeline, path, definition.schedules, fileLabel(read));
        const snapshot = fileSnapshot(name, path, definition, files.defaultBranch);
        candidates.push({
          pipeline: { ...pipeline, concurrency: snapshot.concurrency, trigger_config: snapshot.trigger_config },
          snapshot,
          source: definitionOf(read),
        });
      }
      for (const pipeline of reading) {
        if (read.pipelines.has(pipeline.name)) continue;
        await syncSchedules(acting, projectId, pipeline, path, [], fileLabel(read));
        const reason = `not defined in ${fileLabel(read)} (it defines ${[...read.pipelines.keys()].join(", ")})`;
        decisions.push({ pipeline_id: pipeline.id, pipeline_name: pipeline.name, build: false, reason });
      }
    } else {
      // An invalid or unreadable file builds nothing from it, and says why: never a silent fallback.
      const sentence = read.status === "invalid" ? invalidFileSentence(read) : `could not read ${fileLabel(read)}: ${read.message}`;
      acting.fileReasons.push(sentence);
      for (const pipeline of reading)
        decisions.push({ pipeline_id: pipeline.id, pipeline_name: pipeline.name, build: false, reason: sentence, file_problem: true });
    }
  }
  return candidates;
}

/** Whether the delivery makes its project's file schedules match the file: a push to the default branch, with the files read. */
function touchesFileSchedules(event: TriggerEvent, files: PipelineFiles): boolean {
  return event.kind === "push" && event.branch !== null && event.branch === files.defaultBranch && files.size > 0;
}

/**
 * The file's schedules take effect from the default branch only (docs/pipelines.md "Schedules"):
 * a push there with a valid file (or none) makes the file schedules match it.
 */
async function syncSchedules(acting: Acting, projectId: string, pipeline: Pipeline, path: string, wanted: FileScheduleFields[], label: string) {
  const { defaultBranch } = acting.files;
  if (!touchesFileSchedules(acting.input.event, acting.files)) return;
  const c = await syncFileSchedules(acting.tx, { projectId, pipelineId: pipeline.id, configPath: path, defaultBranch }, wanted, acting.now);
  const parts = [c.added && `${c.added} added`, c.changed && `${c.changed} changed`, c.removed && `${c.removed} removed`].filter(Boolean);
  if (parts.length) acting.scheduleNotes.push(`schedules of ${pipeline.name} from ${label}: ${parts.join(", ")}`);
}

/**
 * Each candidate's triggers decide; those that match get their build: in the delivery's
 * transaction, or planned for its batch (numbered there: the decision's build_number and reason
 * are completed by the batch's statement).
 */
async function buildWhatTriggers(acting: Acting, candidates: Candidate[]): Promise<void> {
  const { tx, input, now } = acting;
  const { event } = input;
  for (const { pipeline, snapshot, source } of candidates) {
    const decision = decideForPipeline(event, pipeline);
    if (source.source === "file") decision.reason = `${decision.reason} (${fileLabel(source)})`;
    if (decision.build) {
      const build: CreateBuildInput = {
        configSnapshot: snapshot,
        definitionSource: source,
        pipelineId: pipeline.id,
        branch: event.branch ?? event.tag ?? "",
        commitSha: event.commitSha!,
        changelog: event.changelog,
        triggerType: "webhook",
        triggerEvent: event.kind!,
        triggerRef: event.ref,
        triggerActor: event.actor,
        concurrencyKey: concurrencyKeyOf(event),
        context: {
          host: input.forge,
          delivery_id: input.deliveryId,
          roost_delivery_id: acting.deliveryId,
          pull_request: event.prNumber,
          tag: event.tag,
          fork: event.fromFork === true,
        },
      };
      if (acting.planned) {
        const planned = { id: newId(), pipeline, input: build };
        acting.planned.push(planned);
        decision.build_id = planned.id;
        decision.build_number = 0;
      } else {
        const made = await createBuildInTransaction(tx as Transaction, now, build);
        acting.created.push(made);
        decision.build_id = made.build.id;
        decision.build_number = made.build.build_number;
        decision.reason = `${decision.reason}: build #${made.build.build_number}`;
      }
    }
    acting.decisions.push(decision);
  }
}

/** The delivery's one-line reason when it reached its pipelines: what it started, and what the files and schedules said. */
function summarize(acting: Acting): string {
  const built = acting.decisions.filter((d) => d.build).length;
  const head = built ? `started ${built} build(s)` : acting.fileReasons.length ? null : "no pipeline matched";
  return [head, ...acting.fileReasons, ...acting.scheduleNotes].filter((r) => r !== null).join("; ");
}

/** Failed deliveries for one repository within an hour that raise an incident. */
export const FAILURES_BEFORE_INCIDENT = 3;
export const DELIVERY_FAILED = "webhook_delivery_failed";

/**
 * A verified delivery Roost could not act on (its transaction failed on something other than its
 * own dedupe key, e.g. a build number the project's counter hands out twice): nothing of it was
 * kept and no dedupe key was taken, so the host's redelivery is acted on normally. Recorded as
 * `failed` with the error, logged, and repeated failures for a repository within an hour raise an
 * incident. Recording is best effort: the receiver answers 5xx whatever happens here.
 */
async function recordFailed(
  deps: Deps,
  d: {
    id: string;
    host: ForgeName;
    delivery_id: string;
    event: string;
    action: string;
    repository_external_id: string | null;
    repository_full_name: string | null;
    commit_sha: string | null;
    received_at: number;
    repository: Repository | null;
    body: string;
  },
  error: unknown,
): Promise<AcceptResult> {
  const message = error instanceof Error ? error.message : String(error);
  const reason = `Roost could not act on this delivery, nothing was built and a redelivery will be acted on: ${message.slice(0, 500)}`;
  const repositoryId = d.repository?.id ?? null;
  deps.log.error("webhook delivery failed", { host: d.host, delivery_id: d.delivery_id, roost_delivery_id: d.id, repository_id: repositoryId, error });
  try {
    const projectId = repositoryId ? await findProjectBuildingRepository(deps.db, repositoryId) : null;
    const { repository: _, ...record } = d;
    await insertDelivery(deps.db, {
      ...record,
      verified: true,
      result: "failed",
      reason,
      repository_id: repositoryId,
      project_id: projectId,
      decisions: [],
      duplicate_of: null,
    });
    if ((await recentFailures(deps.db, { repositoryId, forge: d.host }, d.received_at - 3600)) >= FAILURES_BEFORE_INCIDENT) {
      await raiseIncident(deps.db, d.received_at, {
        severity: "critical",
        reason: DELIVERY_FAILED,
        message: `${d.host} deliveries${d.repository ? ` for ${d.repository.full_name}` : ""} keep failing, so their pushes build nothing: ${message.slice(0, 300)}`,
        repair_action:
          "Read the failed deliveries (GET /v1/webhook-deliveries?result=failed) and the daemon's log for the error, fix its cause, then redeliver them from the host.",
        resource_kind: d.repository ? "repository" : "webhook_host",
        resource_id: d.repository?.id ?? d.host,
        resource_name: d.repository?.full_name ?? d.host,
      });
    }
  } catch (recording) {
    deps.log.error("webhook delivery failure could not be recorded", { host: d.host, delivery_id: d.delivery_id, error: recording });
  }
  return { deliveryId: d.id, duplicate: false, result: "failed", reason, builds: [] };
}

/**
 * The pipeline files of the project that builds the delivery's repository, read at the event's
 * commit (a pull request from a fork: at its target branch's head). Empty when nothing will be
 * evaluated, or the repository's integration is gone (then the API's pipelines decide).
 */
/** The pipeline files a delivery's project reads, at the delivery's commit, by path. */
type PipelineFiles = Map<string, PipelineFileRead> & { defaultBranch: string };

async function readPipelineFiles(deps: Deps, input: AcceptInput, route: Route): Promise<PipelineFiles> {
  const out = Object.assign(new Map<string, PipelineFileRead>(), { defaultBranch: "main" });
  const { event, repository } = input;
  const { project, integration } = route;
  if (deliveryLevelReason(event) !== null || !repository || !event.commitSha) return out;
  if (!project || !integration) return out;
  out.defaultBranch = project.default_branch;
  const fork = event.kind === "pull_request" && event.fromFork === true && event.branch ? event.branch : null;
  const target = {
    integration,
    repository,
    commitSha: event.commitSha,
    ref: event.kind === "pull_request" ? null : event.ref,
    forkTargetBranch: fork,
    ...(event.kind === "push" && event.pushed ? { pushed: event.pushed } : {}),
  };
  for (const path of configPathsOf(route.pipelines)) out.set(path, await readPipelineFile(deps, target, path));
  return out;
}
