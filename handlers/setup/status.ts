// GET /v1/setup/status: public, so a client (or the web UI) knows what to show before sign-in.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { getInstance, runtimeMode } from "../../lib/setup/instance.ts";
import { countActiveOwners } from "../../lib/auth/users.ts";
import { getOidcSettings, getTrustedProxySettings } from "../../lib/auth/sign-in-settings-store.ts";

export const SetupStatus = z.object({
  state: z.enum(["incomplete", "ready"]),
  runtime_mode: z.enum(["local", "remote"]).describe("local until External Access is chosen"),
  runtime_mode_chosen: z.boolean(),
  remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).nullable(),
  owner_exists: z.boolean(),
  next_step: z
    .enum(["local_login", "preferences", "owner", "configure_oidc", "configure_trusted_proxy", "complete", "sign_in"])
    .describe(
      "the request the first-run flow needs next (README, First run): local_login (POST /v1/auth/local/login), preferences (POST /v1/setup/preferences), " +
        "owner (POST /v1/setup/owner), configure_oidc (PUT /v1/setup/oidc), configure_trusted_proxy (PUT /v1/setup/trusted-proxy), complete (POST /v1/setup/complete), sign_in (setup is done)",
    ),
});

export const endpoint = defineEndpoint({
  operationId: "get_setup_status",
  summary: "Instance state and chosen modes",
  response: SetupStatus,
  async handle(_input, ctx) {
    const instance = await getInstance(ctx.db);
    const ownerExists = (await countActiveOwners(ctx.db)) > 0;
    const mode = runtimeMode(instance);
    let next: z.infer<typeof SetupStatus>["next_step"] = "sign_in";
    if (instance.state === "incomplete") {
      if (mode === "local") next = "local_login";
      else if (instance.remote_auth_mode === null) next = "preferences";
      else if (instance.remote_auth_mode === "oidc" && !(await getOidcSettings(ctx.db))) next = "configure_oidc";
      else if (instance.remote_auth_mode === "trusted_proxy" && !(await getTrustedProxySettings(ctx.db))) next = "configure_trusted_proxy";
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
