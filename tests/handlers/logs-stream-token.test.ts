// Stream tokens (docs/runners.md "Live logs"): bound to one build and the credential of the user
// who asked for it, 60 seconds to open the stream, and both checked again when it opens. That an
// open stream ends with the credential or the access: tests/handlers/streams-revocation.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture } from "../helpers/ci.ts";

let t: TestApp;
let host: HostApiStandIn;
let owner = "";
let projectId = "";
let buildId = "";

const EXPIRED = { code: "invalid_token", message: "The stream token is unknown or expired; ask for a new one." };
const NO_LONGER_ALLOWED = { code: "forbidden", message: "The user this stream token was issued to can no longer see this build." };
const CREDENTIAL_ENDED = {
  code: "forbidden",
  message: "The session or API token this stream token was minted with no longer works (signed out, revoked, expired, or its user deactivated).",
};

beforeAll(async () => {
  ({ t, host, owner } = await startGithubFixture());
  projectId = (await createProject(t, owner)).id;
  const pipeline = await createPipeline(t, owner, projectId);
  buildId = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body.build.id;
});
afterAll(async () => {
  t.close();
  await host.stop();
});

/** The part of a body reader these tests use. */
interface Reader {
  read(): Promise<{ value?: Uint8Array }>;
  cancel(): Promise<void>;
}

/** A developer who is a viewer of the project. */
async function viewer() {
  const user = await userWithRole(t, owner, "developer");
  const added = await t.call("PUT", `/v1/projects/${projectId}/members/${user.id}`, { token: owner, body: { role: "viewer" } });
  if (added.status >= 300) throw new Error(added.text);
  return user;
}

async function streamToken(session: string): Promise<{ token: string; expires_at: number }> {
  const res = await t.call("POST", `/v1/builds/${buildId}/stream-token`, { token: session });
  if (res.status !== 200) throw new Error(res.text);
  return res.body;
}

/** Opens the stream; a refusal is read whole, an open stream is handed back unread. */
async function open(token: string): Promise<{ status: number; body: unknown; reader: Reader | null }> {
  const res = await t.app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream?token=${token}`), "127.0.0.1");
  if (res.status !== 200) return { status: res.status, body: await res.json(), reader: null };
  return { status: 200, body: null, reader: res.body!.getReader() };
}

describe("stream tokens", () => {
  test("a token must open its stream within 60 seconds", async () => {
    const user = await viewer();
    const minted = await streamToken(user.token);
    expect(minted.expires_at).toBe(t.clock.now() + 60);
    const inTime = await open(minted.token);
    expect(inTime.status).toBe(200);
    await inTime.reader!.cancel();
    const late = await streamToken(user.token);
    t.clock.advance(60);
    try {
      const res = await open(late.token);
      expect(res.status).toBe(401);
      expect(res.body).toEqual(EXPIRED);
    } finally {
      t.clock.advance(-60);
    }
  });

  test("a user removed from the project cannot open a stream with a token minted before", async () => {
    const user = await viewer();
    const { token } = await streamToken(user.token);
    await t.call("DELETE", `/v1/projects/${projectId}/members/${user.id}`, { token: owner });
    const res = await open(token);
    expect(res.status).toBe(403);
    expect(res.body).toEqual(NO_LONGER_ALLOWED);
  });

  test("a deactivated user cannot open a stream with a token minted before (deactivating ended the session that minted it)", async () => {
    const user = await viewer();
    const { token } = await streamToken(user.token);
    expect((await t.call("DELETE", `/v1/users/${user.id}`, { token: owner })).status).toBe(200);
    const res = await open(token);
    expect(res.status).toBe(403);
    expect(res.body).toEqual(CREDENTIAL_ENDED);
  });

  test("an instance admin needs no membership; a token for one build opens no other", async () => {
    const admin = await userWithRole(t, owner, "admin");
    const { token } = await streamToken(admin.token);
    const ok = await open(token);
    expect(ok.status).toBe(200);
    await ok.reader!.cancel();
    const other = await t.app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/someotherbuild/logs/stream?token=${token}`), "127.0.0.1");
    expect(other.status).toBe(403);
    expect(await other.json()).toEqual({ code: "forbidden", message: "This stream token is for another build." });
  });

  // A proxy's exact-path rule for the stream (which keeps ?token= out of its access log) does not
  // match these; Roost must not serve them either (docs/operations.md, "TLS with nginx").
  for (const suffix of ["/", "//", "/x"]) {
    test(`the stream is served at its exact path only: …/logs/stream${suffix} with a valid token is 404 JSON`, async () => {
      const { token } = await streamToken(owner);
      const res = await t.app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${buildId}/logs/stream${suffix}?token=${token}`), "127.0.0.1");
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ code: "not_found", message: `No endpoint at GET /v1/builds/${buildId}/logs/stream${suffix}.` });
      const exact = await open(token);
      expect(exact.status).toBe(200);
      await exact.reader!.cancel();
    });
  }
});
