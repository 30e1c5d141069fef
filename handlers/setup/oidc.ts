// PUT /v1/setup/oidc: the identity provider for External Access with OIDC, set during first-run
// setup (docs/external-access.md). The client secret is sealed and never returned.
import { defineEndpoint } from "../../lib/http/route.ts";
import { OidcSettingsBody, PublicOidcSettings } from "../../lib/auth/oidc.ts";
import { storeOidcSettings } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "setup_oidc",
  summary: "Configure the OpenID Provider during first-run setup",
  body: OidcSettingsBody,
  response: PublicOidcSettings,
  async handle({ body }, ctx) {
    return storeOidcSettings(ctx.db, ctx.secrets, body, ctx.clock.now());
  },
});
