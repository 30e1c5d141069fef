// What happens to a delivery once its signature or token has been checked: deduplicated,
// matched against the pipelines of the one project that builds the repository, recorded with a
// reason for every decision, and its builds created, all in one write transaction, so a delivery
// is either recorded with its builds or not at all (a retry after a crash then acts normally).
// Only the dedupe key's own conflict makes a delivery a duplicate; any other error while acting
// on it is recorded as a failed delivery, logged, and answered 5xx so the host redelivers it.
import type { Db, Transaction } from "../db/client.ts";
import { all, inTransaction, one } from "../db/client.ts";
import { isDatabaseUnreachable } from "../db/database.ts";
import { newId } from "../auth/secrets.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";
import type { Logger } from "../daemon/log.ts";
import type { TriggerEvent } from "../forges/event.ts";
import type { Repository } from "../integrations/repositories.ts";
import { insertPipeline, listPipelines, snapshotOf, type Pipeline } from "../pipelines/store.ts";
import { buildsForkPullRequests, findProject, findProjectBuildingRepository } from "../projects/store.ts";
import { findIntegration } from "../integrations/store.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import type { ForgeName } from "../forges/registry.ts";
import { DEFAULT_CONFIG_PATH, type ConfigSnapshot } from "../pipelines/config.ts";
import { API_DEFINITION, type DefinitionSource } from "../pipelines/definition.ts";
import { fileDefinition } from "../pipelines/file.ts";
import { configPathsOf, definitionOf, fileLabel, fileSnapshot, invalidFileSentence, readPipelineFile, type PipelineFileRead } from "../pipelines/source.ts";
import { createBuildInTransaction, publishCreated } from "../builds/create.ts";
import type { Build } from "../builds/store.ts";
import { concurrencyKeyOf, decideForPipeline, deliveryLevelReason, type PipelineDecision } from "./triggers.ts";
import { BODY_RETENTION_SECONDS, insertDelivery, recentFailures, type DeliveryResult } from "./deliveries.ts";
import { raiseIncident } from "../daemon/incidents.ts";
import { syncFileSchedules, type FileScheduleFields } from "../schedules/schedules.ts";

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

export async function acceptDelivery(deps: Deps, input: AcceptInput): Promise<AcceptResult> {
  const now = deps.clock.now();
  const id = newId();
  const { event } = input;
  const base = {
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
  const created: { build: Build; canceled: Build[] }[] = [];
  try {
    // The pipeline files are read before the write transaction (a host call must not hold it).
    const files = await readPipelineFiles(deps, input);
    const outcome = await inTransaction(deps.db, async (tx) => {
      await takeDedupeKeys(tx, input, id, now);
      const route = await routeToProject(tx, input);
      const acting: Acting = { tx, input, files, now, deliveryId: id, created, decisions: [], fileReasons: [], scheduleNotes: [] };
      let reason = route.reason;
      if (reason === null && route.projectId) {
        const candidates = await pipelineCandidates(acting, route.projectId, route.pipelines);
        await buildWhatTriggers(acting, candidates);
        if (candidates.length === 0 && acting.decisions.length === 0) reason = "the project has no pipeline";
      }
      const builtAny = acting.decisions.some((d) => d.build);
      const result: DeliveryResult = builtAny ? "built" : "ignored";
      const summary = reason ?? summarize(acting);
      await insertDelivery(tx, {
        ...base,
        result,
        reason: summary,
        repository_id: input.repository?.id ?? null,
        project_id: route.projectId,
        decisions: acting.decisions,
        duplicate_of: null,
        body: input.body,
      });
      return { result, reason: summary };
    });
    for (const c of created) publishCreated(deps, c);
    return { deliveryId: id, duplicate: false, result: outcome.result, reason: outcome.reason, builds: created.map((c) => c.build) };
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

/** What acting on one delivery gathers inside its transaction: the decisions, and the notes its summary names. */
interface Acting {
  tx: Transaction;
  input: AcceptInput;
  files: PipelineFiles;
  now: number;
  deliveryId: string;
  created: { build: Build; canceled: Build[] }[];
  decisions: PipelineDecision[];
  fileReasons: string[];
  scheduleNotes: string[];
}

type Candidate = { pipeline: Pipeline; snapshot: ConfigSnapshot; source: DefinitionSource };

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
  const keys = input.contentKey ? [...input.dedupeKeys, input.contentKey] : input.dedupeKeys;
  if (!keys.length) return;
  const seen = await all(tx, `SELECT delivery_id FROM webhook_dedupe_keys WHERE key IN (${keys.map(() => "?").join(", ")}) LIMIT 1`, keys);
  if (seen[0]) throw new Duplicate(String(seen[0].delivery_id));
  // Another process may insert the same key between our check and this insert: the key's
  // own conflict, and only that, makes this delivery a duplicate of the one that holds it.
  for (const key of new Set(keys)) {
    const taken = await tx.execute({
      sql: "INSERT INTO webhook_dedupe_keys (key, delivery_id, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
      args: [key, id, now],
    });
    if (taken.rowsAffected === 0)
      throw new Duplicate(String((await one(tx, "SELECT delivery_id FROM webhook_dedupe_keys WHERE key = ?", [key]))?.delivery_id ?? "a concurrent delivery"));
  }
}

/** The project that builds the delivery's repository, with its pipelines; or why the delivery builds nothing. */
async function routeToProject(tx: Transaction, input: AcceptInput): Promise<{ reason: string | null; projectId: string | null; pipelines: Pipeline[] }> {
  const { event } = input;
  let reason = deliveryLevelReason(event);
  // A repository is built by exactly one project (schema.sql migration 7), so there is no choice to make here.
  const projectId = input.repository ? await findProjectBuildingRepository(tx, input.repository.id) : null;
  const pipelines = projectId ? await listPipelines(tx, projectId) : [];
  if (reason === null) {
    if (!input.repository) reason = input.unroutedReason ?? `no catalogue repository has ${input.forge} id ${event.repository.externalId}`;
    else if (!projectId) reason = `no project builds ${event.repository.fullName ?? event.repository.externalId}`;
    else if (event.fromFork === true && !buildsForkPullRequests(await findProject(tx, projectId))) {
      // As the hosts' own CI does by default: code from a fork does not run unless the project says so.
      reason = "pull request from a fork: this project does not build them (project setting build_fork_pull_requests)";
    }
  }
  return { reason, projectId, pipelines };
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

/**
 * The file's schedules take effect from the default branch only (docs/pipelines.md "Schedules"):
 * a push there with a valid file (or none) makes the file schedules match it.
 */
async function syncSchedules(acting: Acting, projectId: string, pipeline: Pipeline, path: string, wanted: FileScheduleFields[], label: string) {
  const { event } = acting.input;
  const { defaultBranch } = acting.files;
  if (event.kind !== "push" || event.branch === null || event.branch !== defaultBranch) return;
  const c = await syncFileSchedules(acting.tx, { projectId, pipelineId: pipeline.id, configPath: path, defaultBranch }, wanted, acting.now);
  const parts = [c.added && `${c.added} added`, c.changed && `${c.changed} changed`, c.removed && `${c.removed} removed`].filter(Boolean);
  if (parts.length) acting.scheduleNotes.push(`schedules of ${pipeline.name} from ${label}: ${parts.join(", ")}`);
}

/** Each candidate's triggers decide; those that match get their build, in the delivery's transaction. */
async function buildWhatTriggers(acting: Acting, candidates: Candidate[]): Promise<void> {
  const { tx, input, now } = acting;
  const { event } = input;
  for (const { pipeline, snapshot, source } of candidates) {
    const decision = decideForPipeline(event, pipeline);
    if (source.source === "file") decision.reason = `${decision.reason} (${fileLabel(source)})`;
    if (decision.build) {
      const made = await createBuildInTransaction(tx, now, {
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
      });
      acting.created.push(made);
      decision.build_id = made.build.id;
      decision.build_number = made.build.build_number;
      decision.reason = `${decision.reason}: build #${made.build.build_number}`;
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

async function readPipelineFiles(deps: Deps, input: AcceptInput): Promise<PipelineFiles> {
  const out = Object.assign(new Map<string, PipelineFileRead>(), { defaultBranch: "main" });
  const { event, repository } = input;
  if (deliveryLevelReason(event) !== null || !repository || !event.commitSha) return out;
  const projectId = await findProjectBuildingRepository(deps.db, repository.id);
  const project = projectId ? await findProject(deps.db, projectId) : null;
  const integration = await findIntegration(deps.db, repository.integration_id);
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
  for (const path of configPathsOf(await listPipelines(deps.db, project.id))) out.set(path, await readPipelineFile(deps, target, path));
  return out;
}
