// What a delivery builds once it reached its project: the pipeline files read at its commit, the
// pipelines they (or the API) define, each pipeline's triggers deciding, and the builds of those
// that match, created in the delivery's transaction or planned for its write batch
// (lib/webhooks/accept.ts). A push to the default branch also keeps the file schedules in step
// with the file.
import type { Executor, Transaction } from "../db/client.ts";
import { timeOrderedId } from "./ordered-id.ts";
import type { TriggerEvent } from "../forges/event.ts";
import type { ForgeDeps } from "../forges/forge.ts";
import { insertPipeline, snapshotOf, type Pipeline } from "../pipelines/store.ts";
import { DEFAULT_CONFIG_PATH, type ConfigSnapshot } from "../pipelines/config.ts";
import { API_DEFINITION, type DefinitionSource } from "../pipelines/definition.ts";
import { fileDefinition } from "../pipelines/file.ts";
import { configPathsOf, definitionOf, fileLabel, fileSnapshot, invalidFileSentence, readPipelineFile, type PipelineFileRead } from "../pipelines/source.ts";
import { createBuildInTransaction, type CreateBuildInput, type CreatedBuild, type PlannedBuild } from "../builds/create.ts";
import type { Build } from "../builds/store.ts";
import { syncFileSchedules, type FileScheduleFields } from "../schedules/schedules.ts";
import { concurrencyKeyOf, decideForPipeline, deliveryLevelReason, type PipelineDecision } from "./triggers.ts";
import type { AcceptInput, Route } from "./accept.ts";

/** A build the delivery created, with the builds it canceled (superseded in its concurrency group). */
export type Created = { build: CreatedBuild; canceled: Build[] };

/** What acting on one delivery gathers: the decisions, and the notes its summary names. */
export interface Acting {
  /** The transaction; or, planning a batch, reads outside any transaction (a write there throws NeedsTransaction). */
  tx: Executor;
  input: AcceptInput;
  files: PipelineFiles;
  now: number;
  deliveryId: string;
  created: Created[];
  /** Planning a batch: the builds to create in it. Null in the transaction, which creates them at once. */
  planned: PlannedBuild[] | null;
  decisions: PipelineDecision[];
  fileReasons: string[];
  scheduleNotes: string[];
}

/** The pipeline files a delivery's project reads, at the delivery's commit, by path. */
export type PipelineFiles = Map<string, PipelineFileRead> & { defaultBranch: string };

/**
 * The pipeline files of the project that builds the delivery's repository, read at the event's
 * commit (a pull request from a fork: at its target branch's head). Empty when nothing will be
 * evaluated, or the repository's integration is gone (then the API's pipelines decide).
 */
export async function readPipelineFiles(deps: ForgeDeps, input: AcceptInput, route: Route): Promise<PipelineFiles> {
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

/** A pipeline that may build, with the definition it builds with and where that came from. */
type Candidate = { pipeline: Pipeline; snapshot: ConfigSnapshot; source: DefinitionSource };

/**
 * A pipeline's snapshot, one object per pipeline object: the pipelines as this daemon last read
 * them are the same objects push after push, so their builds' snapshot text is made once
 * (lib/builds/create.ts snapshotText). Neither is changed once made.
 */
const apiSnapshots = new WeakMap<Pipeline, ConfigSnapshot>();
function apiSnapshotOf(pipeline: Pipeline): ConfigSnapshot {
  let snapshot = apiSnapshots.get(pipeline);
  if (snapshot === undefined) apiSnapshots.set(pipeline, (snapshot = snapshotOf(pipeline)));
  return snapshot;
}

/**
 * The pipelines that may build, each with the definition it builds with. Each pipeline file
 * decides for the pipelines it names; without the file, the pipelines configured through the API
 * that read it decide (docs/pipelines.md). The pipelines left out get their decision and reason here.
 */
export async function pipelineCandidates(acting: Acting, projectId: string, pipelines: Pipeline[]): Promise<Candidate[]> {
  const { tx, files, now, decisions } = acting;
  const candidates: Candidate[] = [];
  for (const path of configPathsOf(pipelines)) {
    const read = files.get(path);
    const reading = pipelines.filter((p) => p.config_path === path);
    if (!read || read.status === "missing") {
      for (const pipeline of reading) {
        candidates.push({ pipeline, snapshot: apiSnapshotOf(pipeline), source: API_DEFINITION });
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
export function touchesFileSchedules(event: TriggerEvent, files: PipelineFiles): boolean {
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
export async function buildWhatTriggers(acting: Acting, candidates: Candidate[]): Promise<void> {
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
        const planned = { id: timeOrderedId(), pipeline, input: build };
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
export function summarize(acting: Acting): string {
  const built = acting.decisions.filter((d) => d.build).length;
  const head = built ? `started ${built} build(s)` : acting.fileReasons.length ? null : "no pipeline matched";
  return [head, ...acting.fileReasons, ...acting.scheduleNotes].filter((r) => r !== null).join("; ");
}
