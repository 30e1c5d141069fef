// PUT /v1/setup/oidc: the identity provider for External Access with OIDC, set during first-run
// setup (docs/external-access.md). The client secret is sealed and never returned.
import { oidcSettingsEndpoint } from "../../lib/auth/sign-in-settings.ts";

export const endpoint = oidcSettingsEndpoint({ operationId: "setup_oidc", summary: "Configure the OpenID Provider during first-run setup" });
