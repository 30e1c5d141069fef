// POST /v1/builds/{build_id}/stream-token (project viewer): a read-only token for this
// build's log stream, bound to the caller and the session or API token they called with, valid
// 60 seconds to open it, stored hashed. The stream lasts while that credential works and the
// caller still sees the project: checked when it opens and every few seconds after.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { mintStreamToken } from "../../lib/auth/stream-tokens.ts";
import { credentialOf } from "../../lib/auth/reauthenticate.ts";
import { json } from "../../lib/http/io.ts";

export const endpoint = defineEndpoint({
  operationId: "create_stream_token",
  summary: "A short-lived token for one build's log stream",
  response: z.object({ token: z.string().describe("roost_st_…"), expires_at: z.number().int() }),
  async handle(_input, ctx: ProjectContext<"build_id">) {
    const principal = ctx.principal;
    return json(await mintStreamToken(ctx.db, ctx.build.id, principal.user.id, credentialOf(principal), ctx.clock.now()), 200, { "cache-control": "no-store" });
  },
});
