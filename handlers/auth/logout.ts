// POST /v1/auth/logout (docs/api.md "Authentication"): ends the presented user session.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { SessionContext } from "../../lib/http/context.ts";
import { deleteSession } from "../../lib/auth/sessions.ts";

export const endpoint = defineEndpoint({
  operationId: "logout",
  summary: "End the current session",
  response: z.object({ ok: z.boolean() }),
  browserSession: "clear",
  async handle(_input, ctx: SessionContext) {
    await deleteSession(ctx.db, ctx.principal.sessionId);
    return { ok: true };
  },
});
