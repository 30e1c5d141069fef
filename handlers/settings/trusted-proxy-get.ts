// GET /v1/settings/trusted-proxy: the trusted proxy settings, without the shared secret. An
// instance with no trusted proxy answers 200 {configured: false}, like GET /v1/settings/oidc:
// nothing is wrong, there is nothing to show.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { PublicTrustedProxySettings } from "../../lib/auth/trusted-proxy.ts";
import { getTrustedProxySettings, toPublicTrustedProxySettings } from "../../lib/auth/sign-in-settings-store.ts";

export const TrustedProxySettingsView = z.union([
  PublicTrustedProxySettings.extend({ configured: z.literal(true) }),
  z.object({ configured: z.literal(false).describe("no trusted proxy is configured on this instance") }),
]);

export const endpoint = defineEndpoint({
  operationId: "get_trusted_proxy_settings",
  summary: "Show the trusted proxy settings (never the shared secret)",
  response: TrustedProxySettingsView,
  async handle(_input, ctx) {
    const settings = await getTrustedProxySettings(ctx.db);
    if (!settings) return { configured: false };
    return { configured: true, ...toPublicTrustedProxySettings(settings) };
  },
});
