// POST /v1/projects (instance maintainer or higher): a project builds one catalogue repository,
// and a repository is built by exactly one project (docs/webhooks.md "Who builds a repository"):
// a second project on it would change how the first one builds. The creator becomes the
// project's maintainer. A plain git repository's heads are recorded now, so polling builds only
// later changes (docs/any-git.md "Polling").
import { z } from "zod";
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { UserContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { DisplayName } from "../../lib/schemas/shared.ts";
import { BranchName } from "../../lib/pipelines/wire.ts";
import { BRANCH_NAME_CHARS } from "../../lib/schemas/patterns.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { ProjectResource, ProjectSettings } from "../../lib/projects/wire.ts";
import { findRepository } from "../../lib/integrations/repositories.ts";
import { findProject, forgeRepositoryIsLinked, insertProject, toPublicProject } from "../../lib/projects/store.ts";
import { inTransaction, isUniqueViolation } from "../../lib/db/client.ts";
import { recordConnectedHeads } from "../../lib/forges/git/poll.ts";

// Says nothing about the project that builds it: the caller may not be allowed to see it.
const ALREADY_LINKED = "Another project already builds this repository; a repository is built by exactly one project. Ask its maintainers to add you.";

export const CreateProjectBody = z
  .object({
    repository_id: IdParam.describe("a repository from GET /v1/integration-repositories"),
    name: DisplayName.optional().describe("default: the repository's full name"),
    description: z.string().max(2000).default(""),
    default_branch: BranchName.optional().describe("default: the repository's default branch"),
    settings: ProjectSettings.default({}),
  })
  .strict();

export const endpoint = defineEndpoint({
  operationId: "create_project",
  summary: "Create a project from a catalogue repository",
  body: CreateProjectBody,
  ...created({ project: ProjectResource }),
  errors: ["invalid_request", "not_found", "repository_already_linked"],
  async handle({ body }, ctx: UserContext) {
    const repo = await findRepository(ctx.db, body.repository_id);
    if (!repo) fail("not_found", "No catalogue repository with that id; see GET /v1/integration-repositories.");
    // A default branch the host named over the limit of a branch name was not kept (boundedRemote,
    // lib/integrations/repositories.ts): the project must name one.
    const defaultBranch = body.default_branch ?? repo.default_branch;
    if (defaultBranch === "")
      fail(
        "invalid_request",
        `The repository's default branch was not kept when its catalogue was synced (its name is over ${BRANCH_NAME_CHARS} characters); send default_branch.`,
        { details: [{ path: "body.default_branch", message: `required: the repository has no default branch of at most ${BRANCH_NAME_CHARS} characters` }] },
      );
    // Checked and inserted in one write transaction; the unique index (schema.sql migration 7)
    // settles two concurrent creations on the same catalogue entry.
    const id = await inTransaction(ctx.db, async (tx) => {
      if (await forgeRepositoryIsLinked(tx, repo)) fail("repository_already_linked", ALREADY_LINKED);
      return insertProject(
        tx,
        {
          name: body.name ?? repo.full_name,
          description: body.description,
          repositoryId: repo.id,
          defaultBranch,
          settings: body.settings,
          createdBy: ctx.principal.user.id,
        },
        ctx.clock.now(),
      );
    }).catch((error: unknown) => {
      if (isUniqueViolation(error)) fail("repository_already_linked", ALREADY_LINKED);
      throw error;
    });
    await recordConnectedHeads(ctx, repo);
    return { project: toPublicProject((await findProject(ctx.db, id))!, "maintainer") };
  },
});
