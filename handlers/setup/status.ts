// GET /v1/setup/status: public, so a client (or the web UI) knows what to show before sign-in.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { getInstance, runtimeMode } from "../../lib/db/instance.ts";
import { countActiveOwners } from "../../lib/db/users.ts";

export const SetupStatus = z.object({
  state: z.enum(["incomplete", "ready"]),
  runtime_mode: z.enum(["local", "remote"]).describe("local until External Access is chosen"),
  runtime_mode_chosen: z.boolean(),
  remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).nullable(),
  owner_exists: z.boolean(),
  next_step: z
    .enum(["local_login", "preferences", "owner", "complete", "sign_in"])
    .describe("what the first-run flow expects next (README, First run)"),
});

export const endpoint = defineEndpoint({
  operationId: "get_setup_status",
  summary: "Instance state and chosen modes",
  tag: "setup",
  response: SetupStatus,
  errors: [],
  async handle(_input, ctx) {
    const instance = await getInstance(ctx.db);
    const ownerExists = (await countActiveOwners(ctx.db)) > 0;
    const mode = runtimeMode(instance);
    let next: z.infer<typeof SetupStatus>["next_step"] = "sign_in";
    if (instance.state === "incomplete") {
      if (mode === "local") next = "local_login";
      else if (!ownerExists) next = "owner";
      else next = "complete";
    }
    return {
      state: instance.state,
      runtime_mode: mode,
      runtime_mode_chosen: instance.runtime_mode !== null,
      remote_auth_mode: instance.remote_auth_mode,
      owner_exists: ownerExists,
      next_step: next,
    };
  },
});
