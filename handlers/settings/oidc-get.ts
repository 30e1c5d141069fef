// GET /v1/settings/oidc: the identity provider settings, without the client secret. An instance
// with no provider answers 200 {configured: false}: nothing is wrong, there is nothing to show.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { PublicOidcSettings } from "../../lib/auth/oidc.ts";
import { getOidcSettings, toPublicOidcSettings } from "../../lib/auth/sign-in-settings-store.ts";

export const OidcSettingsView = z.union([
  PublicOidcSettings.extend({ configured: z.literal(true) }),
  z.object({ configured: z.literal(false).describe("no identity provider is configured on this instance") }),
]);

export const endpoint = defineEndpoint({
  operationId: "get_oidc_settings",
  summary: "Show the OpenID Provider settings (never the client secret)",
  response: OidcSettingsView,
  async handle(_input, ctx) {
    const settings = await getOidcSettings(ctx.db);
    if (!settings) return { configured: false };
    return { configured: true, ...toPublicOidcSettings(settings) };
  },
});
