// A verified delivery Roost cannot act on (docs/webhooks.md "When Roost cannot act on a
// delivery"): only the dedupe key's own conflict is a duplicate. Any other error, here a project
// whose build counter is behind its builds (as after restoring an older copy of one table), is
// logged, recorded on the delivery as failed, answered 5xx so the host redelivers, and raises an
// incident when it repeats; once the cause is fixed, the redelivery builds.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sign } from "@octokit/webhooks-methods";
import { createLogger } from "../../lib/daemon/log.ts";
import { createPipeline, startCiFixture, WEBHOOK_SECRET, type CiFixture } from "../helpers/ci.ts";

const SHA = "c".repeat(40);

let f: CiFixture;
let pipelineId: string;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  f = await startCiFixture();
  f.t.ctx.log = createLogger("debug", (line) => lines.push(JSON.parse(line)));
  pipelineId = (await createPipeline(f.t, f.owner, f.projectId, { name: "all", trigger_config: { events: ["push"], branches: ["**"] } })).id;
});
afterAll(() => f.stop());

/** A GitHub push to acme/app (repository 1001 of the host stand-in), signed with the integration's secret. */
async function push(delivery: string, sha = SHA) {
  const body = JSON.stringify({
    ref: "refs/heads/main",
    after: sha,
    head_commit: { id: sha, message: "a push" },
    commits: [{ id: sha, message: "a push" }],
    repository: { id: 1001, full_name: "acme/app" },
    pusher: { name: "dev" },
  });
  return f.t.call("POST", "/v1/webhooks/github", {
    raw: body,
    contentType: "application/json",
    headers: { "x-github-event": "push", "x-github-delivery": delivery, "x-hub-signature-256": await sign(WEBHOOK_SECRET, body) },
    peer: "140.82.112.1",
  });
}
const deliveries = async (result: string) =>
  (await f.t.call("GET", `/v1/projects/${f.projectId}/webhook-deliveries?result=${result}&limit=200`, { token: f.owner })).body.deliveries;
const builds = async () =>
  (await f.t.call("GET", `/v1/projects/${f.projectId}/builds?limit=200`, { token: f.owner })).body.builds as {
    build_number: number;
    commit_sha: string;
    trigger_type: string;
  }[];
const incident = async () =>
  ((await f.t.call("GET", "/v1/operator-incidents", { token: f.owner })).body.incidents as { reason: string }[]).find(
    (i) => i.reason === "webhook_delivery_failed",
  );

test("a push to a project whose build counter is behind its builds is answered 500, recorded as failed and logged, not taken for a duplicate", async () => {
  expect((await push("first")).body.builds).toHaveLength(1);
  // The counter hands out build #1 again, which the project already has.
  await f.t.db.execute({ sql: "UPDATE projects SET next_build_number = 1 WHERE id = ?", args: [f.projectId] });

  const res = await push("second", "d".repeat(40));
  expect(res.status).toBe(500);
  expect(res.body).toEqual({
    code: "webhook_delivery_failed",
    message: expect.stringMatching(
      /^Roost could not act on this delivery and built nothing; it is recorded as delivery \S+\. Redeliver it once the cause is fixed\.$/,
    ),
  });
  const [failed] = await deliveries("failed");
  expect(failed).toMatchObject({
    delivery_id: "second",
    verified: true,
    result: "failed",
    project_id: f.projectId,
    commit_sha: "d".repeat(40),
    duplicate_of: null,
  });
  expect(failed.reason).toStartWith("Roost could not act on this delivery, nothing was built and a redelivery will be acted on: ");
  expect(failed.reason).toContain("UNIQUE constraint failed: builds.project_id, builds.build_number");
  expect(await deliveries("duplicate")).toEqual([]);
  expect(lines.filter((l) => l.msg === "webhook delivery failed")).toEqual([
    expect.objectContaining({ level: "error", host: "github", delivery_id: "second" }),
  ]);
  expect((await builds()).map((b) => b.build_number)).toEqual([1]);
});

test("repeated failures for the repository within an hour raise the incident webhook_delivery_failed", async () => {
  expect(await incident()).toBeUndefined();
  expect((await push("third", "e".repeat(40))).status).toBe(500);
  expect((await push("fourth", "f".repeat(40))).status).toBe(500);
  expect(await incident()).toMatchObject({
    severity: "critical",
    status: "open",
    resource_kind: "repository",
    resource_name: "acme/app",
    message: expect.stringContaining("github deliveries for acme/app keep failing"),
  });
});

test("the failed delivery took no dedupe key: once the counter is fixed, the host's redelivery builds, and a second copy is a duplicate", async () => {
  await f.t.db.execute({ sql: "UPDATE projects SET next_build_number = 2 WHERE id = ?", args: [f.projectId] });
  const redelivered = await push("second", "d".repeat(40));
  expect(redelivered.status).toBe(200);
  expect(redelivered.body).toMatchObject({ ok: true, duplicate: false, builds: [{ pipeline_id: pipelineId, build_number: 2 }] });
  const again = await push("second", "d".repeat(40));
  expect([again.status, again.body.duplicate, again.body.builds]).toEqual([200, true, []]);
  expect((await builds()).map((b) => [b.build_number, b.commit_sha])).toEqual([
    [2, "d".repeat(40)],
    [1, SHA],
  ]);
});
