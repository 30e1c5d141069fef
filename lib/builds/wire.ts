// How builds look on the wire (docs/api.md "Builds").
import { z } from "zod";
import { BUILD_STATUSES } from "./state-machine.ts";
import { Concurrency, ExecutionConfigOut, TriggerConfigOut } from "../pipelines/wire.ts";
import { ExecutorUsed, FlutterSdkUsed } from "../runners/protocol-wire.ts";
import { Timestamp } from "../schemas/shared.ts";

export const StepResult = z.object({
  name: z.string(),
  status: z.enum(["running", "succeeded", "failed", "canceled", "skipped"]),
  exit_code: z.number().int().nullable(),
  duration_ms: z.number().int(),
  started_at: Timestamp,
  finished_at: Timestamp.nullable(),
});

export const BuildResource = z.object({
  id: z.string(),
  build_number: z.number().int().describe("per project, from 1, no gaps"),
  project_id: z.string(),
  pipeline_id: z.string(),
  runner_id: z.string().nullable(),
  source_build_id: z.string().nullable().describe("set on a re-run: the build it was cloned from"),
  branch: z.string(),
  commit_sha: z.string(),
  changelog: z.string(),
  config_snapshot: z
    .object({
      pipeline_name: z.string(),
      config_path: z.string(),
      concurrency: Concurrency,
      trigger_config: TriggerConfigOut,
      execution_config: ExecutionConfigOut,
    })
    .describe("the pipeline configuration frozen when the build was created"),
  definition_source: z
    .union([
      z.object({ source: z.literal("api") }),
      z.object({
        source: z.literal("file"),
        path: z.string(),
        commit_sha: z.string().describe("the commit the pipeline file was read at"),
        branch: z.string().optional().describe("for a pull request from a fork: the target branch whose file was used"),
      }),
    ])
    .describe("where config_snapshot came from: the pipeline file in the repository, or the pipeline as configured through the API (docs/pipelines.md)"),
  context: z.unknown().nullable().describe("trigger details: pull request number, delivery id, …"),
  runner_policy_block_reason: z.string().nullable().describe("why no runner can take this build (e.g. no macOS runner for ios)"),
  status: z.enum(BUILD_STATUSES),
  exit_code: z.number().int().nullable(),
  failure_reason: z.string().nullable(),
  queued_at: Timestamp,
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  trigger_type: z.enum(["manual", "rerun", "webhook", "schedule"]),
  schedule_id: z.string().nullable().describe("the schedule that started this build (trigger_type schedule)"),
  trigger_event: z.string(),
  trigger_ref: z.string(),
  trigger_actor: z.string(),
  step_results: z.array(StepResult),
  logs_deleted_at: Timestamp.nullable().describe('when retention deleted the build\'s log (docs/operations.md "Retention"); null while it is kept'),
  artifacts_deleted_at: Timestamp.nullable().describe("when retention deleted the build's artifacts; null while they are kept"),
  flutter_sdk: FlutterSdkUsed.nullable().describe(
    'the Flutter SDK the build used, as its runner reported it when the job finished (docs/runners.md "Flutter versions")',
  ),
  executor: ExecutorUsed.nullable().describe(
    'where the build ran, as its runner reported it when the job finished: host, or a container with its image by digest (which a re-run runs again), network and limits, or why the container could not start (docs/runners.md "Executors")',
  ),
});
