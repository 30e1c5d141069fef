// The GitHub App and GitLab setup guides name every permission, scope and event Roost needs and
// where each id comes from (Roost issue 12), and the receiver URLs they give are real routes.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { routes } from "../../handlers/routes.ts";
import { REPO_ROOT } from "../helpers/daemon.ts";

const read = (doc: string) => readFileSync(join(REPO_ROOT, doc), "utf8");
const hasRoute = (method: string, path: string) => routes.some((r) => r.method === method && r.path === path);

test("docs/github.md: permissions, events, App ID, installation id, private key, webhook URL and secret", () => {
  const doc = read("docs/github.md");
  for (const row of ["| Contents | Read-only |", "| Metadata | Read-only |", "| Commit statuses | Read and write |", "| Pull requests | Read-only |"])
    expect(doc).toContain(row);
  expect(doc).toContain("**Push** and **Pull request**");
  expect(doc).toContain("*App ID*");
  expect(doc).toContain("https://github.com/settings/installations/<installation id>");
  expect(doc).toContain("*Private keys → Generate a private key*");
  expect(doc).toContain("| Webhook URL | `https://<your roost>/v1/webhooks/github`");
  expect(doc).toContain("| Webhook secret |");
  expect(hasRoute("POST", "/v1/webhooks/github")).toBe(true);
});

test("docs/gitlab.md: token scopes, the per-project webhook token, the hook's URL and events", () => {
  const doc = read("docs/gitlab.md");
  for (const scope of ["| `read_api` |", "| `read_repository` |", "| `api` |"]) expect(doc).toContain(scope);
  expect(doc).toContain("/v1/projects/$PROJECT/webhook-token");
  expect(doc).toContain("| URL | `https://<your roost>/v1/webhooks/gitlab` |");
  expect(doc).toContain("**Push events** (all branches), **Tag push events**, **Merge request events**");
  expect(hasRoute("POST", "/v1/webhooks/gitlab")).toBe(true);
  expect(hasRoute("POST", "/v1/projects/{project_id}/webhook-token")).toBe(true);
});
