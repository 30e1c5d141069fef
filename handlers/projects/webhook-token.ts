// POST /v1/projects/{project_id}/webhook-token (project maintainer): mints a new GitLab webhook
// token for the project and returns it once, with the URL to configure in GitLab. The token
// belongs to the project (deleted with it); the previous one stops working at once. GitHub
// deliveries are verified with the GitHub App's webhook secret instead, so GitHub projects need
// no token.
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { findRepository } from "../../lib/integrations/repositories.ts";
import { rotateWebhookToken } from "../../lib/forges/gitlab/tokens.ts";
import { findProjectBuildingRepository } from "../../lib/projects/store.ts";

export const endpoint = defineEndpoint({
  operationId: "rotate_webhook_token",
  summary: "Mint (or rotate) the GitLab webhook token of a project",
  ...created({
    token: z.string().describe('roost_whk_…: GitLab\'s "Secret token"; shown only here'),
    webhook_url: z.string(),
    repository_full_name: z.string(),
  }),
  errors: ["invalid_request", "repository_already_linked"],
  async handle(_input, ctx: ProjectContext) {
    const repo = await findRepository(ctx.db, ctx.project.repository_id);
    if (!repo) fail("not_found", "The project's repository is no longer in the catalogue.");
    if (repo.provider !== "gitlab")
      fail("invalid_request", "GitHub deliveries are verified with the GitHub App's webhook secret; no per-repository token is needed.");
    // A project unlinked by the one-project-per-repository upgrade builds nothing, so it gets no token.
    if ((await findProjectBuildingRepository(ctx.db, repo.id)) !== ctx.project.id) {
      fail(
        "repository_already_linked",
        "Another project builds this project's repository; a repository is built by exactly one project, so this one needs no webhook token.",
      );
    }
    const token = await rotateWebhookToken(ctx.db, ctx.project.id);
    ctx.log.info("gitlab webhook token rotated", { request_id: ctx.requestId, project_id: ctx.project.id });
    const base = ctx.config.publicUrl ?? new URL(ctx.request.url).origin;
    return { token, webhook_url: `${base}/v1/webhooks/gitlab`, repository_full_name: repo.full_name };
  },
});
