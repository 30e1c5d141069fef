// PUT /v1/settings/trusted-proxy: replaces the trusted proxy settings after setup (owner or admin).
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { PublicTrustedProxySettings, TrustedProxySettingsBody } from "../../lib/auth/trusted-proxy.ts";
import { storeTrustedProxySettings } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "update_trusted_proxy_settings",
  summary: "Replace the trusted proxy settings",
  body: TrustedProxySettingsBody,
  response: PublicTrustedProxySettings,
  async handle({ body }, ctx: UserContext) {
    ctx.log.info("trusted proxy settings changed", { request_id: ctx.requestId, user_id: ctx.principal.user.id, trusted_peers: body.trusted_peers });
    return storeTrustedProxySettings(ctx.db, body, ctx.clock.now());
  },
});
