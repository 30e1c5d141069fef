// Approvers hear of a deployment waiting for approval (docs/notifications.md "Approvals"): a
// notification that wants `approval_requested` gets one message per waiting deployment (after a
// build, and after a promotion), over a signed webhook, a Slack-compatible hook and e-mail, the
// e-mail going to the environment's approvers as well; what needs no approval, and notifications
// that do not want the event, stay quiet. Receivers are local HTTP servers and aiosmtpd, a real
// SMTP server (tests/support/smtp.ts), as in notifications.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { verify } from "@octokit/webhooks-methods";
import { loginCapability, userWithRole, type TestApp } from "../helpers/app.ts";
import { createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import { connectRunner, putEnvironment, runBuild } from "../helpers/publishing.ts";
import { dispatchNotifications } from "../../lib/notifications/notifications.ts";
import { startSmtpServer, type SmtpServer } from "../support/smtp.ts";

const BASE = "http://roost.example.test";
const SECRET = "a-signing-secret-of-some-length";
const APPROVER = "release-manager@example.test";
const PUBLISHERS = [
  { type: "google_play", name: "play", environment: "testers", package_name: "com.example.app", track: "internal" },
  { type: "google_play", name: "play-production", environment: "production", package_name: "com.example.app", track: "production" },
];

let ci: CiFixture;
let t: TestApp;
let owner: string;
let projectId: string;
let receiver: ReturnType<typeof Bun.serve>;
const received: { path: string; headers: Record<string, string>; raw: string; body: any }[] = [];
let smtp: SmtpServer;
const notifications: Record<string, string> = {};

const hook = (path: string) => `http://127.0.0.1:${receiver.port}${path}`;
const mail = () => smtp.mail();

async function drain() {
  for (let i = 0; i < 3; i++) await dispatchNotifications(t.ctx, BASE);
}

async function notify(body: Record<string, unknown>): Promise<string> {
  const res = await t.call("POST", `/v1/projects/${projectId}/notifications`, { token: owner, body });
  expect(res.status).toBe(201);
  return res.body.notification.id;
}

beforeAll(async () => {
  ci = await startCiFixture();
  ({ t, owner, projectId } = ci);
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const raw = await request.text();
      received.push({ path: new URL(request.url).pathname, headers: Object.fromEntries(request.headers), raw, body: JSON.parse(raw) });
      return new Response("ok");
    },
  });
  smtp = await startSmtpServer();
  const approver = await userWithRole(t, owner, "developer", APPROVER);
  await t.call("PUT", `/v1/projects/${projectId}/members/${approver.id}`, { token: owner, body: { role: "maintainer" } });
  await putEnvironment(t, owner, projectId, "testers");
  await putEnvironment(t, owner, projectId, "production", { requires_approval: true, approvers: [APPROVER] });
  notifications.webhook = await notify({
    name: "release bot",
    channel: "webhook",
    events: ["approval_requested"],
    webhook: { url: hook("/hook"), secret: SECRET },
  });
  notifications.slack = await notify({ name: "releases channel", channel: "slack", events: ["failed", "approval_requested"], slack: { url: hook("/slack") } });
  notifications.quiet = await notify({ name: "failures only", channel: "webhook", events: ["failed"], webhook: { url: hook("/quiet"), secret: SECRET } });
  notifications.tags = await notify({
    name: "tag releases",
    channel: "webhook",
    events: ["approval_requested"],
    branches: ["refs/tags/v*"],
    webhook: { url: hook("/tags"), secret: SECRET },
  });
  notifications.email = await notify({
    name: "mail the release team",
    channel: "email",
    events: ["approval_requested"],
    email: smtp.settings(["releases@example.test"]),
  });
}, 30_000);

afterAll(async () => {
  receiver?.stop(true);
  smtp?.stop();
  await ci?.stop();
});

describe("a deployment waiting for approval", () => {
  let build: any;
  let waiting: any;

  test("is announced once over a signed webhook, naming what waits, from which build, and its approvers; the rest stay quiet", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "android-release", execution_config: { publish: PUBLISHERS } });
    build = await runBuild(t, owner, await connectRunner(t, owner), projectId, pipeline.id);
    const deployments = (await t.call("GET", `/v1/builds/${build.id}/deployments`, { token: owner })).body.deployments;
    waiting = deployments.find((d: any) => d.status === "waiting_approval");
    expect(deployments.map((d: any) => [d.environment, d.status]).sort()).toEqual([
      ["production", "waiting_approval"],
      ["testers", "approved"],
    ]);
    await drain();
    await drain();
    // Only the notifications that want it, for the build's branch (main is no tag): the webhook and Slack, once each.
    expect(received.map((r) => r.path).sort()).toEqual(["/hook", "/slack"]);
    const delivered = received.find((r) => r.path === "/hook")!;
    expect(delivered.headers["x-roost-event"]).toBe("deployment.approval_requested");
    expect(await verify(SECRET, delivered.raw, delivered.headers["x-roost-signature-256"]!)).toBe(true);
    expect(delivered.body).toMatchObject({
      event: "approval_requested",
      project: { id: projectId },
      pipeline: { id: pipeline.id, name: "android-release" },
      build: { id: build.id, number: build.build_number, status: "succeeded", branch: "main", commit_sha: build.commit_sha },
      deployment: {
        id: waiting.id,
        publisher: "play-production",
        environment: "production",
        target: "com.example.app production",
        requested_by: waiting.requested_by,
        approvers: [APPROVER],
        url: `${BASE}/projects/${projectId}/builds/${build.id}`,
      },
    });
    const slack = received.find((r) => r.path === "/slack")!;
    const project = (await t.call("GET", `/v1/projects/${projectId}`, { token: owner })).body.project;
    expect(slack.body).toEqual({
      text: [
        `${project.name} / android-release #${build.build_number}: publish play-production to production (com.example.app production) waits for approval`,
        `Build #${build.build_number} of main (${build.commit_sha.slice(0, 7)}), asked for by ${waiting.requested_by}.`,
        `Approvers: ${APPROVER}.`,
        `Approve or reject it on the build's page: ${BASE}/projects/${projectId}/builds/${build.id}`,
      ].join("\n"),
    });
    const deliveries = (await t.call("GET", `/v1/projects/${projectId}/notifications/${notifications.webhook}/deliveries`, { token: owner })).body.deliveries;
    expect(deliveries).toEqual([
      {
        id: expect.any(String),
        build_id: build.id,
        deployment_id: waiting.id,
        event: "approval_requested",
        status: "delivered",
        attempts: 1,
        next_attempt_at: null,
        last_error: null,
        created_at: expect.any(Number),
        delivered_at: expect.any(Number),
      },
    ]);
  });

  test("is mailed to the channel's recipients and to the environment's approvers", async () => {
    const [message] = mail();
    expect(message).toMatchObject({ mail_from: "roost@example.test", rcpt_tos: ["releases@example.test", APPROVER], tls: true });
    expect(message.headers["x-roost-event"]).toBe("deployment.approval_requested");
    expect(message.subject).toEndWith(`#${build.build_number}: publish play-production to production (com.example.app production) waits for approval`);
    expect(message.body).toContain(`Approvers: ${APPROVER}.\nApprove or reject it on the build's page: ${BASE}/projects/${projectId}/builds/${build.id}\n`);
    expect(mail()).toHaveLength(1);
  });

  test("a promotion that waits is announced too, as asked for by who promoted it; a decision is not", async () => {
    received.length = 0;
    const promoted = await t.call("POST", `/v1/builds/${build.id}/publish`, {
      token: owner,
      body: { publisher: "play", environment: "production", overrides: { track: "beta" } },
    });
    expect(promoted.status).toBe(201);
    expect(promoted.body.deployment.status).toBe("waiting_approval");
    const approver = (await t.call("POST", "/v1/auth/local/login", { body: { email: APPROVER, recovery_capability: await loginCapability(t) } })).body
      .session_token;
    expect((await t.call("POST", `/v1/deployments/${waiting.id}/approve`, { token: approver })).status).toBe(200);
    await drain();
    expect(received.map((r) => r.path).sort()).toEqual(["/hook", "/slack"]);
    expect(received.find((r) => r.path === "/hook")!.body.deployment).toMatchObject({
      id: promoted.body.deployment.id,
      publisher: "play",
      target: "com.example.app beta",
      requested_by: "owner@example.test",
    });
    expect(received.find((r) => r.path === "/slack")!.body.text).toContain("publish play to production (com.example.app beta) waits for approval");
    expect(mail()).toHaveLength(2);
  });
});
