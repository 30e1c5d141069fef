// POST /v1/projects/{project_id}/pipelines (project maintainer). Only `name` is
// required; every other field has a documented default (docs/api.md "Pipelines").
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { PipelineDocument, PipelineResource } from "../../lib/pipelines/wire.ts";
import { insertPipeline, toPublicPipeline } from "../../lib/pipelines/store.ts";
import { pipelineFields } from "../../lib/pipelines/stored-pipeline.ts";
import { isUniqueViolation } from "../../lib/db/client.ts";

export const endpoint = defineEndpoint({
  operationId: "create_pipeline",
  summary: "Create a pipeline",
  body: PipelineDocument,
  ...created({ pipeline: PipelineResource }),
  errors: ["pipeline_exists"],
  async handle({ body }, ctx: ProjectContext) {
    const fields = await pipelineFields(body, [], ctx.project.default_branch, ctx.secrets);
    if (typeof fields === "string") fail("invalid_request", fields, { details: [{ path: "body.execution_config.env", message: fields }] });
    try {
      return { pipeline: toPublicPipeline(await insertPipeline(ctx.db, ctx.project.id, fields, ctx.clock.now())) };
    } catch (error) {
      if (isUniqueViolation(error)) fail("pipeline_exists", `The project already has a pipeline named ${body.name}.`);
      throw error;
    }
  },
});
