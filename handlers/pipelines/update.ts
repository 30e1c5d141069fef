// PATCH /v1/pipelines/{pipeline_id} (project maintainer): the body is a JSON Merge Patch
// (RFC 7396) of the pipeline as GET shows it: objects merge member by member, a member set to null
// returns to its default, and a list (commands, env, branches, ...) is replaced whole. A secret
// env entry sent without a value keeps its stored value.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { parseWith } from "../../lib/http/io.ts";
import { PipelineDocument, PipelineResource } from "../../lib/pipelines/wire.ts";
import { replacePipeline, toPublicPipeline } from "../../lib/pipelines/store.ts";
import { pipelineDocument, pipelineFields } from "../../lib/pipelines/stored-pipeline.ts";
import { applyMergePatch, mergePatchSchema } from "../../lib/http/merge-patch.ts";
import { isUniqueViolation } from "../../lib/db/client.ts";

export const UpdatePipelineBody = mergePatchSchema(PipelineDocument)
  .refine((b) => Object.keys(b).length > 0, { message: "send at least one field to change" })
  .describe("JSON Merge Patch (RFC 7396): members sent change, null resets a member to its default, lists are replaced whole");

export const endpoint = defineEndpoint({
  operationId: "update_pipeline",
  summary: "Update a pipeline",
  body: UpdatePipelineBody,
  response: z.object({ pipeline: PipelineResource }),
  errors: ["pipeline_exists"],
  async handle({ body }, ctx: ProjectContext<"pipeline_id">) {
    const merged = parseWith(PipelineDocument, applyMergePatch(pipelineDocument(ctx.pipeline), body), "body");
    const fields = await pipelineFields(merged, ctx.pipeline.execution_config.env, ctx.project.default_branch, ctx.secrets);
    if (typeof fields === "string") fail("invalid_request", fields, { details: [{ path: "body.execution_config.env", message: fields }] });
    try {
      return { pipeline: toPublicPipeline((await replacePipeline(ctx.db, ctx.pipeline.id, fields, ctx.clock.now()))!) };
    } catch (error) {
      if (isUniqueViolation(error)) fail("pipeline_exists", `The project already has a pipeline named ${fields.name}.`);
      throw error;
    }
  },
});
