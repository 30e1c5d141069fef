// Reading back what a forge's webhook delivery did, through the API: the builds of a project, and
// the delivery log's entry (docs/api.md "Webhook deliveries").
import { expect } from "bun:test";
import type { Called, TestApp } from "./app.ts";
import type { HostApiStandIn, RecordedRequest } from "../support/host-api-stand-in.ts";
import { reportCommitStatuses } from "../../lib/forges/commit-statuses.ts";
import type { NewDelivery } from "../../lib/webhooks/deliveries.ts";

/** The reason the delivery log gives for a fork's pull request that its project does not build (lib/webhooks/accept.ts). */
export const FORK_PULL_REQUEST_NOT_BUILT = "pull request from a fork: this project does not build them (project setting build_fork_pull_requests)";

export interface BuildSummary {
  id: string;
  commit_sha: string;
  branch: string;
  trigger_event: string;
  [field: string]: unknown;
}

/** A project's builds, newest first. */
export async function buildsOf(t: TestApp, token: string, projectId: string): Promise<BuildSummary[]> {
  return (await t.call("GET", `/v1/projects/${projectId}/builds?limit=200`, { token })).body.builds;
}

/** The delivery log's entry for one delivery. */
export async function deliveryOf(t: TestApp, token: string, deliveryId: string): Promise<any> {
  return (await t.call("GET", `/v1/webhook-deliveries/${deliveryId}`, { token })).body.delivery;
}

/** A project on a catalogue repository with one pipeline, "all", that builds pushes, pull requests and tags on every branch. */
export async function projectBuildingEverything(t: TestApp, token: string, repositoryId: string): Promise<{ id: string; pipeline: string }> {
  const project = (await t.call("POST", "/v1/projects", { token, body: { repository_id: repositoryId } })).body.project;
  const pipeline = (
    await t.call("POST", `/v1/projects/${project.id}/pipelines`, {
      token,
      body: { name: "all", trigger_config: { events: ["push", "pull_request", "tag"], branches: ["**"] } },
    })
  ).body.pipeline;
  return { id: project.id, pipeline: pipeline.id };
}

/** A delivery answered 200 with one build: that build, as GET /v1/builds/{id} shows it. */
export async function theOneBuild(t: TestApp, token: string, res: Called): Promise<any> {
  expect(res.status).toBe(200);
  expect(res.body.builds).toHaveLength(1);
  return (await t.call("GET", `/v1/builds/${res.body.builds[0].id}`, { token })).body.build;
}

/** A delivery answered 200 with `builds` builds; where it names a `reason`, the log has the delivery ignored by `host` for it. */
export async function expectDeliveryBuilt(
  t: TestApp,
  token: string,
  res: Called,
  expected: { host: string; builds: number; reason: string | null },
): Promise<void> {
  expect(res.status).toBe(200);
  expect(res.body.builds).toHaveLength(expected.builds);
  if (expected.reason)
    expect(await deliveryOf(t, token, res.body.delivery_id)).toMatchObject({ host: expected.host, result: "ignored", reason: expected.reason });
}

/** Sends the commit statuses the builds owe; the stand-in's POSTs under `pathPrefix` that it took (at least one status was sent). */
export async function reportedStatuses(t: TestApp, host: HostApiStandIn, pathPrefix: string): Promise<RecordedRequest[]> {
  host.requests.length = 0;
  const sent = await reportCommitStatuses({ ...t.ctx, now: t.clock.now(), baseUrl: "https://ci.example.test" });
  expect(sent).toBeGreaterThan(0);
  return host.requests.filter((r) => r.method === "POST" && r.path.startsWith(pathPrefix));
}

/**
 * The record of a verified push to acme/app (repository 'r', project 'p') at `receivedAt` that
 * built, numbered `n` (its ids `delivery-<n>`, delivery `d-<n>`), as the receiver hands it to the
 * write: for tests of the statements that store it.
 */
export function builtPushRecord(
  n: number,
  receivedAt: number,
  record: Partial<NewDelivery> & { dedupeKeys: string[] },
): NewDelivery & { dedupeKeys: string[] } {
  return {
    id: `delivery-${n}`,
    host: "github",
    delivery_id: `d-${n}`,
    event: "push",
    action: "",
    verified: true,
    result: "built",
    reason: "started 1 build(s)",
    repository_external_id: "1001",
    repository_full_name: "acme/app",
    repository_id: "r",
    project_id: "p",
    commit_sha: "a".repeat(40),
    decisions: [],
    duplicate_of: null,
    received_at: receivedAt,
    body: { text: "{}", pieces: 0 },
    ...record,
  };
}
