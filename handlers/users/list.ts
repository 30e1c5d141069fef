// GET /v1/users (admin): the instance's users, paged.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination, SearchQuery, UserResource } from "../../lib/schemas/shared.ts";
import { listUsers, toUserResource } from "../../lib/auth/users.ts";

export const endpoint = defineEndpoint({
  operationId: "list_users",
  summary: "List users",
  query: z.object({
    q: SearchQuery,
    include_inactive: z.enum(["true", "false"]).default("false").describe("also list deactivated users"),
    ...Pagination,
  }),
  response: z.object({ users: z.array(UserResource), total: z.number().int() }),
  async handle({ query }, ctx) {
    const page = await listUsers(ctx.db, {
      q: query.q || undefined,
      includeInactive: query.include_inactive === "true",
      limit: query.limit,
      offset: query.offset,
    });
    return { users: page.users.map(toUserResource), total: page.total };
  },
});
