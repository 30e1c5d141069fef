// PUT /v1/settings/trusted-proxy: replaces the trusted proxy settings after setup (owner or admin).
import { trustedProxySettingsEndpoint } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = trustedProxySettingsEndpoint({ operationId: "update_trusted_proxy_settings", summary: "Replace the trusted proxy settings" });
