// PUT /v1/settings/runtime-mode (owner): moves a ready instance between Local Only and External
// Access. Switching to remote first checks the sign-in method people will need: its settings must
// be stored (PUT /v1/settings/oidc or /v1/settings/trusted-proxy, which work in either mode), and
// for OIDC the provider's discovery document must load now, so nobody is locked out by a typo.
// Switching back to local always works; the remote settings stay stored for a later switch.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { getInstance, setRuntimeMode } from "../../lib/setup/instance.ts";
import { getOidcSettings, getTrustedProxySettings } from "../../lib/auth/sign-in-settings-store.ts";
import { discover } from "../../lib/auth/oidc.ts";

export const RuntimeModeBody = z
  .object({
    runtime_mode: z.enum(["local", "remote"]),
    remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).optional().describe("required for remote unless one was chosen before; kept when switching to local"),
  })
  .strict();

export const RuntimeModeResult = z.object({
  runtime_mode: z.enum(["local", "remote"]),
  remote_auth_mode: z.enum(["oidc", "trusted_proxy"]).nullable(),
});

export const endpoint = defineEndpoint({
  operationId: "update_runtime_mode",
  summary: "Switch between Local Only and External Access",
  body: RuntimeModeBody,
  response: RuntimeModeResult,
  errors: ["remote_auth_not_configured", "oidc_discovery_error"],
  async handle({ body }, ctx: UserContext) {
    const instance = await getInstance(ctx.db);
    const remoteAuth = body.remote_auth_mode ?? instance.remote_auth_mode;
    if (body.runtime_mode === "remote") {
      if (remoteAuth === null) {
        const message = "remote_auth_mode is required: choose oidc or trusted_proxy";
        fail("invalid_request", `The body is not valid: body.remote_auth_mode: ${message}`, { details: [{ path: "body.remote_auth_mode", message }] });
      }
      if (remoteAuth === "oidc") {
        const oidc = await getOidcSettings(ctx.db);
        if (!oidc)
          fail(
            "remote_auth_not_configured",
            "Configure the identity provider first: the OpenID Connect form under Administration → Sign-in, or PUT /v1/settings/oidc.",
          );
        await discover(ctx, oidc.issuer); // 502 oidc_discovery_error, and nothing changes
      } else if (!(await getTrustedProxySettings(ctx.db))) {
        fail(
          "remote_auth_not_configured",
          "Configure the trusted proxy first: the Trusted proxy form under Administration → Sign-in, or PUT /v1/settings/trusted-proxy.",
        );
      }
    }
    await setRuntimeMode(ctx.db, body.runtime_mode, remoteAuth);
    ctx.log.info("runtime mode changed", {
      request_id: ctx.requestId,
      user_id: ctx.principal.user.id,
      runtime_mode: body.runtime_mode,
      remote_auth_mode: remoteAuth,
    });
    return { runtime_mode: body.runtime_mode, remote_auth_mode: remoteAuth };
  },
});
