// Webhook deliveries up to the 25 MB GitHub and GitLab send ("Payloads are capped at 25 MB",
// https://docs.github.com/en/webhooks/webhook-events-and-payloads): a libSQL server refuses a value
// of more than about 4 MB (sqld: "string or blob too big") and answers at most 10 MB a request
// (RESPONSE_TOO_LARGE), a file neither. On either, such a delivery builds, is recorded, and its
// body reads back whole. Run on a libSQL server too (scripts/test, ROOST_TEST_DATABASE=sqld).
import { describe, expect, test } from "bun:test";
import { sign } from "@octokit/webhooks-methods";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, WEBHOOK_SECRET, createPipeline, fixturePerFile, signedAcmePush, startCiFixture } from "../helpers/ci.ts";
import { startSqld } from "../support/sqld.ts";
import { WEBHOOK_BODY_LIMIT_BYTES } from "../../lib/webhooks/limits.ts";
import { pruneDeliveries } from "../../lib/webhooks/deliveries.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(
  () => startCiFixture(),
  (fixture) => ({ t, owner, projectId } = fixture),
);

/**
 * `bytes` of text that compresses poorly (hex digits of a chain of SHA-256 digests, about 2:1),
 * the same on every run.
 */
function hexText(bytes: number, seed: string): string {
  const parts: string[] = [];
  let digest = new Bun.CryptoHasher("sha256").update(seed).digest();
  for (let n = 0; n < bytes; n += 64) {
    parts.push(digest.toString("hex"));
    digest = new Bun.CryptoHasher("sha256").update(digest).digest();
  }
  return parts.join("").slice(0, bytes);
}

/**
 * A GitHub push to main of acme/app of as many commits (GitHub lists up to 2,048) as make its body
 * about `bytes` long, each modifying 40 files of long paths that compress poorly, signed
 * (https://docs.github.com/webhooks/webhook-events-and-payloads#push). `sha` is the head commit.
 */
async function bigPush(bytes: number, sha: string, delivery: string) {
  // Each 200-character path takes about 212 bytes of the body, with its commit's share.
  const paths = hexText(Math.floor(bytes * 0.93), delivery).match(/.{1,200}/g)!;
  const commits = [];
  for (let i = 0; i * 40 < paths.length; i++) {
    const id = i * 40 + 40 >= paths.length ? sha : `${String(i).padStart(8, "0")}${"c".repeat(32)}`;
    commits.push({
      id,
      message: `change ${i}`,
      author: { name: "dev" },
      added: [],
      removed: [],
      modified: paths.slice(i * 40, i * 40 + 40).map((p) => `lib/${p}.dart`),
    });
  }
  const body = JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: sha,
    created: false,
    deleted: false,
    forced: false,
    head_commit: commits.at(-1),
    commits,
    repository: { id: 1001, full_name: "acme/app" },
    pusher: { name: "dev" },
  });
  return { body, headers: { "x-github-event": "push", "x-github-delivery": delivery, "x-hub-signature-256": await sign(WEBHOOK_SECRET, body) } };
}

const send = (push: { body: string; headers: Record<string, string> }, app: TestApp = t) =>
  app.call("POST", "/v1/webhooks/github", { raw: push.body, contentType: "application/json", headers: push.headers, peer: "140.82.112.1" });

describe("a delivery of up to 25 MB", () => {
  test("builds, is recorded, and reads back byte for byte; its redelivery is a duplicate", async () => {
    await createPipeline(t, owner, projectId, { name: "big", trigger_config: { events: ["push"], branches: ["main"] } });
    const push = await bigPush(WEBHOOK_BODY_LIMIT_BYTES - 1024 * 1024, SHA_A, "big-delivery-1");
    expect(push.body.length).toBeGreaterThan(24 * 1024 * 1024);
    expect(push.body.length).toBeLessThanOrEqual(WEBHOOK_BODY_LIMIT_BYTES);

    const res = await send(push);
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { ok: true, duplicate: false } });
    expect(res.body.builds).toHaveLength(1);

    const read = await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner });
    expect(read.status).toBe(200);
    const { body, ...record } = read.body.delivery;
    expect(record).toMatchObject({ result: "built", delivery_id: "big-delivery-1", commit_sha: SHA_A });
    expect(body.length).toBe(push.body.length);
    expect(body === push.body).toBe(true);

    const list = await t.call("GET", `/v1/projects/${projectId}/webhook-deliveries?limit=200`, { token: owner });
    expect(list.status).toBe(200);
    expect(list.body.deliveries.map((d: { id: string }) => d.id)).toContain(res.body.delivery_id);

    // GitHub's redelivery: the same delivery id and body.
    const again = await send(push);
    expect({ status: again.status, body: again.body }).toMatchObject({ status: 200, body: { ok: true, duplicate: true, builds: [] } });
    const duplicate = await t.call("GET", `/v1/webhook-deliveries/${again.body.delivery_id}`, { token: owner });
    expect(duplicate.body.delivery).toMatchObject({ result: "duplicate", duplicate_of: res.body.delivery_id, body: null });
  }, 60_000);

  test("one sent twice at once under two delivery ids builds once, and only its body is kept", async () => {
    const push = await bigPush(12 * 1024 * 1024, SHA_A, "big-delivery-2");
    const [a, b] = await Promise.all([send(push), send({ ...push, headers: { ...push.headers, "x-github-delivery": "big-delivery-2-copy" } })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.body.duplicate, b.body.duplicate].sort()).toEqual([false, true]);
    const built = a.body.duplicate ? b : a;
    expect(built.body.builds).toHaveLength(1);
    const kept = await t.db.execute("SELECT DISTINCT delivery_id FROM webhook_delivery_bodies WHERE delivery_id IN (?, ?)", [
      a.body.delivery_id,
      b.body.delivery_id,
    ]);
    expect(kept.rows.map((r) => r.delivery_id)).toEqual([built.body.delivery_id]);
    expect((await t.call("GET", `/v1/webhook-deliveries/${built.body.delivery_id}`, { token: owner })).body.delivery.body === push.body).toBe(true);
  }, 60_000);

  test("one that is not what GitHub sends is answered 400 and recorded with its body", async () => {
    // Signed JSON, but a list: not a push payload.
    const body = JSON.stringify([hexText(20 * 1024 * 1024, "not-a-push")]);
    const res = await t.call("POST", "/v1/webhooks/github", {
      raw: body,
      contentType: "application/json",
      headers: { "x-github-event": "push", "x-github-delivery": "big-invalid", "x-hub-signature-256": await sign(WEBHOOK_SECRET, body) },
      peer: "140.82.112.1",
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_payload");
    const list = await t.call("GET", "/v1/webhook-deliveries?result=rejected&limit=200", { token: owner });
    const record = list.body.deliveries.find((d: { delivery_id: string }) => d.delivery_id === "big-invalid");
    expect(record).toMatchObject({ verified: true, result: "rejected" });
    const read = await t.call("GET", `/v1/webhook-deliveries/${record.id}`, { token: owner });
    expect(read.body.delivery.body === body).toBe(true);
  }, 60_000);

  test("its body is kept 7 days, like any other, and then takes no room", async () => {
    const push = await bigPush(8 * 1024 * 1024, SHA_A, "big-delivery-3");
    const res = await send(push);
    expect(res.status).toBe(200);
    await pruneDeliveries(t.db, t.clock.now() + 6 * 86_400);
    expect((await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner })).body.delivery.body === push.body).toBe(true);
    await pruneDeliveries(t.db, t.clock.now() + 8 * 86_400);
    const later = await t.call("GET", `/v1/webhook-deliveries/${res.body.delivery_id}`, { token: owner });
    expect(later.body.delivery).toMatchObject({ id: res.body.delivery_id, result: "built", body: null });
    expect((await t.db.execute("SELECT COUNT(*) AS n FROM webhook_delivery_bodies")).rows[0]!.n).toBe(0);
  }, 60_000);
});

describe("a push of a commit whose subject is megabytes long", () => {
  // A payload's commit message has no length limit; a build keeps a changelog of the subjects.
  test("builds, its changelog keeping the subject's first 1,000 characters", async () => {
    await createPipeline(t, owner, projectId, { name: "long-subject", trigger_config: { events: ["push"], branches: ["long-subject"] } });
    const subject = "語".repeat(3 * 1024 * 1024);
    const res = await send(await signedAcmePush("long-subject", "d".repeat(40), "long-subject", `${subject}\n\nbody`));
    expect({ status: res.status, built: res.body.builds?.length }).toEqual({ status: 200, built: 1 });
    const build = (await t.call("GET", `/v1/builds/${res.body.builds[0].id}`, { token: owner })).body.build;
    expect(build.changelog).toBe(`ddddddd ${"語".repeat(999)}… (dev)`);
  }, 60_000);
});

describe("on a libSQL server over WebSocket (a libsql: URL)", () => {
  // sqld closed the WebSocket on a request of 16 MiB, failing every request on it; the pieces of
  // bodies stored at once were such a request when the write queue sent them together.
  test("three deliveries of 10 MB at once all build, and each body reads back whole", async () => {
    const sqld = await startSqld();
    const fixture = await startCiFixture({ ROOST_DATABASE_URL: `libsql://127.0.0.1:${new URL(sqld.url).port}?tls=0` });
    try {
      await createPipeline(fixture.t, fixture.owner, fixture.projectId, { name: "big", trigger_config: { events: ["push"], branches: ["main"] } });
      const pushes = await Promise.all(["a", "b", "c"].map((c, i) => bigPush(10 * 1024 * 1024, c.repeat(40), `ws-delivery-${i}`)));
      const answers = await Promise.all(pushes.map((push) => send(push, fixture.t)));
      expect(answers.map((a) => [a.status, a.body.builds?.length])).toEqual([
        [200, 1],
        [200, 1],
        [200, 1],
      ]);
      for (const [i, a] of answers.entries()) {
        const read = await fixture.t.call("GET", `/v1/webhook-deliveries/${a.body.delivery_id}`, { token: fixture.owner });
        expect(read.body.delivery.body === pushes[i]!.body).toBe(true);
      }
    } finally {
      await fixture.stop();
      await sqld.stop();
    }
  }, 60_000);
});
