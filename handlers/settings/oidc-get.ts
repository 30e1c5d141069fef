// GET /v1/settings/oidc: the identity provider settings, without the client secret.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { PublicOidcSettings } from "../../lib/auth/oidc.ts";
import { getOidcSettings, toPublicOidcSettings } from "../../lib/db/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "get_oidc_settings",
  summary: "Show the OpenID Provider settings (never the client secret)",
  tag: "settings",
  response: PublicOidcSettings,
  errors: ["oidc_not_configured"],
  async handle(_input, ctx) {
    const settings = await getOidcSettings(ctx.db);
    if (!settings) fail("oidc_not_configured", "No identity provider is configured.");
    return toPublicOidcSettings(settings);
  },
});
