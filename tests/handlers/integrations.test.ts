// Source integrations and the repository catalogue (docs/api.md "Source integrations"), against the host API stand-in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createGithubIntegration, createProject, seedStandIn } from "../helpers/ci.ts";
import { GithubClient } from "../../lib/integrations/github.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
beforeAll(async () => {
  t = await createTestApp();
  host = await startHostApiStandIn();
  seedStandIn(host);
  owner = await bootstrapOwner(t);
});
afterAll(async () => {
  t.close();
  await host.stop();
});

describe("GitHub App integration", () => {
  test("connects with an app JWT and an installation token, and syncs every page of repositories", async () => {
    const created = await createGithubIntegration(t, owner, host);
    expect(created.repositories_synced).toBe(3);
    expect(created.sync_error).toBeNull();
    expect(created.integration).toMatchObject({ provider: "github", name: "GitHub (stand-in)", api_url: host.url, app_id: host.github.appId, installation_id: host.github.installationId });
    expect(created.integration.last_synced_at).toBe(t.clock.now());
    // The installation token was requested with a JWT, then the repositories with the token, over two pages.
    const paths = host.requests.map((r) => r.path);
    expect(paths.filter((p) => p.startsWith("/installation/repositories")).length).toBe(2);
  });

  test("credentials are sealed at rest and never returned", async () => {
    const rows = await t.db.execute("SELECT credentials_sealed FROM integrations");
    for (const row of rows.rows) {
      expect(String(row.credentials_sealed)).toStartWith("v1.");
      expect(String(row.credentials_sealed)).not.toContain("PRIVATE KEY");
    }
    const listed = await t.call("GET", "/v1/integrations", { token: owner });
    expect(listed.text).not.toContain("PRIVATE KEY");
    expect(listed.text).not.toContain("a-webhook-secret");
  });
});

describe("GitLab integration", () => {
  test("connects with an access token and follows x-next-page", async () => {
    const res = await t.call("POST", "/v1/integrations", { token: owner, body: { provider: "gitlab", name: "GitLab (stand-in)", api_url: host.url, access_token: host.gitlab.token } });
    expect(res.status).toBe(201);
    expect(res.body.repositories_synced).toBe(2);
    expect(res.text).not.toContain(host.gitlab.token);
  });

  test("a refused sync keeps the integration, says why, and raises one incident that counts occurrences", async () => {
    const res = await t.call("POST", "/v1/integrations", { token: owner, body: { provider: "gitlab", name: "Wrong token", api_url: host.url, access_token: "wrong" } });
    expect(res.status).toBe(201);
    expect(res.body.repositories_synced).toBe(0);
    expect(res.body.sync_error).toContain("401");
    const again = await t.call("POST", `/v1/integrations/${res.body.integration.id}/sync`, { token: owner });
    expect(again.status).toBe(502);
    expect(again.body.code).toBe("source_host_error");
    const incidents = await t.call("GET", "/v1/operator-incidents?status=open", { token: owner });
    const incident = incidents.body.incidents.find((i: { resource_id: string }) => i.resource_id === res.body.integration.id);
    expect(incident).toMatchObject({ reason: "integration_sync_failed", resource_kind: "integration", resource_name: "Wrong token", occurrence_count: 2, status: "open", read_at: null });
  });
});

describe("the catalogue", () => {
  test("q, limit, offset and total", async () => {
    const all = await t.call("GET", "/v1/integration-repositories", { token: owner });
    expect(all.body.total).toBe(5);
    const acme = await t.call("GET", "/v1/integration-repositories?q=ACME&limit=2&offset=1", { token: owner });
    expect(acme.body.total).toBe(3);
    expect(acme.body.repositories.map((r: { full_name: string }) => r.full_name)).toEqual(["acme/flutter-kit", "acme/website"]);
    expect(acme.body.repositories[0]).toMatchObject({ provider: "github", external_id: "1003", default_branch: "develop", is_private: true, installation_id: host.github.installationId });
  });

  test("a re-sync updates known repositories instead of duplicating them", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const github = list.body.integrations.find((i: { provider: string }) => i.provider === "github");
    host.github.repos[0]!.default_branch = "trunk";
    const res = await t.call("POST", `/v1/integrations/${github.id}/sync`, { token: owner });
    expect(res.body).toEqual({ repositories_synced: 3 });
    const after = await t.call("GET", "/v1/integration-repositories?q=acme/app", { token: owner });
    expect(after.body.total).toBe(1);
    expect(after.body.repositories[0].default_branch).toBe("trunk");
    host.github.repos[0]!.default_branch = "main";
  });

  test("developers cannot browse the catalogue; maintainers can", async () => {
    const dev = await userWithRole(t, owner, "developer");
    expect((await t.call("GET", "/v1/integration-repositories", { token: dev.token })).status).toBe(403);
    const maintainer = await userWithRole(t, owner, "maintainer");
    expect((await t.call("GET", "/v1/integration-repositories", { token: maintainer.token })).status).toBe(200);
  });

  test("an integration whose repositories a project builds cannot be deleted", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const github = list.body.integrations.find((i: { provider: string }) => i.provider === "github");
    await createProject(t, owner, "acme/website");
    const res = await t.call("DELETE", `/v1/integrations/${github.id}`, { token: owner });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("integration_in_use");
  });
});

describe("outbound requests", () => {
  test("only the configured host is contacted: a pagination link to another origin is refused", async () => {
    let calls = 0;
    const fetchImpl = async (url: string) => {
      calls++;
      if (url.includes("access_tokens")) return new Response(JSON.stringify({ token: "x", expires_at: new Date(Date.now() + 3600_000).toISOString() }), { status: 201 });
      return new Response(JSON.stringify({ repositories: [] }), { headers: { link: '<http://169.254.169.254/latest/meta-data>; rel="next"' } });
    };
    const client = new GithubClient({ api_url: "https://api.github.example.test", app_id: "1", installation_id: "9" }, { private_key: host.github.privateKeyPem, webhook_secret: "x" }, fetchImpl as never);
    await expect(client.listRepositories()).rejects.toThrow("not the configured host");
    expect(calls).toBe(2);
  });
});
