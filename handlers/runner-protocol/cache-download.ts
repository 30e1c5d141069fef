// GET /v1/runners/{runner_id}/jobs/{job_id}/caches/{cache_id} (runner token): one shared cache
// archive, streamed, with its SHA-256 in X-Roost-Cache-SHA256 (the runner checks it before it
// unpacks). Only an entry of the job's project in a scope the job may read; another is 404, as
// one that does not exist. A download counts as a use: retention keeps entries builds restore.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { HEADER } from "../../lib/runners/protocol-wire.ts";
import { jobCacheReader } from "../../lib/caches/job.ts";
import { cacheObjectKey, findReadableCache, touchCache } from "../../lib/caches/store.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_download_cache",
  summary: "Runner: download a shared cache archive",
  params: z.object({ job_id: IdParam, cache_id: IdParam }),
  produces: ["application/octet-stream"],
  errors: ["job_not_assigned", "job_finished", "not_found", "object_store_error"],
  async handle({ params }, ctx: RunnerContext) {
    const reader = await jobCacheReader(ctx, params.job_id);
    const entry = await findReadableCache(ctx.db, reader, params.cache_id);
    // Streamed, never redirected: the runner's request carries its token, which must not follow a redirect to the bucket.
    const body = entry ? await ctx.objects.get(cacheObjectKey(entry.project_id, entry.id), entry.size) : null;
    if (!entry || !body) fail("not_found", "No such cache for this job (or retention deleted it).");
    await touchCache(ctx.db, entry.id, ctx.clock.now());
    return new Response(body, {
      headers: { "content-type": "application/octet-stream", [HEADER.cacheSha256]: entry.sha256, "content-length": String(entry.size) },
    });
  },
});
