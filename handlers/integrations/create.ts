// POST /v1/integrations (admin): connects a forge: GitHub (a GitHub App installation), GitLab or
// Gitea/Forgejo (an instance URL and access token), a Bitbucket Cloud workspace or one plain git
// repository (docs/any-git.md), then syncs its repository catalogue. Each forge's body and what it
// seals come from its folder (lib/forges/registry.ts). Credentials are sealed at rest and never
// returned.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { IntegrationResource, SyncWarnings } from "../../lib/integrations/wire.ts";
import { fail } from "../../lib/http/errors.ts";
import { findIntegration, insertIntegration } from "../../lib/integrations/store.ts";
import { integrationView, syncRepositories, type SyncResult } from "../../lib/integrations/index.ts";
import { sealCredentials } from "../../lib/integrations/credentials.ts";
import { refuseSavedHost } from "../../lib/net/address-policy.ts";
import { ForgeApiError } from "../../lib/forges/http.ts";
import { ConnectBodies, forgeOf } from "../../lib/forges/registry.ts";

export const CreateIntegrationBody = ConnectBodies;

export const endpoint = defineEndpoint({
  operationId: "create_integration",
  summary: "Connect a GitHub App installation, a GitLab or Gitea/Forgejo instance, a Bitbucket Cloud workspace, or a plain git repository",
  body: CreateIntegrationBody,
  ...created({ integration: IntegrationResource, repositories_synced: z.number().int(), sync_warnings: SyncWarnings, sync_error: z.string().nullable() }),
  errors: ["invalid_request"],
  async handle({ body }, ctx: UserContext) {
    const forge = forgeOf({ provider: body.provider });
    const connection = forge.connect(body, ctx.config);
    // Link-local and cloud metadata hosts are refused here, by their literal address or name and
    // by what the name resolves to now; the address is checked again before every request
    // (lib/forges/http.ts), as a name can resolve elsewhere later.
    if (connection.refused) invalidField(connection.field, connection.refused);
    await refuseSavedHost(`body.${connection.field}`, connection.hostname, ctx.config.integrations.allowLinkLocal);
    const now = ctx.clock.now();
    const integration = await insertIntegration(
      ctx.db,
      {
        provider: forge.name,
        name: body.name,
        api_url: connection.api_url,
        web_url: connection.web_url,
        app_id: connection.app_id,
        installation_id: connection.installation_id,
        credentials_sealed: await sealCredentials(ctx.secrets, connection.credentials),
        created_by: ctx.principal.user.id,
      },
      now,
    );
    // The integration is kept even when the first sync fails: the answer says why, an incident is raised, and a later sync can succeed.
    let synced: SyncResult = { synced: 0, warnings: [] };
    let syncError: string | null = null;
    try {
      synced = await syncRepositories(ctx, integration);
    } catch (error) {
      if (!(error instanceof ForgeApiError)) throw error;
      syncError = error.message;
    }
    return {
      integration: integrationView((await findIntegration(ctx.db, integration.id))!, true),
      repositories_synced: synced.synced,
      sync_warnings: synced.warnings,
      sync_error: syncError,
    };
  },
});

function invalidField(field: string, message: string): never {
  fail("invalid_request", `The body is not valid: body.${field}: ${message}`, { details: [{ path: `body.${field}`, message }] });
}
