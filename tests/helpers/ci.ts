// Setting up the CI domain for handler tests: a GitHub integration against the host API stand-in,
// a project on one of its repositories, and pipelines.
import { afterAll, beforeAll } from "bun:test";
import { sign } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, type TestApp } from "./app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { startS3Server, type S3Server } from "../support/s3-server.ts";

export const SHA_A = "a".repeat(40);
export const SHA_B = "b".repeat(40);
/** The webhook secret createGithubIntegration gives the integration: the key a test signs its deliveries with. */
export const WEBHOOK_SECRET = "a-webhook-secret-of-some-length";

/**
 * A GitHub push of one commit (modifying lib/main.dart, so the pipeline file is not touched) to
 * `branch` of acme/app (or of `repository`), signed with WEBHOOK_SECRET: its body and headers
 * (https://docs.github.com/webhooks/webhook-events-and-payloads#push).
 */
export async function signedAcmePush(
  branch: string,
  sha: string,
  delivery: string,
  message = "a commit",
  repository: { id: number; full_name: string } = { id: 1001, full_name: "acme/app" },
): Promise<{ body: string; headers: Record<string, string> }> {
  const commit = { id: sha, message, author: { name: "dev" }, added: [], removed: [], modified: ["lib/main.dart"] };
  const body = JSON.stringify({
    ref: `refs/heads/${branch}`,
    before: "0".repeat(40),
    after: sha,
    created: true,
    deleted: false,
    forced: false,
    head_commit: commit,
    commits: [commit],
    repository,
    pusher: { name: "dev" },
  });
  return { body, headers: { "x-github-event": "push", "x-github-delivery": delivery, "x-hub-signature-256": await sign(WEBHOOK_SECRET, body) } };
}

export function seedStandIn(host: HostApiStandIn): void {
  host.github.repos.push(
    { id: 1001, full_name: "acme/app", default_branch: "main", private: true },
    { id: 1002, full_name: "acme/website", default_branch: "main", private: false },
    { id: 1003, full_name: "acme/flutter-kit", default_branch: "develop", private: true },
  );
  host.gitlab.repos.push(
    { id: 77, full_name: "group/mobile", default_branch: "main", private: true },
    { id: 78, full_name: "group/other", default_branch: "master", private: false },
  );
  host.heads.set("acme/app@main", SHA_A);
  host.heads.set("acme/app@release/1.0", SHA_B);
  host.heads.set("group/mobile@main", SHA_A);
}

/** A GitHub integration on the stand-in, its repositories synced; `body` changes the defaults (a field set to undefined is left out). */
export async function createGithubIntegration(t: TestApp, token: string, host: HostApiStandIn, body: Record<string, unknown> = {}) {
  const res = await t.call("POST", "/v1/integrations", {
    token,
    body: {
      provider: "github",
      name: "GitHub (stand-in)",
      api_url: host.url,
      web_url: "https://github.example.test",
      app_id: host.github.appId,
      installation_id: host.github.installationId,
      private_key: host.github.privateKeyPem,
      webhook_secret: WEBHOOK_SECRET,
      ...body,
    },
  });
  if (res.status !== 201) throw new Error(`integration failed: ${res.status} ${res.text}`);
  return res.body;
}

/** A GitLab integration on the stand-in (an access token), its repositories synced. */
export async function createGitlabIntegration(t: TestApp, token: string, host: HostApiStandIn) {
  const res = await t.call("POST", "/v1/integrations", {
    token,
    body: { provider: "gitlab", name: "GitLab (stand-in)", api_url: host.url, access_token: host.gitlab.token },
  });
  if (res.status !== 201) throw new Error(`integration failed: ${res.status} ${res.text}`);
  return res.body;
}

export async function repositoryId(t: TestApp, token: string, fullName: string): Promise<string> {
  const res = await t.call("GET", `/v1/integration-repositories?q=${encodeURIComponent(fullName)}`, { token });
  const repo = res.body.repositories.find((r: { full_name: string }) => r.full_name === fullName);
  if (!repo) throw new Error(`no catalogue repository ${fullName}: ${res.text}`);
  return repo.id;
}

export async function createProject(t: TestApp, token: string, fullName = "acme/app"): Promise<any> {
  const repository = await repositoryId(t, token, fullName);
  let res = await t.call("POST", "/v1/projects", { token, body: { repository_id: repository } });
  // A repository is built by exactly one project; tests that want several independent projects
  // on one repository name get a twin catalogue entry (same name, another host id) for each.
  if (res.status === 409 && res.body?.code === "repository_already_linked")
    res = await t.call("POST", "/v1/projects", { token, body: { repository_id: await twinRepository(t, repository) } });
  if (res.status !== 201) throw new Error(`project failed: ${res.status} ${res.text}`);
  return res.body.project;
}

async function twinRepository(t: TestApp, repositoryId: string): Promise<string> {
  const id = crypto.randomUUID();
  await t.db.execute({
    sql: `INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at)
          SELECT ?, integration_id, provider, external_id || (SELECT COUNT(*) FROM repositories), full_name, default_branch, is_private, avatar_url, installation_id, host_url, clone_url, created_at, updated_at
          FROM repositories WHERE id = ?`,
    args: [id, repositoryId],
  });
  return id;
}

export async function createPipeline(t: TestApp, token: string, projectId: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, { token, body: { name: `p-${crypto.randomUUID()}`, ...body } });
  if (res.status !== 201) throw new Error(`pipeline failed: ${res.status} ${res.text}`);
  return res.body.pipeline;
}

export interface GithubFixture {
  t: TestApp;
  host: HostApiStandIn;
  owner: string;
  stop(): Promise<void>;
}

/** An in-process app (with `env`, and createTestApp's `options`), the host-API stand-in seeded with seedStandIn, the owner and a GitHub integration on the stand-in. */
export async function startGithubFixture(env: Record<string, string> = {}, options: { clockStart?: number } = {}): Promise<GithubFixture> {
  const t = await createTestApp(env, options);
  const host = await startHostApiStandIn();
  seedStandIn(host);
  const owner = await bootstrapOwner(t);
  await createGithubIntegration(t, owner, host);
  return {
    t,
    host,
    owner,
    async stop() {
      t.close();
      await host.stop();
    },
  };
}

/**
 * Starts a fixture (startGithubFixture, startCiFixture, ...) before the file's tests, hands it to
 * `use` (which keeps the parts the file needs), and stops it after them.
 */
export function fixturePerFile<F extends { stop(): Promise<void> }>(start: () => Promise<F>, use: (fixture: F) => void): void {
  let fixture: F | undefined;
  beforeAll(async () => use((fixture = await start())));
  afterAll(() => fixture?.stop());
}

export interface CiFixture extends GithubFixture {
  projectId: string;
}

/** The usual handler-test world: startGithubFixture's, and a project on acme/app. */
export async function startCiFixture(env: Record<string, string> = {}, options: { clockStart?: number } = {}): Promise<CiFixture> {
  const fixture = await startGithubFixture(env, options);
  const projectId = (await createProject(fixture.t, fixture.owner)).id as string;
  return { ...fixture, projectId };
}

export interface S3CiFixture extends CiFixture {
  s3: S3Server;
}

/** startCiFixture's world storing its objects in a bucket of a real S3 server that checks signatures (tests/support/s3-server.ts); stop() stops the server too. */
export async function startS3CiFixture(env: Record<string, string> = {}): Promise<S3CiFixture> {
  const s3 = await startS3Server();
  const fixture = await startCiFixture({ ...s3.env(), ...env });
  return {
    ...fixture,
    s3,
    async stop() {
      await fixture.stop();
      await s3.stop();
    },
  };
}

/**
 * Another daemon on the fixture's database with a data directory of its own and `env` (its object
 * store's variables), as a second host would run: the fixture's file, or its libSQL server
 * (ROOST_TEST_DATABASE=sqld), whichever the fixture's daemon opened.
 */
export function daemonOnSameDatabase(fixture: GithubFixture, env: Record<string, string>): Promise<TestApp> {
  return createTestApp({ ...env, ROOST_DATABASE_URL: fixture.t.config.databaseUrl });
}
