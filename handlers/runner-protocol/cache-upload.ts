// PUT /v1/runners/{runner_id}/jobs/{job_id}/caches?key=…&version=… (runner token): saves a shared
// dependency cache archive (docs/runners.md "Shared caches") in the scope of the job's build, which
// the daemon decides (a pull request's job writes only its pull request's scope). The raw archive
// is the body, its SHA-256 in X-Roost-Cache-SHA256. Refused when the scope already has the key
// (409 cache_exists: entries are immutable), over ROOST_SHARED_CACHE_MAX_MB (413), when the digest
// differs (422), on a full disk (507) or a refusing bucket (502); nothing is recorded then.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { RunnerContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { requestBody } from "../../lib/http/io.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { CacheAnswer, CacheKey, CacheVersion, HEADER } from "../../lib/runners/protocol-wire.ts";
import { jobCacheReader } from "../../lib/caches/job.ts";
import { storeCache } from "../../lib/caches/store.ts";

export const endpoint = defineEndpoint({
  operationId: "runner_upload_cache",
  summary: "Runner: save a shared cache archive",
  params: z.object({ job_id: IdParam }),
  query: z.object({ key: CacheKey, version: CacheVersion }),
  ...created(CacheAnswer),
  errors: ["job_not_assigned", "job_finished", "payload_too_large", "cache_checksum_mismatch", "cache_exists", "insufficient_storage", "object_store_error"],
  async handle({ params, query }, ctx: RunnerContext) {
    const reader = await jobCacheReader(ctx, params.job_id);
    const sha = ctx.request.headers.get(HEADER.cacheSha256) ?? "";
    if (!/^[0-9a-fA-F]{64}$/.test(sha)) fail("invalid_request", "Send the archive's SHA-256 (hex) in X-Roost-Cache-SHA256.");
    const declared = ctx.request.headers.get("content-length");
    // An archive may be gigabytes on a slow link, as an artifact may (artifact-upload.ts).
    ctx.setBodyTimeout(0);
    const cache = await storeCache(ctx.db, ctx.objects, ctx.log, {
      writer: reader,
      key: query.key,
      version: query.version,
      body: requestBody(ctx.request),
      expectedSha256: sha,
      maxBytes: ctx.config.sharedCaches.maxBytesPerProject,
      declaredLength: declared === null ? null : Number(declared),
      now: ctx.clock.now(),
    });
    return { cache };
  },
});
