// A project's variables and a pipeline's are one set of endpoints at two scopes (docs/secrets.md):
// handlers/variables/project-*.ts and pipeline-*.ts each export one of these with its own
// operation. The scope is what the route's rule loaded: a pipeline when the path names one.
import { z } from "zod";
import type { ProjectContext } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { defineEndpoint } from "../http/route.ts";
import type { Pipeline } from "../pipelines/store.ts";
import {
  deleteVariable,
  listVariables,
  MAX_FILE_BYTES,
  PutVariableBody,
  putVariable,
  toPublicVariable,
  VariableKey,
  VariableResource,
  type VariableScope,
} from "./variables.ts";

/** projectRole(…, "project_id") routes, and "pipeline_id" ones, which also carry the pipeline. */
type VariablesContext = ProjectContext & { pipeline?: Pipeline };

interface Operation {
  operationId: string;
  summary: string;
}

function scopeOf(ctx: VariablesContext): VariableScope {
  return ctx.pipeline ? { projectId: ctx.pipeline.project_id, pipelineId: ctx.pipeline.id } : { projectId: ctx.project.id, pipelineId: null };
}

export function listVariablesEndpoint(operation: Operation) {
  return defineEndpoint({
    ...operation,
    response: z.object({ variables: z.array(VariableResource) }),
    async handle(_input, ctx: VariablesContext) {
      const scope = scopeOf(ctx);
      return { variables: (await listVariables(ctx.db, scope.projectId, scope.pipelineId)).map(toPublicVariable) };
    },
  });
}

export function putVariableEndpoint(operation: Operation) {
  return defineEndpoint({
    ...operation,
    params: z.object({ key: VariableKey }),
    body: PutVariableBody,
    bodyLimitBytes: 2 * MAX_FILE_BYTES,
    response: z.object({ variable: VariableResource, created: z.boolean() }),
    async handle({ params, body }, ctx: VariablesContext) {
      const user = ctx.principal.user;
      const { variable, created } = await putVariable(ctx.db, ctx.secrets, scopeOf(ctx), params.key, body, { id: user.id, email: user.email }, ctx.clock.now());
      return { variable: toPublicVariable(variable), created };
    },
  });
}

export function deleteVariableEndpoint(operation: Operation) {
  return defineEndpoint({
    ...operation,
    params: z.object({ key: VariableKey }),
    response: z.object({ deleted: z.boolean() }),
    async handle({ params }, ctx: VariablesContext) {
      const user = ctx.principal.user;
      const scope = scopeOf(ctx);
      if (!(await deleteVariable(ctx.db, scope, params.key, { id: user.id, email: user.email }, ctx.clock.now()))) {
        fail("not_found", `No ${scope.pipelineId ? "pipeline" : "project"} variable ${params.key}.`);
      }
      return { deleted: true };
    },
  });
}
