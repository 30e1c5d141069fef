// GET /v1/projects: the projects the caller may see (all of them for admins and owners).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { Pagination, SearchQuery } from "../../lib/schemas/shared.ts";
import { ProjectResource } from "../../lib/projects/wire.ts";
import { listProjects, toPublicProject } from "../../lib/projects/store.ts";
import { roleAtLeast } from "../../lib/auth/roles.ts";

export const endpoint = defineEndpoint({
  operationId: "list_projects",
  summary: "List projects",
  authNote: "lists the projects the caller may see",
  query: z.object({ q: SearchQuery.describe("matches the name or repository"), ...Pagination }),
  response: z.object({ projects: z.array(ProjectResource), total: z.number().int() }),
  async handle({ query }, ctx: UserContext) {
    const p = ctx.principal;
    const page = await listProjects(ctx.db, {
      userId: p.user.id,
      seesAll: roleAtLeast(p.role, "admin"),
      q: query.q || undefined,
      limit: query.limit,
      offset: query.offset,
    });
    return { projects: page.projects.map(({ project, role }) => toPublicProject(project, role)), total: page.total };
  },
});
