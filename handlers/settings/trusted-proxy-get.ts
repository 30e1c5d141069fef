// GET /v1/settings/trusted-proxy: the trusted proxy settings, without the shared secret.
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { PublicTrustedProxySettings } from "../../lib/auth/trusted-proxy.ts";
import { getTrustedProxySettings, toPublicTrustedProxySettings } from "../../lib/db/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "get_trusted_proxy_settings",
  summary: "Show the trusted proxy settings (never the shared secret)",
  tag: "settings",
  response: PublicTrustedProxySettings,
  errors: ["not_found"],
  async handle(_input, ctx) {
    const settings = await getTrustedProxySettings(ctx.db);
    if (!settings) fail("not_found", "No trusted proxy is configured.");
    return toPublicTrustedProxySettings(settings);
  },
});
