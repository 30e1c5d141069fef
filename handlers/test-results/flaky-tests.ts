// GET /v1/pipelines/{pipeline_id}/flaky-tests (project viewer): the pipeline's tests that both
// failed and passed on the same commit (a re-run told them apart), most recently flaky first,
// with their failure rate over every run; `cursor` is the previous page's next_cursor.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from "../../lib/schemas/shared.ts";
import { TestResource } from "../../lib/test-results/schema.ts";
import { flakyTests } from "../../lib/test-results/queries.ts";

export const endpoint = defineEndpoint({
  operationId: "list_flaky_tests",
  summary: "A pipeline's flaky tests with their failure rate",
  query: z.object({
    limit: z.coerce.number().int().min(1).max(PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT),
    cursor: z
      .string()
      .regex(/^\d{1,12}\.\d{1,18}$/, "must be a next_cursor this endpoint answered")
      .optional(),
  }),
  response: z.object({ tests: z.array(TestResource), next_cursor: z.string().nullable() }),
  async handle({ query }, ctx: ProjectContext<"pipeline_id">) {
    return flakyTests(ctx.db, ctx.pipeline.id, query);
  },
});
