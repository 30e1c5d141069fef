// GET /v1/integration-repositories (docs/api.md "Source integrations"; maintainer): searches the
// repository catalogue of every integration.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination, SearchQuery } from "../../lib/schemas/shared.ts";
import { RepositoryResource } from "../../lib/integrations/wire.ts";
import { searchRepositories } from "../../lib/integrations/repositories.ts";

export const endpoint = defineEndpoint({
  operationId: "list_source_repositories",
  summary: "Search repositories across integrations",
  query: z.object({ q: SearchQuery.describe("matches full_name"), ...Pagination }),
  response: z.object({ repositories: z.array(RepositoryResource), total: z.number().int() }),
  async handle({ query }, ctx) {
    return searchRepositories(ctx.db, { q: query.q || undefined, limit: query.limit, offset: query.offset });
  },
});
