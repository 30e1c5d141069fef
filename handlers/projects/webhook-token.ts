// POST /v1/projects/{project_id}/webhook-token (project maintainer): mints a new GitLab webhook
// token for the project's repository and returns it once, with the URL to configure in GitLab.
// The previous token stops working at once. GitHub deliveries are verified with the GitHub App's
// webhook secret instead, so GitHub projects need no token.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { requireProjectRole } from "../../lib/auth/project-access.ts";
import { findRepository } from "../../lib/db/repositories.ts";
import { rotateWebhookToken } from "../../lib/webhooks/gitlab-tokens.ts";

export const endpoint = defineEndpoint({
  operationId: "rotate_webhook_token",
  summary: "Mint (or rotate) the GitLab webhook token of a project's repository",
  tag: "webhooks",
  params: z.object({ project_id: IdParam }),
  response: z.object({
    token: z.string().describe("roost_whk_…: GitLab's \"Secret token\"; shown only here"),
    webhook_url: z.string(),
    repository_full_name: z.string(),
  }),
  successStatus: 201,
  errors: ["not_found", "forbidden", "invalid_session", "invalid_token"],
  async handle({ params }, ctx) {
    const { project } = await requireProjectRole(ctx, params.project_id, "maintainer");
    const repo = await findRepository(ctx.db, project.repository_id);
    if (!repo) fail("not_found", "The project's repository is no longer in the catalogue.");
    if (repo.provider !== "gitlab") fail("invalid_request", "GitHub deliveries are verified with the GitHub App's webhook secret; no per-repository token is needed.");
    const token = await rotateWebhookToken(ctx.db, repo.id);
    ctx.log.info("gitlab webhook token rotated", { request_id: ctx.requestId, repository_id: repo.id });
    const base = ctx.config.publicUrl ?? new URL(ctx.request.url).origin;
    return { token, webhook_url: `${base}/v1/webhooks/gitlab`, repository_full_name: repo.full_name };
  },
});
