// PUT /v1/setup/trusted-proxy: the reverse proxy trusted for External Access with trusted_proxy,
// set during first-run setup (docs/external-access.md). The shared secret is never returned.
import { defineEndpoint } from "../../lib/http/route.ts";
import { PublicTrustedProxySettings, TrustedProxySettingsBody } from "../../lib/auth/trusted-proxy.ts";
import { storeTrustedProxySettings } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = defineEndpoint({
  operationId: "setup_trusted_proxy",
  summary: "Configure the trusted proxy during first-run setup",
  body: TrustedProxySettingsBody,
  response: PublicTrustedProxySettings,
  async handle({ body }, ctx) {
    return storeTrustedProxySettings(ctx.db, body, ctx.clock.now());
  },
});
