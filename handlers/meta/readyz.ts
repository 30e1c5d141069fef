// GET /readyz: ready to serve traffic: the database answers, every migration is applied, the
// data directory's disk is not full, and the daemon is not shutting down (a load balancer stops
// sending requests as soon as this says 503).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { LATEST_SCHEMA_VERSION, appliedVersion } from "../../lib/db/migrate.ts";
import { diskFullReason } from "../../lib/daemon/disk.ts";

export const endpoint = defineEndpoint({
  operationId: "readyz",
  summary: "Readiness: database reachable and migrated, disk not full",
  response: z.object({ status: z.literal("ready"), schema_version: z.number().int() }),
  errors: ["not_ready"],
  async handle(_input, ctx) {
    if (ctx.shutdown.aborted) fail("not_ready", "The daemon is shutting down.");
    let version: number;
    try {
      version = await appliedVersion(ctx.db);
    } catch {
      fail("not_ready", "The database does not answer.");
    }
    if (version !== LATEST_SCHEMA_VERSION) fail("not_ready", `The database is at schema version ${version}; this roost needs ${LATEST_SCHEMA_VERSION}.`);
    const full = await diskFullReason(ctx.config.dataDir, ctx.metrics, ctx.clock.now());
    if (full) fail("not_ready", `${full} Free space there (docs/operations.md, Full disk).`);
    return { status: "ready" as const, schema_version: version };
  },
});
