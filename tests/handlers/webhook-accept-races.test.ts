// A webhook delivery reads what it acts on, decides, then writes everything in one write batch
// guarded by what it read (lib/webhooks/accept.ts, docs/operations.md "How Roost uses it"). What
// another daemon writes between those reads and that batch must neither be overridden nor make the
// delivery act on what no longer holds: the batch writes nothing and the delivery is decided again.
// A stand-in database in front of the real one runs that other daemon's write just before this
// delivery's batch; the test clock stands still, so the change falls in the same second as the read.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { routes } from "../../handlers/routes.ts";
import type { Db } from "../../lib/db/client.ts";
import { createApp } from "../../lib/http/app.ts";
import { createHmac } from "node:crypto";
import { createPipeline, signedAcmePush, startCiFixture, WEBHOOK_SECRET, type CiFixture } from "../helpers/ci.ts";
import { listIntegrations } from "../../lib/integrations/store.ts";
import { openCredentials, sealCredentials } from "../../lib/integrations/credentials.ts";
import { deliveryOf } from "../helpers/deliveries.ts";

let fixture: CiFixture;
beforeAll(async () => {
  fixture = await startCiFixture();
});
afterAll(() => fixture?.stop());

/** The app on the fixture's database, except that `meanwhile` runs, through the real database, just before the app's first write batch. */
function appWithWriteBefore(meanwhile: () => Promise<unknown>) {
  let pending = true;
  const db = new Proxy(fixture.t.db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === "batch")
        return async (...args: Parameters<Db["batch"]>) => {
          if (pending) {
            pending = false;
            await meanwhile();
          }
          return target.batch(...args);
        };
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return createApp({ ...fixture.t.ctx, db }, routes);
}

/** A GitHub push of one commit to `branch` of acme/app, signed; sent to `app` (default: the fixture's). */
async function push(branch: string, sha: string, options: { app?: ReturnType<typeof createApp>; delivery?: string } = {}) {
  const signed = await signedAcmePush(branch, sha, options.delivery ?? crypto.randomUUID(), `commit ${sha.slice(0, 6)}`);
  const body = signed.body;
  const headers = { host: "127.0.0.1:8080", "content-type": "application/json", ...signed.headers };
  if (!options.app) return fixture.t.call("POST", "/v1/webhooks/github", { raw: body, contentType: "application/json", headers, peer: "140.82.112.1" });
  const res = await options.app.fetch(new Request("http://127.0.0.1:8080/v1/webhooks/github", { method: "POST", headers, body }), "140.82.112.1");
  return { status: res.status, body: (await res.json()) as any };
}

describe("what another daemon writes between a delivery's reads and its write", () => {
  test("a pipeline disabled meanwhile: the delivery is decided again and builds nothing", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { trigger_config: { branches: ["disabled/**"] } });
    const app = appWithWriteBefore(() => t.call("PATCH", `/v1/pipelines/${pipeline.id}`, { token: owner, body: { enabled: false } }));
    const res = await push("disabled/x", "d".repeat(40), { app });
    expect(res.status).toBe(200);
    expect(res.body.builds).toEqual([]);
    const delivery = await deliveryOf(t, owner, res.body.delivery_id);
    expect(delivery.result).toBe("ignored");
    expect(delivery.decisions.find((d: { pipeline_id: string }) => d.pipeline_id === pipeline.id)).toMatchObject({
      build: false,
      reason: "pipeline is disabled",
    });
  });

  test("the same delivery accepted by another daemon meanwhile: this one is its duplicate, and there is one build", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["twice/**"] } });
    const delivery = crypto.randomUUID();
    let other: any;
    const app = appWithWriteBefore(async () => (other = await push("twice/x", "e".repeat(40), { delivery })));
    const res = await push("twice/x", "e".repeat(40), { app, delivery });
    expect(other.body).toMatchObject({ ok: true, duplicate: false });
    expect(other.body.builds).toHaveLength(1);
    expect(res.body).toMatchObject({ ok: true, duplicate: true, builds: [] });
    const builds = (await t.call("GET", `/v1/projects/${projectId}/builds?limit=50`, { token: owner })).body.builds;
    expect(builds.filter((b: { commit_sha: string }) => b.commit_sha === "e".repeat(40))).toHaveLength(1);
  });

  test("a build created meanwhile: the delivery's build takes the next number, with no gap and no duplicate", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { trigger_config: { branches: ["numbers/**"] } });
    let manual: any;
    const app = appWithWriteBefore(
      async () =>
        (manual = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: "f".repeat(40) } })),
    );
    const res = await push("numbers/x", "a1".repeat(20), { app });
    expect(manual.status).toBe(201);
    expect(res.body.builds).toHaveLength(1);
    expect(res.body.builds[0].build_number).toBe(manual.body.build.build_number + 1);
    const delivery = await deliveryOf(t, owner, res.body.delivery_id);
    expect(delivery.decisions.find((d: { build: boolean }) => d.build)).toMatchObject({ build_number: manual.body.build.build_number + 1 });
  });
});

// A daemon plans a push's batch from the project and pipelines as it last read them
// (lib/webhooks/accept.ts routeAsLastRead); a change since, made through any daemon, makes that
// batch write nothing, and the push is decided on what holds now.
describe("what changed since this daemon's last push to the repository", () => {
  test("a pipeline disabled since: the next push builds nothing, and says why", async () => {
    const { t, owner, projectId } = fixture;
    const pipeline = await createPipeline(t, owner, projectId, { trigger_config: { branches: ["since/**"] } });
    const first = await push("since/x", "b1".repeat(20));
    expect(first.body.builds).toHaveLength(1);
    expect((await t.call("PATCH", `/v1/pipelines/${pipeline.id}`, { token: owner, body: { enabled: false } })).status).toBe(200);
    const res = await push("since/x", "b2".repeat(20));
    expect(res.body.builds).toEqual([]);
    const delivery = await deliveryOf(t, owner, res.body.delivery_id);
    expect(delivery.decisions.find((d: { pipeline_id: string }) => d.pipeline_id === pipeline.id)).toMatchObject({
      build: false,
      reason: "pipeline is disabled",
    });
  });

  test("a pipeline added since: the next push builds with it too", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { name: "since-a", trigger_config: { branches: ["added/**"] } });
    expect((await push("added/x", "c1".repeat(20))).body.builds.length).toBeGreaterThan(0);
    const added = await createPipeline(t, owner, projectId, { name: "since-b", trigger_config: { branches: ["added/**"] } });
    const res = await push("added/x", "c2".repeat(20));
    expect(res.body.builds.map((b: { pipeline_id: string }) => b.pipeline_id)).toContain(added.id);
  });
});

// A daemon verifies a GitHub delivery against the integrations' webhook secrets as it last read
// them (lib/integrations/as-last-read.ts); a secret rotated since, by any daemon, must refuse the
// next delivery signed with the old one, and take the next one signed with the new one.
describe("a webhook secret rotated since this daemon's last push", () => {
  const NEW_SECRET = "a-rotated-webhook-secret-of-some-length";

  /** A push to acme/app signed with `secret` (signedAcmePush's body, its signature replaced). */
  async function pushSignedWith(secret: string, branch: string, sha: string, app?: ReturnType<typeof createApp>) {
    const signed = await signedAcmePush(branch, sha, crypto.randomUUID());
    const headers = {
      host: "127.0.0.1:8080",
      "content-type": "application/json",
      ...signed.headers,
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(signed.body).digest("hex")}`,
    };
    const res = await (app ?? fixture.t.app).fetch(
      new Request("http://127.0.0.1:8080/v1/webhooks/github", { method: "POST", headers, body: signed.body }),
      "140.82.112.1",
    );
    return { status: res.status, body: (await res.json()) as any };
  }

  /** Seals the GitHub integration's credentials again with `secret` as its webhook secret, as a rotation on another daemon would. */
  async function rotate(secret: string) {
    const { t } = fixture;
    const integration = (await listIntegrations(t.db)).find((i) => i.provider === "github")!;
    const credentials = await openCredentials<Record<string, unknown>>(t.ctx.secrets, integration);
    await t.db.execute({
      sql: "UPDATE integrations SET credentials_sealed = ? WHERE id = ?",
      args: [await sealCredentials(t.ctx.secrets, { ...credentials, webhook_secret: secret }), integration.id],
    });
  }

  afterAll(() => rotate(WEBHOOK_SECRET));

  test("the next push signed with the old secret is refused (401), one signed with the new one builds", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["rotated/**"] } });
    expect((await pushSignedWith(WEBHOOK_SECRET, "rotated/x", "e1".repeat(20))).body.builds).toHaveLength(1);
    expect((await pushSignedWith(WEBHOOK_SECRET, "rotated/x", "e2".repeat(20))).body.builds).toHaveLength(1);
    await rotate(NEW_SECRET);
    const old = await pushSignedWith(WEBHOOK_SECRET, "rotated/x", "e3".repeat(20));
    expect(old.status).toBe(401);
    expect(old.body.code).toBe("webhook_signature_invalid");
    const rotated = await pushSignedWith(NEW_SECRET, "rotated/x", "e4".repeat(20));
    expect(rotated.status).toBe(200);
    expect(rotated.body.builds).toHaveLength(1);
    await rotate(WEBHOOK_SECRET);
  });

  test("rotated between this daemon's verification and its write: the push is verified again, and refused", async () => {
    const { t, owner, projectId } = fixture;
    await createPipeline(t, owner, projectId, { trigger_config: { branches: ["racing/**"] } });
    let meanwhile: (() => Promise<unknown>) | null = null;
    const db = new Proxy(t.db, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === "batch")
          return async (...args: Parameters<Db["batch"]>) => {
            const write = meanwhile;
            meanwhile = null;
            if (write) await write();
            return target.batch(...args);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const app = createApp({ ...t.ctx, db }, routes);
    // This daemon reads the integrations once and keeps them.
    expect((await pushSignedWith(WEBHOOK_SECRET, "racing/x", "f1".repeat(20), app)).body.builds).toHaveLength(1);
    meanwhile = () => rotate(NEW_SECRET);
    const res = await pushSignedWith(WEBHOOK_SECRET, "racing/x", "f2".repeat(20), app);
    expect(res.status).toBe(401);
    const built = await t.db.execute({ sql: "SELECT COUNT(*) AS n FROM builds WHERE commit_sha = ?", args: ["f2".repeat(20)] });
    expect(Number(built.rows[0]!.n)).toBe(0);
    await rotate(WEBHOOK_SECRET);
  });
});
