// The host guides and the README's runner section say what the web app's forms do for each step
// they show with curl (Roost issue 18), and every button and field they name is one the app has,
// so a renamed control fails here instead of sending a newcomer looking for it.
import { expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../helpers/daemon.ts";

const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");
const app = [read("web/main.tsx"), ...readdirSync(join(REPO_ROOT, "web/pages")).map((f) => read(`web/pages/${f}`))].join("\n");
// A doc's line breaks are not the app's: compare with runs of white space made one space.
const flat = (text: string) => text.replace(/\s+/g, " ");

const GUIDES: Array<[string, string[]]> = [
  [
    "docs/github.md",
    [
      "Connect a source host",
      "GitHub (App)",
      "App id",
      "Installation id",
      "Private key (PEM)",
      "Webhook secret",
      "Sync now",
      "New project",
      "New pipeline",
      "Webhook deliveries",
    ],
  ],
  [
    "docs/gitlab.md",
    [
      "Connect a source host",
      "GitLab",
      "Instance URL",
      "Access token",
      "Sync now",
      "New project",
      "New pipeline",
      "Create or rotate the webhook token",
      "Webhook deliveries",
    ],
  ],
  [
    "docs/any-git.md",
    [
      "Connect a source host",
      "Gitea / Forgejo",
      "Bitbucket Cloud",
      "Plain git remote",
      "Instance URL",
      "Workspace",
      "Repository URL",
      "Deploy key",
      "Sync now",
      "New project",
      "New pipeline",
      "Webhook deliveries",
    ],
  ],
  ["README.md", ["Register a runner", "Rotate token", "Revoke"]],
];

for (const [doc, labels] of GUIDES) {
  test(`${doc} names the web app's controls for its steps, and the app has each of them`, () => {
    const text = flat(read(doc));
    for (const label of labels) {
      expect({ label, inDoc: text.includes(label) }).toEqual({ label, inDoc: true });
      expect({ label, inApp: app.includes(label) }).toEqual({ label, inApp: true });
    }
  });
}

test("the guides that show how to connect a host with curl also say where the web app does it", () => {
  for (const doc of ["docs/github.md", "docs/gitlab.md", "docs/any-git.md"])
    expect(flat(read(doc))).toContain("Administration → Integrations → Connect a source host");
  expect(flat(read("README.md"))).toContain("**Runners → Register a runner**");
});
