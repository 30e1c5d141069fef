// PATCH /v1/pipelines/{pipeline_id} (project maintainer): every top-level field sent replaces
// the stored one as a whole; a secret env entry sent without a value keeps its stored value.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { DisplayName } from "../../lib/schemas.ts";
import { IdParam, PipelineResource } from "../../lib/schemas/ci.ts";
import { scopedPipeline, scopedProject } from "../../lib/auth/project-access.ts";
import { findPipeline, replacePipeline, toPublicPipeline } from "../../lib/db/pipelines.ts";
import { PipelineFieldsInput } from "../../lib/pipelines/config.ts";
import { pipelineFields } from "../../lib/pipelines/store.ts";
import { isUniqueViolation } from "../../lib/db/client.ts";

export const UpdatePipelineBody = z
  .object({
    name: DisplayName.optional(),
    enabled: PipelineFieldsInput.enabled.optional(),
    config_path: PipelineFieldsInput.config_path.optional(),
    concurrency: PipelineFieldsInput.concurrency.optional(),
    trigger_config: PipelineFieldsInput.trigger_config.optional(),
    execution_config: PipelineFieldsInput.execution_config.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: "send at least one field to change" });

export const endpoint = defineEndpoint({
  operationId: "update_pipeline",
  summary: "Update a pipeline",
  tag: "pipelines",
  params: z.object({ pipeline_id: IdParam }),
  body: UpdatePipelineBody,
  response: z.object({ pipeline: PipelineResource }),
  errors: ["pipeline_exists"],
  async handle({ params, body }, ctx) {
    const pipeline = scopedPipeline(ctx);
    const project = scopedProject(ctx);
    const fields = await pipelineFields(body, pipeline, project.default_branch, ctx.secrets);
    if (typeof fields === "string") fail("invalid_request", fields, { details: [{ path: "body.execution_config.env", message: fields }] });
    try {
      return { pipeline: toPublicPipeline((await replacePipeline(ctx.db, pipeline.id, fields, ctx.clock.now()))!) };
    } catch (error) {
      if (isUniqueViolation(error)) fail("pipeline_exists", `The project already has a pipeline named ${fields.name}.`);
      throw error;
    }
  },
});
