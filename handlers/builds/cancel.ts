// POST /v1/builds/{build_id}/cancel (docs/api.md "Builds"; project developer): queued or running →
// canceled at once. A runner working on it learns this at its next heartbeat or log append and
// stops the process tree. A finished build answers 409 build_not_cancelable.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { BuildResource } from "../../lib/builds/wire.ts";
import { findBuild, toPublicBuild } from "../../lib/builds/store.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";

export const endpoint = defineEndpoint({
  operationId: "cancel_build",
  summary: "Cancel a queued or running build",
  response: z.object({ build: BuildResource }),
  errors: ["build_not_cancelable"],
  async handle(_input, ctx: ProjectContext<"build_id">) {
    const canceled = await transitionBuild(ctx, ctx.build.id, "cancel", { failure_reason: `canceled by ${ctx.principal.user.email}` });
    if (!canceled) {
      const now = await findBuild(ctx.db, ctx.build.id);
      fail("build_not_cancelable", `Build #${ctx.build.build_number} is ${now?.status ?? ctx.build.status}; only queued or running builds can be canceled.`);
    }
    return { build: toPublicBuild(canceled) };
  },
});
