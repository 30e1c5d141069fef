// POST /v1/integrations (admin): connects GitHub (a GitHub App installation) or GitLab (an
// instance URL and access token), then syncs its repository catalogue. Credentials are sealed
// at rest and never returned.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { DisplayName } from "../../lib/schemas.ts";
import { IntegrationResource } from "../../lib/schemas/ci.ts";
import { fail } from "../../lib/errors.ts";
import { findIntegration, insertIntegration } from "../../lib/db/integrations.ts";
import { integrationView, sealCredentials, syncRepositories } from "../../lib/integrations/index.ts";
import { refusedHostReason } from "../../lib/integrations/address-policy.ts";
import { HostApiError } from "../../lib/integrations/http.ts";

const HostUrl = z
  .url({ protocol: /^https?$/ })
  .max(500)
  .transform((u) => u.replace(/\/+$/, ""));

export const CreateIntegrationBody = z.discriminatedUnion("provider", [
  z
    .object({
      provider: z.literal("github"),
      name: DisplayName,
      api_url: HostUrl.default("https://api.github.com").describe("https://api.github.com, or https://HOST/api/v3 for GitHub Enterprise Server"),
      web_url: HostUrl.default("https://github.com"),
      app_id: z.string().regex(/^\d{1,20}$/, "must be the numeric GitHub App id"),
      installation_id: z.string().regex(/^\d{1,20}$/, "must be the numeric installation id"),
      private_key: z.string().min(1).max(10_000).describe("the GitHub App's PEM private key"),
      webhook_secret: z.string().min(16, "must be at least 16 characters").max(255).describe("the App's webhook secret"),
    })
    .strict(),
  z
    .object({
      provider: z.literal("gitlab"),
      name: DisplayName,
      api_url: HostUrl.default("https://gitlab.com").describe("the GitLab instance URL"),
      access_token: z.string().min(1).max(255).describe("a token with read_api (and api for commit statuses)"),
    })
    .strict(),
]);

export const endpoint = defineEndpoint({
  operationId: "create_integration",
  summary: "Connect a GitHub App installation or a GitLab instance",
  tag: "integrations",
  body: CreateIntegrationBody,
  response: z.object({ integration: IntegrationResource, repositories_synced: z.number().int(), sync_error: z.string().nullable() }),
  successStatus: 201,
  errors: ["invalid_request"],
  async handle({ body }, ctx) {
    // Link-local and cloud metadata hosts are refused here by their literal address or name; the
    // address a name resolves to is checked again before every request (lib/integrations/http.ts).
    const refused = ctx.config.integrations.allowLinkLocal ? null : refusedHostReason(new URL(body.api_url).hostname);
    if (refused) {
      const message = `must not be ${refused} unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true`;
      fail("invalid_request", `The body is not valid: body.api_url: ${message}`, { details: [{ path: "body.api_url", message }] });
    }
    const now = ctx.clock.now();
    const credentials = body.provider === "github" ? { private_key: body.private_key, webhook_secret: body.webhook_secret } : { access_token: body.access_token };
    const integration = await insertIntegration(
      ctx.db,
      {
        provider: body.provider,
        name: body.name,
        api_url: body.api_url,
        web_url: body.provider === "github" ? body.web_url : body.api_url,
        app_id: body.provider === "github" ? body.app_id : null,
        installation_id: body.provider === "github" ? body.installation_id : null,
        credentials_sealed: await sealCredentials(ctx.secrets, credentials),
        created_by: ctx.principal!.user.id,
      },
      now,
    );
    // The integration is kept even when the first sync fails: the answer says why, an incident is raised, and a later sync can succeed.
    let synced = 0;
    let syncError: string | null = null;
    try {
      synced = await syncRepositories(ctx, integration);
    } catch (error) {
      if (!(error instanceof HostApiError)) throw error;
      syncError = error.message;
    }
    return { integration: integrationView((await findIntegration(ctx.db, integration.id))!, true), repositories_synced: synced, sync_error: syncError };
  },
});
