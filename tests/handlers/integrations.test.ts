// Source integrations and the repository catalogue (docs/api.md "Source integrations"), against the host API stand-in.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, userWithRole, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { createGithubIntegration, createProject, seedStandIn } from "../helpers/ci.ts";
import { GithubClient } from "../../lib/forges/github/api.ts";
import { hostRefusal, refusedHostReason } from "../../lib/net/address-policy.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, REPO_ROOT } from "../helpers/daemon.ts";

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
    expect(created.integration).toMatchObject({
      provider: "github",
      name: "GitHub (stand-in)",
      api_url: host.url,
      app_id: host.github.appId,
      installation_id: host.github.installationId,
    });
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
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitlab", name: "GitLab (stand-in)", api_url: host.url, access_token: host.gitlab.token },
    });
    expect(res.status).toBe(201);
    expect(res.body.repositories_synced).toBe(2);
    expect(res.text).not.toContain(host.gitlab.token);
  });

  test("a refused sync keeps the integration, says why, and raises one incident that counts occurrences", async () => {
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitlab", name: "Wrong token", api_url: host.url, access_token: "wrong" },
    });
    expect(res.status).toBe(201);
    expect(res.body.repositories_synced).toBe(0);
    expect(res.body.sync_error).toContain("401");
    const again = await t.call("POST", `/v1/integrations/${res.body.integration.id}/sync`, { token: owner });
    expect(again.status).toBe(502);
    expect(again.body.code).toBe("source_host_error");
    const incidents = await t.call("GET", "/v1/operator-incidents?status=open", { token: owner });
    const incident = incidents.body.incidents.find((i: { resource_id: string }) => i.resource_id === res.body.integration.id);
    expect(incident).toMatchObject({
      reason: "integration_sync_failed",
      resource_kind: "integration",
      resource_name: "Wrong token",
      occurrence_count: 2,
      status: "open",
      read_at: null,
    });
    // The advice names the web app's button, where the person reading it is.
    expect(incident.repair_action).toBe(
      "Check the integration's host URL and credentials, then press Sync now beside it under Administration → Integrations (the API: POST /v1/integrations/{id}/sync).",
    );
  });

  test("removing an integration resolves its open incidents: nothing is left to repair", async () => {
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitlab", name: "Soon removed", api_url: host.url, access_token: "wrong" },
    });
    const id = res.body.integration.id;
    const open = async () =>
      (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents.filter((i: { resource_id: string }) => i.resource_id === id);
    expect(await open()).toHaveLength(1);
    const removed = await t.call("DELETE", `/v1/integrations/${id}`, { token: owner });
    expect(removed.body).toEqual({ deleted: true });
    expect(await open()).toEqual([]);
    const resolved = (await t.call("GET", "/v1/operator-incidents?status=resolved", { token: owner })).body.incidents.find(
      (i: { resource_id: string }) => i.resource_id === id,
    );
    expect(resolved).toMatchObject({ reason: "integration_sync_failed", status: "resolved", resolved_at: t.clock.now() });
  });
});

describe("the catalogue", () => {
  test("q, limit, offset and total", async () => {
    const all = await t.call("GET", "/v1/integration-repositories", { token: owner });
    expect(all.body.total).toBe(5);
    const acme = await t.call("GET", "/v1/integration-repositories?q=ACME&limit=2&offset=1", { token: owner });
    expect(acme.body.total).toBe(3);
    expect(acme.body.repositories.map((r: { full_name: string }) => r.full_name)).toEqual(["acme/flutter-kit", "acme/website"]);
    expect(acme.body.repositories[0]).toMatchObject({
      provider: "github",
      external_id: "1003",
      default_branch: "develop",
      is_private: true,
      installation_id: host.github.installationId,
    });
  });

  test("a re-sync updates known repositories instead of duplicating them", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const github = list.body.integrations.find((i: { provider: string }) => i.provider === "github");
    host.github.repos[0]!.default_branch = "trunk";
    const res = await t.call("POST", `/v1/integrations/${github.id}/sync`, { token: owner });
    expect(res.body).toEqual({ repositories_synced: 3, sync_warnings: [] });
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
      if (url.includes("access_tokens"))
        return new Response(JSON.stringify({ token: "x", expires_at: new Date(Date.now() + 3600_000).toISOString() }), { status: 201 });
      return new Response(JSON.stringify({ repositories: [] }), { headers: { link: '<http://169.254.169.254/latest/meta-data>; rel="next"' } });
    };
    const client = new GithubClient(
      { api_url: "https://api.github.example.test", app_id: "1", installation_id: "9" },
      { private_key: host.github.privateKeyPem, webhook_secret: "x" },
      { fetch: fetchImpl as never, allowLinkLocal: false, now: () => t.clock.now(), tokens: new Map() },
    );
    await expect(client.listRepositories()).rejects.toThrow("not the configured host");
    expect(calls).toBe(2);
  });
});

describe("what a host's failure shows, and to whom", () => {
  // A host that answers every request with an error page full of things users must not see.
  let leaky: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    leaky = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response('{"message":"db=postgres://admin:hunter2@10.0.0.9 AKIAEXAMPLESECRET"}', { status: 500, headers: { "content-type": "application/json" } }),
    });
  });
  afterAll(() => leaky.stop(true));

  test("sync_error, the sync answer and the incident carry a status and a short reason, never the host's body", async () => {
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitlab", name: "Leaky", api_url: `http://127.0.0.1:${leaky.port}`, access_token: "t" },
    });
    expect(res.status).toBe(201);
    expect(res.body.sync_error).toBe(`127.0.0.1:${leaky.port} answered HTTP 500 (the host had an error)`);
    const again = await t.call("POST", `/v1/integrations/${res.body.integration.id}/sync`, { token: owner });
    expect(again.body).toEqual({ code: "source_host_error", message: `127.0.0.1:${leaky.port} answered HTTP 500 (the host had an error)` });
    const incidents = await t.call("GET", "/v1/operator-incidents", { token: owner });
    expect(incidents.text).not.toContain("hunter2");
    expect(incidents.text).not.toContain("AKIA");
  });

  test("an unreachable host says so without the connection error's text", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = closed.port;
    await closed.stop(true);
    const res = await t.call("POST", "/v1/integrations", {
      token: owner,
      body: { provider: "gitlab", name: "Gone", api_url: `http://127.0.0.1:${port}`, access_token: "t" },
    });
    expect(res.body.sync_error).toBe(`cannot reach 127.0.0.1:${port}: the connection failed`);
  });

  test("only admins see why a sync failed; maintainers see that it failed", async () => {
    const maintainer = await userWithRole(t, owner, "maintainer");
    const asMaintainer = await t.call("GET", "/v1/integrations", { token: maintainer.token });
    const leakyForMaintainer = asMaintainer.body.integrations.find((i: { name: string }) => i.name === "Leaky");
    expect(leakyForMaintainer).toMatchObject({ last_sync_error: null, last_sync_failed: true });
    expect(asMaintainer.text).not.toContain("answered HTTP");
    const asOwner = await t.call("GET", "/v1/integrations", { token: owner });
    const leakyForOwner = asOwner.body.integrations.find((i: { name: string }) => i.name === "Leaky");
    expect(leakyForOwner).toMatchObject({ last_sync_error: `127.0.0.1:${leaky.port} answered HTTP 500 (the host had an error)`, last_sync_failed: true });
    const healthy = asMaintainer.body.integrations.find((i: { provider: string }) => i.provider === "github");
    expect(healthy).toMatchObject({ last_sync_error: null, last_sync_failed: false });
  });
});

describe("link-local and cloud metadata addresses", () => {
  for (const apiUrl of [
    "http://169.254.169.254",
    "http://169.254.10.1:8080/api",
    "http://2852039166",
    "http://[::ffff:169.254.169.254]",
    "http://[fe80::1]",
    "http://[fd00:ec2::254]",
    "http://metadata.google.internal",
    "http://METADATA.google.internal./computeMetadata/v1",
  ]) {
    test(`api_url ${apiUrl} is refused with 400 and nothing is stored`, async () => {
      const before = (await t.call("GET", "/v1/integrations", { token: owner })).body.integrations.length;
      const res = await t.call("POST", "/v1/integrations", {
        token: owner,
        body: { provider: "gitlab", name: "Metadata", api_url: apiUrl, access_token: "t" },
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_request");
      expect(res.body.details).toHaveLength(1);
      expect(res.body.details[0].path).toBe("body.api_url");
      expect(res.body.details[0].message).toEndWith("unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true");
      expect((await t.call("GET", "/v1/integrations", { token: owner })).body.integrations.length).toBe(before);
    });
  }

  // Needs root for its own network and mount namespaces (CI and this machine run as root); it
  // fails rather than skips when it cannot create them.
  test("a name that resolves to the metadata address is refused when saved and again before each request; ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true lets it through", async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-hosts-"));
    const hostsFile = join(dir, "hosts");
    writeFileSync(hostsFile, "127.0.0.1 localhost\n169.254.169.254 meta-alias.roost.test\n");
    const script = `ip link set lo up && ip addr add 169.254.169.254/32 dev lo && mount --bind ${hostsFile} /etc/hosts && exec ${BUN} tests/support/metadata-probe.ts`;
    // Bun caches DNS answers (30 s by default); the probe changes /etc/hosts between two lookups.
    const child = Bun.spawn(["unshare", "--net", "--mount", "sh", "-c", script], {
      cwd: REPO_ROOT,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, BUN_CONFIG_DNS_TIME_TO_LIVE_SECONDS: "0" },
    });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    rmSync(dir, { recursive: true, force: true });
    if (code !== 0) throw new Error(`metadata probe failed (${code}): ${err}`);
    const unexpected = "sync failed: the host's answer was not what Roost expected";
    const byName =
      "must not be a name that resolves to a link-local address (169.254.0.0/16, where cloud metadata services answer) unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true";
    expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({
      allow_false: {
        // The name is resolved when the integration or the notification is saved: 400, nothing contacted.
        by_name: { status: 400, sync_error: null, code: "invalid_request", reached: 0 },
        by_address: { status: 400, sync_error: null, code: "invalid_request", reached: 0 },
        notification_by_name: { status: 400, message: byName },
        // Saved while it resolved nowhere; resolved again before the sync's request and refused.
        resolved_later: {
          created: 201,
          sync: 502,
          message:
            "refusing to contact late-alias.roost.test: it is a name that resolves to a link-local address (169.254.0.0/16, where cloud metadata services answer) (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL)",
          reached: 0,
        },
      },
      allow_true: {
        // Allowed, the host is reached; its body (not a project list) still never reaches the user.
        by_name: { status: 201, sync_error: unexpected, code: null, reached: 1 },
        by_address: { status: 201, sync_error: unexpected, code: null, reached: 1 },
        notification_by_name: { status: 201, message: null },
      },
    });
  }, 30_000);

  test("private networks and loopback stay allowed (self-hosted GitLab)", async () => {
    for (const host of ["10.0.0.5", "172.16.3.4", "192.168.1.20", "[fd12:3456::1]", "127.0.0.1", "gitlab.internal.example.test"]) {
      expect(refusedHostReason(new URL(`http://${host}`).hostname)).toBeNull();
      expect(await hostRefusal(new URL(`http://${host}`).hostname, false)).toBeNull();
    }
  });
});

// A host's answer has no length limit Roost can rely on: the catalogue gets a webhook delivery's
// limits on names (docs/webhooks.md "Limits"), never cut, which would name another branch.
describe("names a host lists over their limits", () => {
  const longBranch = `release/${"b".repeat(300)}`;

  test("a default branch over 255 characters is not kept: the repository is, the sync says why, a project on it must name its branch", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const github = list.body.integrations.find((i: { provider: string }) => i.provider === "github");
    host.github.repos.push({ id: 1090, full_name: "acme/long-default", default_branch: longBranch, private: true });
    try {
      const res = await t.call("POST", `/v1/integrations/${github.id}/sync`, { token: owner });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 200,
        body: {
          repositories_synced: 4,
          sync_warnings: [`acme/long-default: the default branch name is ${longBranch.length} characters, over 255: not kept`],
        },
      });
      const listed = await t.call("GET", "/v1/integration-repositories?q=acme/long-default", { token: owner });
      expect(listed.body.repositories).toMatchObject([{ full_name: "acme/long-default", external_id: "1090", default_branch: "" }]);
      const repositoryId = listed.body.repositories[0].id;

      const refused = await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repositoryId } });
      expect({ status: refused.status, code: refused.body.code, message: refused.body.message }).toEqual({
        status: 400,
        code: "invalid_request",
        message: "The repository's default branch was not kept when its catalogue was synced (its name is over 255 characters); send default_branch.",
      });
      const named = await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repositoryId, default_branch: "main" } });
      expect({ status: named.status, default_branch: named.body.project?.default_branch }).toEqual({ status: 201, default_branch: "main" });
    } finally {
      host.github.repos.pop();
    }
  });

  test("a sync that leaves out many repositories names the first 20 and says how many more", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const gitlab = list.body.integrations.find((i: { provider: string; last_sync_failed: boolean }) => i.provider === "gitlab" && !i.last_sync_failed);
    const many = Array.from({ length: 25 }, (_, i) => ({
      id: 200 + i,
      full_name: `group/${String(i).padStart(2, "0")}${"n".repeat(1100)}`,
      default_branch: "main",
      private: true,
    }));
    host.gitlab.repos.push(...many);
    try {
      const res = await t.call("POST", `/v1/integrations/${gitlab.id}/sync`, { token: owner });
      expect(res.status).toBe(200);
      expect(res.body.repositories_synced).toBe(2);
      expect(res.body.sync_warnings).toHaveLength(21);
      expect(res.body.sync_warnings[0]).toStartWith("group/00");
      expect(res.body.sync_warnings[20]).toBe("and 5 more repositories stored in part or left out for the same reasons");
    } finally {
      host.gitlab.repos.splice(-many.length);
    }
  });

  test("GitLab: a repository whose full name is over 1,024 characters is left out, the sync says why; the others are stored", async () => {
    const list = await t.call("GET", "/v1/integrations", { token: owner });
    const gitlab = list.body.integrations.find((i: { provider: string; last_sync_failed: boolean }) => i.provider === "gitlab" && !i.last_sync_failed);
    const fullName = `group/${"n".repeat(1100)}`;
    host.gitlab.repos.push({ id: 90, full_name: fullName, default_branch: "main", private: true });
    try {
      const res = await t.call("POST", `/v1/integrations/${gitlab.id}/sync`, { token: owner });
      expect(res.status).toBe(200);
      expect(res.body.repositories_synced).toBe(2);
      expect(res.body.sync_warnings).toEqual([`${fullName.slice(0, 1023)}…: the repository name is ${fullName.length} characters, over 1024: not listed`]);
      const listed = await t.call("GET", `/v1/integration-repositories?q=${"n".repeat(50)}`, { token: owner });
      expect(listed.body.total).toBe(0);
    } finally {
      host.gitlab.repos.pop();
    }
  });
});
