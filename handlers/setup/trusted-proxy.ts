// PUT /v1/setup/trusted-proxy: the reverse proxy trusted for External Access with trusted_proxy,
// set during first-run setup (docs/external-access.md). The shared secret is never returned.
import { trustedProxySettingsEndpoint } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = trustedProxySettingsEndpoint({ operationId: "setup_trusted_proxy", summary: "Configure the trusted proxy during first-run setup" });
