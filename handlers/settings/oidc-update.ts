// PUT /v1/settings/oidc: replaces the identity provider settings after setup (owner or admin).
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { OidcSettingsBody, PublicOidcSettings } from "../../lib/auth/oidc.ts";
import { storeOidcSettings } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "update_oidc_settings",
  summary: "Replace the OpenID Provider settings",
  body: OidcSettingsBody,
  response: PublicOidcSettings,
  async handle({ body }, ctx: UserContext) {
    ctx.log.info("oidc settings changed", { request_id: ctx.requestId, user_id: ctx.principal.user.id, issuer: body.issuer });
    return storeOidcSettings(ctx.db, ctx.secrets, body, ctx.clock.now());
  },
});
