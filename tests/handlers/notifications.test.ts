// Build notifications (docs/notifications.md) against real receivers: an HTTP server for the Slack
// and signed JSON webhooks, and aiosmtpd (a real SMTP server with STARTTLS and AUTH) for e-mail.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { verify } from "@octokit/webhooks-methods";
import { bootstrapOwner, createTestApp, type TestApp } from "../helpers/app.ts";
import { startHostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createGithubIntegration, createPipeline, createProject, seedStandIn, startGithubFixture, type GithubFixture } from "../helpers/ci.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";
import { dispatchNotifications, ATTEMPTS_BEFORE_INCIDENT } from "../../lib/notifications/notifications.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { startSmtpServer, type SmtpServer } from "../support/smtp.ts";

interface Received {
  path: string;
  headers: Record<string, string>;
  raw: string;
  body: any;
}

let fixture: GithubFixture;
let t: TestApp;
let owner: string;
let receiver: ReturnType<typeof Bun.serve>;
let received: Received[] = [];
let failNext = 0;
const BASE = "http://roost.example.test";
const SECRET = "a-signing-secret-of-some-length";

beforeAll(async () => {
  ({ t, owner } = fixture = await startGithubFixture());
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const raw = await request.text();
      if (failNext > 0) {
        failNext--;
        return new Response("down for maintenance", { status: 503 });
      }
      received.push({ path: new URL(request.url).pathname, headers: Object.fromEntries(request.headers), raw, body: JSON.parse(raw) });
      return new Response("ok");
    },
  });
});
afterAll(async () => {
  receiver.stop(true);
  await fixture.stop();
});

const hook = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;

async function finishedBuild(pipelineId: string, branch: string, outcome: "succeed" | "fail" | "cancel", triggerEvent?: "tag") {
  const { build } = await createBuild(t.ctx, {
    pipelineId,
    branch,
    commitSha: SHA_A,
    triggerType: triggerEvent ? "webhook" : "manual",
    triggerEvent,
    concurrencyKey: null,
  });
  if (outcome !== "cancel") await transitionBuild(t.ctx, build.id, "start");
  await transitionBuild(t.ctx, build.id, outcome, outcome === "fail" ? { exit_code: 1, failure_reason: "step test exited with 1" } : {});
  return build;
}

async function setup(notification: Record<string, unknown>) {
  const project = await createProject(t, owner);
  const pipeline = await createPipeline(t, owner, project.id);
  const res = await t.call("POST", `/v1/projects/${project.id}/notifications`, { token: owner, body: notification });
  expect(res.status).toBe(201);
  return { project, pipeline, notification: res.body.notification };
}

async function drain() {
  for (let i = 0; i < 3; i++) await dispatchNotifications(t.ctx, BASE);
}

describe("configuration", () => {
  test("secrets are sealed at rest and never returned; what is returned names the channel's host", async () => {
    const url = hook("/slack/T000/B000/XXXXXXXXsecretpart");
    const { project, notification } = await setup({ name: "team chat", channel: "slack", events: ["failed", "fixed"], branches: ["main"], slack: { url } });
    expect(notification).toEqual({
      id: notification.id,
      project_id: project.id,
      name: "team chat",
      channel: "slack",
      events: ["failed", "fixed"],
      branches: ["main"],
      config: { url_host: `127.0.0.1:${receiver.port}` },
      enabled: true,
      health: { last_delivered_at: null, failing: false, last_error: null },
      created_at: t.clock.now(),
      updated_at: t.clock.now(),
    });
    const listed = await t.call("GET", `/v1/projects/${project.id}/notifications`, { token: owner });
    expect(listed.text).not.toContain("secretpart");
    const stored = await t.db.execute("SELECT * FROM notifications WHERE id = ?", [notification.id]);
    expect(JSON.stringify(stored.rows)).not.toContain("secretpart");
    // Changing another field keeps the sealed URL.
    const patched = await t.call("PATCH", `/v1/projects/${project.id}/notifications/${notification.id}`, { token: owner, body: { events: ["failed"] } });
    expect(patched.status).toBe(200);
    expect(patched.text).not.toContain("secretpart");
    const wrongChannel = await t.call("PATCH", `/v1/projects/${project.id}/notifications/${notification.id}`, {
      token: owner,
      body: { email: { host: "smtp.example.test" } },
    });
    expect(wrongChannel.status).toBe(400);
    expect(wrongChannel.body).toEqual({
      code: "invalid_request",
      message: "This notification's channel is slack; send slack settings (the channel cannot change).",
      details: [{ path: "body.email", message: "not a slack setting" }],
    });
  });

  test("an unknown event or a short signing secret answers 400 naming the field", async () => {
    const project = await createProject(t, owner);
    const res = await t.call("POST", `/v1/projects/${project.id}/notifications`, {
      token: owner,
      body: { name: "x", channel: "webhook", events: ["exploded"], webhook: { url: hook("/x"), secret: "short" } },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["body.events.0", "body.webhook.secret"]);
  });
});

describe("link-local and cloud metadata addresses (the integrations' address policy)", () => {
  const refused = "a link-local address (169.254.0.0/16, where cloud metadata services answer)";
  test.each([
    ["webhook", { url: "http://169.254.169.254/latest/meta-data/", secret: SECRET }, "body.webhook.url", refused],
    ["webhook", { url: "http://[::ffff:169.254.169.254]/", secret: SECRET }, "body.webhook.url", refused],
    ["webhook", { url: "http://[fd00:ec2::254]/latest", secret: SECRET }, "body.webhook.url", "a cloud metadata address (fd00:ec2::254)"],
    ["slack", { url: "http://metadata.google.internal/computeMetadata/v1/" }, "body.slack.url", "a cloud metadata service name"],
    ["slack", { url: "https://[fe80::1]/hooks/x" }, "body.slack.url", "a link-local address (fe80::/10)"],
    ["email", { host: "169.254.169.254", port: 25, security: "none", from: "ci@example.test", to: ["dev@example.test"] }, "body.email.host", refused],
  ])("a %s channel at %p is refused with 400 when created, and nothing is stored", async (channel, settings, path, reason) => {
    const project = await createProject(t, owner);
    const res = await t.call("POST", `/v1/projects/${project.id}/notifications`, {
      token: owner,
      body: { name: "metadata", channel, events: ["failed"], [channel]: settings },
    });
    const message = `must not be ${reason} unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true`;
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_request", message: `The body is not valid: ${path}: ${message}`, details: [{ path, message }] });
    expect((await t.call("GET", `/v1/projects/${project.id}/notifications`, { token: owner })).body.notifications).toEqual([]);
  });

  test("changing a URL to a metadata address is refused with 400 and the stored URL is kept", async () => {
    const { project, pipeline, notification } = await setup({
      name: "hook",
      channel: "webhook",
      events: ["failed"],
      webhook: { url: hook("/kept"), secret: SECRET },
    });
    const res = await t.call("PATCH", `/v1/projects/${project.id}/notifications/${notification.id}`, {
      token: owner,
      body: { webhook: { url: "http://169.254.169.254/latest/meta-data/iam/" } },
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: "body.webhook.url", message: `must not be ${refused} unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true` }]);
    received = [];
    await finishedBuild(pipeline.id, "main", "fail");
    await drain();
    expect(received.map((r) => r.path)).toEqual(["/kept"]);
  });

  test("ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true lets them be saved", async () => {
    const allowing = await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "true" });
    try {
      const admin = await bootstrapOwner(allowing);
      const other = await startHostApiStandIn();
      seedStandIn(other);
      await createGithubIntegration(allowing, admin, other);
      const project = await createProject(allowing, admin);
      const res = await allowing.call("POST", `/v1/projects/${project.id}/notifications`, {
        token: admin,
        body: { name: "metadata", channel: "webhook", events: ["failed"], webhook: { url: "http://169.254.169.254/hook", secret: SECRET } },
      });
      expect(res.status).toBe(201);
      await other.stop();
    } finally {
      allowing.close();
    }
  });
});

describe("delivery", () => {
  test("Slack-compatible webhook: failed, then fixed (first success after a failure, canceled builds between passed over), not plain successes; other branches are ignored", async () => {
    received = [];
    const { project, pipeline } = await setup({
      name: "chat",
      channel: "slack",
      events: ["failed", "fixed"],
      branches: ["main"],
      slack: { url: hook("/slack") },
    });
    const failed = await finishedBuild(pipeline.id, "main", "fail");
    await finishedBuild(pipeline.id, "feature/x", "fail");
    await finishedBuild(pipeline.id, "main", "cancel");
    await drain();
    const fixed = await finishedBuild(pipeline.id, "main", "succeed");
    await finishedBuild(pipeline.id, "main", "succeed");
    await drain();
    expect(received.map((r) => r.path)).toEqual(["/slack", "/slack"]);
    expect(received[0]!.body).toEqual({
      text: `${project.name} / ${pipeline.name} #${failed.build_number} failed on main (aaaaaaa)\n${BASE}/v1/builds/${failed.id}\nstep test exited with 1`,
    });
    expect(received[1]!.body).toEqual({
      text: `${project.name} / ${pipeline.name} #${fixed.build_number} is fixed on main (aaaaaaa)\n${BASE}/v1/builds/${fixed.id}`,
    });
  });

  test("a plain branch pattern never announces a tag of the same name; tags are named as refs/tags/<pattern>", async () => {
    received = [];
    const { pipeline } = await setup({
      name: "releases",
      channel: "slack",
      events: ["failed"],
      branches: ["main", "refs/tags/v*"],
      slack: { url: hook("/slack-tags") },
    });
    await finishedBuild(pipeline.id, "main", "fail", "tag"); // a tag someone named "main"
    const release = await finishedBuild(pipeline.id, "v1.2.0", "fail", "tag");
    await finishedBuild(pipeline.id, "v1.2.0", "fail"); // a branch named like the tag pattern
    const branch = await finishedBuild(pipeline.id, "main", "fail");
    await drain();
    // Deliveries of one pass go out in any order: compare the set of builds announced.
    const announced = received.filter((r) => r.path === "/slack-tags").map((r) => r.body.text.split("\n")[1]);
    expect(announced.sort()).toEqual([`${BASE}/v1/builds/${release.id}`, `${BASE}/v1/builds/${branch.id}`].sort());
    const bad = await t.call("POST", `/v1/projects/${pipeline.project_id}/notifications`, {
      token: owner,
      body: { name: "x", channel: "slack", events: ["failed"], branches: ["refs/pull/*"], slack: { url: hook("/slack") } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("refs/tags/");
  });

  test("JSON webhook signed with HMAC-SHA256 like GitHub's; canceled and succeeded events", async () => {
    received = [];
    const { pipeline, notification } = await setup({
      name: "ci bot",
      channel: "webhook",
      events: ["succeeded", "canceled"],
      webhook: { url: hook("/hooks/roost"), secret: SECRET },
    });
    const ok = await finishedBuild(pipeline.id, "main", "succeed");
    const canceled = await finishedBuild(pipeline.id, "develop", "cancel");
    await drain();
    expect(received).toHaveLength(2);
    for (const r of received) {
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["x-roost-signature-256"]).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(await verify(SECRET, r.raw, r.headers["x-roost-signature-256"]!)).toBe(true);
      expect(await verify("another-secret-entirely", r.raw, r.headers["x-roost-signature-256"]!)).toBe(false);
    }
    const byEvent = Object.fromEntries(received.map((r) => [r.headers["x-roost-event"], r.body]));
    expect(byEvent["build.succeeded"]).toMatchObject({
      event: "succeeded",
      build: { id: ok.id, status: "succeeded", branch: "main", commit_sha: SHA_A, url: `${BASE}/v1/builds/${ok.id}` },
      pipeline: { id: pipeline.id },
    });
    expect(byEvent["build.canceled"]).toMatchObject({ event: "canceled", build: { id: canceled.id, status: "canceled", branch: "develop" } });
    const deliveries = await t.call("GET", `/v1/projects/${notification.project_id}/notifications/${notification.id}/deliveries`, { token: owner });
    expect(deliveries.body.deliveries.map((d: { status: string; attempts: number }) => [d.status, d.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
    ]);
  });

  test("a refusing receiver is retried with backoff; failures are visible per notification and raise an incident when persistent; a success resolves it", async () => {
    received = [];
    const { project, pipeline, notification } = await setup({
      name: "flaky",
      channel: "webhook",
      events: ["failed"],
      webhook: { url: hook("/flaky"), secret: SECRET },
    });
    await finishedBuild(pipeline.id, "main", "fail");
    failNext = ATTEMPTS_BEFORE_INCIDENT;
    await dispatchNotifications(t.ctx, BASE);
    let read = await t.call("GET", `/v1/projects/${project.id}/notifications/${notification.id}/deliveries`, { token: owner });
    expect(read.body.deliveries[0]).toMatchObject({ status: "pending", attempts: 1, last_error: "the receiver answered HTTP 503" });
    expect(read.body.deliveries[0].next_attempt_at).toBeGreaterThan(t.clock.now());
    // Not due yet: nothing is sent.
    await dispatchNotifications(t.ctx, BASE);
    expect((await t.call("GET", `/v1/projects/${project.id}/notifications/${notification.id}/deliveries`, { token: owner })).body.deliveries[0].attempts).toBe(
      1,
    );
    for (let i = 1; i < ATTEMPTS_BEFORE_INCIDENT; i++) {
      t.clock.advance(7200);
      await dispatchNotifications(t.ctx, BASE);
    }
    const health = (await t.call("GET", `/v1/projects/${project.id}/notifications/${notification.id}`, { token: owner })).body.notification.health;
    expect(health).toEqual({ last_delivered_at: null, failing: true, last_error: "the receiver answered HTTP 503" });
    let incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents.filter(
      (i: { resource_id: string }) => i.resource_id === notification.id,
    );
    expect(incidents).toHaveLength(1);
    expect(incidents[0]).toMatchObject({ reason: "notification_failing", resource_kind: "notification", resource_name: "flaky", severity: "warning" });
    expect(incidents[0].message).toBe(`Notification "flaky" cannot be delivered (${ATTEMPTS_BEFORE_INCIDENT} attempts): the receiver answered HTTP 503`);
    t.clock.advance(7200);
    await dispatchNotifications(t.ctx, BASE);
    expect(received.map((r) => r.path)).toEqual(["/flaky"]);
    read = await t.call("GET", `/v1/projects/${project.id}/notifications/${notification.id}/deliveries`, { token: owner });
    expect(read.body.deliveries[0]).toMatchObject({ status: "delivered", attempts: ATTEMPTS_BEFORE_INCIDENT + 1, last_error: null, next_attempt_at: null });
    incidents = (await t.call("GET", "/v1/operator-incidents?status=open", { token: owner })).body.incidents.filter(
      (i: { resource_id: string }) => i.resource_id === notification.id,
    );
    expect(incidents).toHaveLength(0);
  });

  test("the outbox is in the database: a build finished before a restart is notified by the next process", async () => {
    received = [];
    const { pipeline } = await setup({ name: "durable", channel: "webhook", events: ["failed"], webhook: { url: hook("/durable"), secret: SECRET } });
    const build = await finishedBuild(pipeline.id, "main", "fail");
    // Another connection to the same file stands for a daemon started after this one stopped.
    const next = await openDatabase(t.config.databaseUrl);
    try {
      await dispatchNotifications({ ...t.ctx, db: next }, BASE);
      await dispatchNotifications({ ...t.ctx, db: next }, BASE);
    } finally {
      next.close();
    }
    await drain();
    expect(received.map((r) => [r.path, r.body.build.id])).toEqual([["/durable", build.id]]);
  });
});

describe("e-mail over SMTP", () => {
  let smtp: SmtpServer;
  beforeAll(async () => {
    smtp = await startSmtpServer();
  });
  afterAll(() => smtp.stop());
  const mail = () => smtp.mail();

  test("delivered with STARTTLS and AUTH; the password is never returned; a wrong password is a visible failure", async () => {
    const { project, pipeline, notification } = await setup({
      name: "mail the team",
      channel: "email",
      events: ["failed"],
      email: smtp.settings(["team@example.test", "lead@example.test"]),
    });
    expect(notification.config).toMatchObject({
      host: "127.0.0.1",
      port: smtp.port,
      security: "starttls",
      username: "roost",
      from: "roost@example.test",
      to: ["team@example.test", "lead@example.test"],
    });
    expect(JSON.stringify(notification)).not.toContain("smtp-password");
    const build = await finishedBuild(pipeline.id, "main", "fail");
    await drain();
    const [message] = mail();
    expect(message).toMatchObject({ mail_from: "roost@example.test", rcpt_tos: ["team@example.test", "lead@example.test"], tls: true, auth_user: "roost" });
    expect(message.subject).toBe(`[Roost] ${project.name} / ${pipeline.name} #${build.build_number} failed on main (aaaaaaa)`);
    expect(message.headers["x-roost-event"]).toBe("build.failed");
    expect(message.body).toBe(
      [
        `${project.name} / ${pipeline.name} #${build.build_number} failed on main (aaaaaaa)`,
        "",
        `Project:  ${project.name} (acme/app)`,
        `Pipeline: ${pipeline.name}`,
        `Build:    #${build.build_number}, failed`,
        "Branch:   main",
        `Commit:   ${SHA_A}`,
        "Reason:   step test exited with 1",
        "",
        `${BASE}/v1/builds/${build.id}`,
        "",
      ].join("\n"),
    );

    const patched = await t.call("PATCH", `/v1/projects/${project.id}/notifications/${notification.id}`, {
      token: owner,
      body: { email: { password: "wrong" } },
    });
    expect(patched.status).toBe(200);
    t.clock.advance(60);
    await finishedBuild(pipeline.id, "main", "fail");
    await dispatchNotifications(t.ctx, BASE);
    const deliveries = (await t.call("GET", `/v1/projects/${project.id}/notifications/${notification.id}/deliveries`, { token: owner })).body.deliveries;
    expect(deliveries[0]).toMatchObject({ status: "pending", attempts: 1 });
    expect(deliveries[0].last_error).toContain("535");
    expect(mail()).toHaveLength(1);
  });
});
