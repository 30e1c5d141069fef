// GET /v1/projects/{project_id}/pipeline-file (project viewer): what the project's pipeline file
// says at the head of the default branch — each pipeline it defines, with its line and meaning, or
// the file's problems — and the last problem a webhook delivery found with it (docs/pipelines.md
// "Seeing the file in Roost"). The host is asked for the branch head and the file on each call.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { Concurrency, ExecutionConfigOut, TriggerConfigOut } from "../../lib/pipelines/wire.ts";
import { pipelineFileStatus } from "../../lib/pipelines/file-status.ts";

const FileProblem = z.object({
  line: z.number().int(),
  column: z.number().int(),
  path: z.string().describe('where in the document, e.g. "pipelines.android-release.platforms.1" ("" for the file itself)'),
  message: z.string(),
});

export const PipelineFileResult = z.object({
  branch: z.string().describe("the project's default branch, whose head was read"),
  commit_sha: z.string().nullable().describe("the branch head the files were read at; null when the host did not answer"),
  files: z.array(
    z.object({
      path: z.string().describe("a config_path the project's pipelines read (roost.yaml for a project without pipelines)"),
      status: z
        .enum(["missing", "valid", "invalid", "unreadable"])
        .describe("missing: the pipelines configured through the API decide; valid: the file decides for the pipelines it names"),
      pipelines: z.array(
        z.object({
          name: z.string(),
          line: z.number().int().describe("the line the pipeline's name is on"),
          pipeline_id: z.string().nullable().describe("the project's pipeline of this name; null until a push of the file creates it"),
          concurrency: Concurrency,
          trigger_config: TriggerConfigOut,
          execution_config: ExecutionConfigOut,
          schedules: z.array(z.object({ cron: z.string(), timezone: z.string(), branch: z.string().nullable(), build_when_unchanged: z.boolean() })),
        }),
      ),
      problems: z.array(FileProblem).describe("invalid: every problem with its line and column"),
      message: z.string().nullable().describe("invalid or unreadable: the sentence the delivery log uses"),
    }),
  ),
  last_error: z
    .object({ delivery_id: z.string(), received_at: z.number().int(), commit_sha: z.string().nullable(), message: z.string() })
    .nullable()
    .describe("the newest webhook delivery (of any branch) that found a pipeline file invalid or unreadable; null when none is on record"),
});

export const endpoint = defineEndpoint({
  operationId: "get_pipeline_file",
  summary: "Read the project's pipeline file at the default branch's head",
  response: PipelineFileResult,
  async handle(_input, ctx: ProjectContext) {
    return pipelineFileStatus(ctx, ctx.project);
  },
});
