// A real git repository in a temp dir for the tests of what Roost reads from one (docs/pipelines.md,
// docs/any-git.md), and GitHub push deliveries about it.
import { existsSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, type Called, type TestApp } from "./app.ts";
import { createGithubIntegration } from "./ci.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";

/** Runs git in `dir` as author Dev, with none of the caller's GIT_* variables or git config; stdout, trimmed. */
export function git(dir: string, ...args: string[]): string {
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    GIT_AUTHOR_NAME: "Dev",
    GIT_AUTHOR_EMAIL: "dev@example.test",
    GIT_COMMITTER_NAME: "Dev",
    GIT_COMMITTER_EMAIL: "dev@example.test",
  };
  const run = Bun.spawnSync(["git", "-C", dir, ...args], { env, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${run.stderr.toString()}`);
  return run.stdout.toString().trim();
}

/** `files` (path → text; null removes the file) written in `dir` and committed with `message`, the repository made first (on main) where there is none; the commit. */
export function commitFiles(dir: string, files: Record<string, string | null>, message: string): string {
  if (!existsSync(join(dir, ".git"))) {
    mkdirSync(dir, { recursive: true });
    git(dir, "init", "-q", "-b", "main");
  }
  for (const [path, text] of Object.entries(files)) {
    if (text === null) unlinkSync(join(dir, path));
    else {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
  }
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", message);
  return git(dir, "rev-parse", "HEAD");
}

export interface GithubPush {
  repo: { id: number; full_name: string };
  installationId: string | number;
  branch: string;
  sha: string;
  message: string;
  /** The integration's webhook secret, which signs the delivery. */
  secret: string;
  /** The branch's previous head (40 zeros, a new branch, unless given) and the pushed commits as GitHub lists them (pushedCommits). */
  before?: string;
  commits?: PushedCommit[];
  forced?: boolean;
}

/** A commit as a GitHub push payload lists it, with the paths it added, removed and modified. */
export interface PushedCommit {
  id: string;
  message: string;
  author: { name: string };
  added: string[];
  removed: string[];
  modified: string[];
}

/** The commits of `before..after` in the repository at `dir`, oldest first, as a GitHub push payload lists them (each against its first parent). */
export function pushedCommits(dir: string, before: string, after: string): PushedCommit[] {
  const ids = git(dir, "rev-list", "--reverse", `${before}..${after}`).split("\n").filter(Boolean);
  return ids.map((id) => {
    const changes = { added: [] as string[], removed: [] as string[], modified: [] as string[] };
    for (const line of git(dir, "diff-tree", "-r", "--no-commit-id", "--name-status", "--first-parent", id).split("\n").filter(Boolean)) {
      const [status, path] = line.split("\t") as [string, string];
      (status === "A" ? changes.added : status === "D" ? changes.removed : changes.modified).push(path);
    }
    return { id, message: git(dir, "log", "-1", "--format=%s", id), author: { name: "Dev" }, ...changes };
  });
}

/** POSTs a signed GitHub push delivery (https://docs.github.com/webhooks/webhook-events-and-payloads#push) to /v1/webhooks/github. */
export async function postGithubPush(t: TestApp, push: GithubPush): Promise<Called> {
  const { repo, sha, message } = push;
  const body = JSON.stringify({
    ref: `refs/heads/${push.branch}`,
    before: push.before ?? "0".repeat(40),
    after: sha,
    created: push.before === undefined,
    deleted: false,
    forced: push.forced ?? false,
    repository: { id: repo.id, full_name: repo.full_name },
    installation: { id: Number(push.installationId) },
    pusher: { name: "dev" },
    sender: { login: "dev" },
    head_commit: { id: sha, message, author: { name: "Dev" } },
    commits: push.commits ?? [{ id: sha, message, author: { name: "Dev" } }],
  });
  return t.call("POST", "/v1/webhooks/github", {
    raw: body,
    contentType: "application/json",
    headers: { "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": await sign(push.secret, body) },
  });
}

export interface RepositoryApp {
  t: TestApp;
  host: HostApiStandIn;
  owner: string;
  projectId: string;
}

/**
 * An app (allowed to reach the stand-in on 127.0.0.1) whose host stand-in serves the git repository
 * in `dir` as the GitHub repository `repo`: the owner, a synced GitHub integration and a project on it.
 */
export async function startAppOnRepository(
  dir: string,
  repo: { id: number; full_name: string },
  options: { clockStart?: number } = {},
): Promise<RepositoryApp> {
  const host = await startHostApiStandIn();
  host.github.repos.push({ id: repo.id, full_name: repo.full_name, default_branch: "main", private: true });
  host.repositories.set(repo.full_name, dir);
  const t = await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "true" }, options);
  const owner = await bootstrapOwner(t);
  const integration = await createGithubIntegration(t, owner, host);
  await t.call("POST", `/v1/integrations/${integration.integration?.id ?? integration.id}/sync`, { token: owner });
  const repos = (await t.call("GET", `/v1/integration-repositories?q=${encodeURIComponent(repo.full_name)}`, { token: owner })).body.repositories;
  const project = await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repos[0].id } });
  if (project.status !== 201) throw new Error(`project failed: ${project.status} ${project.text}`);
  return { t, host, owner, projectId: project.body.project.id };
}
