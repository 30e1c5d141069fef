// GET /v1/api-tokens (docs/api.md "API tokens"): admins and owners see every token, others only their own.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { ApiToken, Pagination, SearchQuery } from "../../lib/schemas/shared.ts";
import { roleAtLeast } from "../../lib/auth/roles.ts";
import { TOKEN_SORT_FIELDS, listPublicApiTokens } from "../../lib/auth/api-tokens.ts";

export const ListTokensQuery = z.object({
  q: SearchQuery.describe("matches name, creator e-mail or prefix"),
  sort: z.enum(TOKEN_SORT_FIELDS).default("created_at").describe("sort field"),
  direction: z.enum(["asc", "desc"]).default("desc"),
  ...Pagination,
});

export const endpoint = defineEndpoint({
  operationId: "list_api_tokens",
  summary: "List API tokens",
  authNote: "admins and owners see every token, others their own",
  query: ListTokensQuery,
  // One read, the page's: the caller's credential is confirmed by it (lib/http/route.ts).
  readOnly: true,
  response: z.object({ tokens: z.array(ApiToken), total: z.number().int() }),
  async handle({ query }, ctx: UserContext) {
    const caller = ctx.principal;
    const seesAll = roleAtLeast(caller.role, "admin");
    return listPublicApiTokens(
      ctx.db,
      {
        createdBy: seesAll ? null : caller.user.id,
        q: query.q || undefined,
        sort: query.sort,
        direction: query.direction,
        limit: query.limit,
        offset: query.offset,
      },
      ctx.clock.now(),
    );
  },
});
