// GET /v1/runners/{runner_id}/jobs/{job_id}/caches?key=…&version=… (runner token): the shared
// dependency cache a running job restores (docs/runners.md "Shared caches"): the entry with its key
// in the nearest scope it may read (its own, the default branch's, other tags' for a tag), else
// the newest of the same version there; `cache: null` when there is none yet. Only the caches of
// the project of a job this runner holds.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { CacheKey, CacheLookupAnswer, CacheVersion } from "../../lib/runners/protocol-wire.ts";
import { jobCacheReader } from "../../lib/caches/job.ts";
import { findCacheForBuild } from "../../lib/caches/store.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_find_cache",
  summary: "Runner: find the shared cache a job restores",
  params: z.object({ job_id: IdParam }),
  query: z.object({ key: CacheKey, version: CacheVersion }),
  response: CacheLookupAnswer,
  errors: ["job_not_assigned", "job_finished"],
  async handle({ params, query }, ctx: RunnerContext) {
    const reader = await jobCacheReader(ctx, params.job_id);
    return { cache: await findCacheForBuild(ctx.db, reader, query.key, query.version) };
  },
});
