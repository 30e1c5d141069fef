// Long-lived streams end with the credential that opened them (docs/api.md "Streams end with
// their credential"): GET /v1/events and a build's log stream, over a real socket (Bun.serve in
// front of the app, as the daemon runs it), end with `event: revoked` within seconds of the
// session signing out, the API token being revoked, the user being deactivated, or the access
// that allowed the stream being taken away.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { userWithRole, type Called, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../helpers/ci.ts";
import { SseReader, type SseEvent } from "../helpers/sse.ts";
import { serveOverSocket, type Served } from "../helpers/sockets.ts";
import { SESSION_COOKIE } from "../../lib/auth/browser-session.ts";
import { RECHECK_MS } from "../../lib/auth/stream-guard.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let server: Served;
let project: { id: string };
let pipelineId: string;

/** A stream ends within one check of its credential ending, with room for a busy machine. */
const ENDS_WITHIN_MS = RECHECK_MS + 3000;

const SESSION_ENDED = {
  code: "invalid_session",
  message: "The session that opened this stream has ended (signed out, expired, or its user deactivated or given another role); sign in again.",
};
const TOKEN_ENDED = { code: "invalid_token", message: "The API token is not valid." };
const NO_LONGER_SEES = { code: "forbidden", message: "The user this stream token was issued to can no longer see this build." };

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  project = await createProject(t, owner);
  pipelineId = (await createPipeline(t, owner, project.id)).id;
  server = serveOverSocket(t.app);
});
afterAll(async () => {
  server.stop(true);
  t.close();
  await host.stop();
});

const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;

async function queueBuild(projectId = project.id, pipeline = pipelineId): Promise<string> {
  const res = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline, commit_sha: SHA_A } });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.build.id;
}

/** A developer who is a viewer of the project. */
type Member = { id: string; token: string };

async function member(role = "developer") {
  const user = await userWithRole(t, owner, role);
  const added = await t.call("PUT", `/v1/projects/${project.id}/members/${user.id}`, { token: owner, body: { role: "viewer" } });
  if (added.status >= 300) throw new Error(added.text);
  return user;
}

async function apiToken(session: string, role = "developer"): Promise<{ id: string; token: string }> {
  const res = await t.call("POST", "/v1/api-tokens", { token: session, body: { name: "stream", role } });
  if (res.status !== 201) throw new Error(res.text);
  return res.body;
}

async function openEvents(headers: Record<string, string>): Promise<SseReader> {
  const response = await fetch(url("/v1/events"), { headers });
  expect(response.status).toBe(200);
  const reader = new SseReader(response);
  await reader.until((events) => events.some((e) => e.event === "ready"));
  return reader;
}

async function openLog(credential: string, buildId: string): Promise<SseReader> {
  const minted = await t.call("POST", `/v1/builds/${buildId}/stream-token`, { token: credential });
  if (minted.status !== 200) throw new Error(minted.text);
  const response = await fetch(url(`/v1/builds/${buildId}/logs/stream?token=${minted.body.token}`));
  expect(response.status).toBe(200);
  const reader = new SseReader(response);
  await reader.until((events) => events.some((e) => e.event === "status"));
  return reader;
}

const builds = (events: SseEvent[]) => events.filter((e) => e.event === "build").map((e) => JSON.parse(e.data) as { id: string; status: string });
const arrived = (id: string) => (events: SseEvent[]) => builds(events).some((b) => b.id === id);

/** Waits for the stream to close; answers how long that took and its last event. */
async function ended(stream: SseReader): Promise<{ ms: number; last: SseEvent }> {
  const from = Date.now();
  await stream.until(() => stream.closed, ENDS_WITHIN_MS);
  return { ms: Date.now() - from, last: stream.events.at(-1)! };
}

function revoked(refusal: { code: string; message: string }) {
  return { event: "revoked", id: null, data: JSON.stringify(refusal) };
}

/** `revoke` is answered 200 and `stream` then ends with event: revoked carrying `refusal`; the stream is closed in any case. */
async function expectEndedBy(stream: SseReader, revoke: () => Promise<Called>, refusal: { code: string; message: string }): Promise<void> {
  try {
    expect((await revoke()).status).toBe(200);
    expect((await ended(stream)).last).toEqual(revoked(refusal));
  } finally {
    await stream.cancel();
  }
}

describe("GET /v1/events ends with its credential", () => {
  test("a user deactivated while following the stream stops getting builds: the stream ends with event: revoked", async () => {
    const user = await member();
    const stream = await openEvents({ authorization: `Bearer ${user.token}` });
    try {
      const before = await queueBuild();
      await stream.until(arrived(before));
      expect((await t.call("DELETE", `/v1/users/${user.id}`, { token: owner })).status).toBe(200);
      const end = await ended(stream);
      expect(end.last).toEqual(revoked(SESSION_ENDED));
      const after = await queueBuild();
      expect(builds(stream.events).map((b) => b.id)).not.toContain(after);
      // Reconnecting is refused like any request of the ended session.
      expect((await fetch(url("/v1/events"), { headers: { authorization: `Bearer ${user.token}` } })).status).toBe(401);
    } finally {
      await stream.cancel();
    }
  });

  test("signing out ends the stream the browser opened with the session cookie", async () => {
    const user = await member();
    const stream = await openEvents({ cookie: `${SESSION_COOKIE}=${user.token}` });
    await expectEndedBy(stream, () => t.call("POST", "/v1/auth/logout", { token: user.token }), SESSION_ENDED);
  });

  test("revoking the API token ends its stream; the creator's other streams go on", async () => {
    const user = await member();
    const pat = await apiToken(user.token);
    const byToken = await openEvents({ authorization: `Bearer ${pat.token}` });
    const bySession = await openEvents({ authorization: `Bearer ${user.token}` });
    try {
      expect((await t.call("DELETE", `/v1/api-tokens/${pat.id}`, { token: user.token })).status).toBe(200);
      expect((await ended(byToken)).last).toEqual(revoked(TOKEN_ENDED));
      const later = await queueBuild();
      await bySession.until(arrived(later));
      expect(bySession.closed).toBe(false);
    } finally {
      await byToken.cancel();
      await bySession.cancel();
    }
  });

  test("an admin's API token demoted with its creator stops seeing projects it saw as admin within seconds, and keeps its own", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const pat = await apiToken(admin.token, "admin");
    const others = await createProject(t, owner);
    const othersPipeline = (await createPipeline(t, owner, others.id)).id;
    expect((await t.call("PUT", `/v1/projects/${project.id}/members/${admin.id}`, { token: owner, body: { role: "viewer" } })).status).toBe(200);
    const stream = await openEvents({ authorization: `Bearer ${pat.token}` });
    try {
      const seenAsAdmin = await queueBuild(others.id, othersPipeline);
      await stream.until(arrived(seenAsAdmin));
      expect((await t.call("PATCH", `/v1/users/${admin.id}`, { token: owner, body: { role: "developer" } })).status).toBe(200);
      await Bun.sleep(RECHECK_MS + 500);
      const hidden = await queueBuild(others.id, othersPipeline);
      const own = await queueBuild();
      await stream.until(arrived(own));
      expect(builds(stream.events).map((b) => b.id)).not.toContain(hidden);
    } finally {
      await stream.cancel();
    }
  });
});

describe("the log stream ends with the credential behind its stream token", () => {
  test.each([
    [
      "a user removed from the project: the open stream ends with event: revoked",
      (user: Member) => t.call("DELETE", `/v1/projects/${project.id}/members/${user.id}`, { token: owner }),
      NO_LONGER_SEES,
    ],
    [
      "the session that minted the stream token signs out: the stream ends",
      (user: Member) => t.call("POST", "/v1/auth/logout", { token: user.token }),
      SESSION_ENDED,
    ],
    ["a user deactivated: the stream ends", (user: Member) => t.call("DELETE", `/v1/users/${user.id}`, { token: owner }), SESSION_ENDED],
  ] as const)("%s", async (_name, revoke, refusal) => {
    const user = await member();
    await expectEndedBy(await openLog(user.token, await queueBuild()), () => revoke(user), refusal);
  });

  test("the API token that minted the stream token is revoked: the stream ends; one minted by the same user's session goes on", async () => {
    const user = await member();
    const pat = await apiToken(user.token);
    const buildId = await queueBuild();
    const byToken = await openLog(pat.token, buildId);
    const bySession = await openLog(user.token, buildId);
    try {
      expect((await t.call("DELETE", `/v1/api-tokens/${pat.id}`, { token: user.token })).status).toBe(200);
      expect((await ended(byToken)).last).toEqual(revoked(TOKEN_ENDED));
      expect(bySession.closed).toBe(false);
      expect(bySession.events.map((e) => e.event)).not.toContain("revoked");
    } finally {
      await byToken.cancel();
      await bySession.cancel();
    }
  });

  test("a stream token whose session signed out before it was used opens nothing", async () => {
    const user = await member();
    const buildId = await queueBuild();
    const minted = await t.call("POST", `/v1/builds/${buildId}/stream-token`, { token: user.token });
    expect((await t.call("POST", "/v1/auth/logout", { token: user.token })).status).toBe(200);
    const response = await fetch(url(`/v1/builds/${buildId}/logs/stream?token=${minted.body.token}`));
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      code: "forbidden",
      message: "The session or API token this stream token was minted with no longer works (signed out, revoked, expired, or its user deactivated).",
    });
  });
});
