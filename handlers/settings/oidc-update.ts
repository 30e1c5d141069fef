// PUT /v1/settings/oidc: replaces the identity provider settings after setup (owner or admin).
import { oidcSettingsEndpoint } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = oidcSettingsEndpoint({ operationId: "update_oidc_settings", summary: "Replace the OpenID Provider settings" });
