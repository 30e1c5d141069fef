// Several daemons on one database take turns with one sweep cursor (lib/object-store/sweep.ts,
// schema.sql migration 39): a pass takes the cursor, lists one page after it and moves it on, so
// the daemons walk the store once between them, and one killed mid-pass lets the cursor go by expiry.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../../helpers/ci.ts";
import { createBuild } from "../../../lib/builds/create.ts";
import { ABANDONED_FILE_SECONDS } from "../../../lib/artifacts/artifacts.ts";
import { artifactKey } from "../../../lib/object-store/store.ts";
import { SWEEP_LEASE_SECONDS, sweepNextPage } from "../../../lib/object-store/sweep.ts";

let fixture: CiFixture;
beforeAll(async () => {
  // On the real clock from the start (the objects are dated by it), before the owner's session is made.
  fixture = await startCiFixture({}, { clockStart: Math.floor(Date.now() / 1000) });
});
afterAll(() => fixture.stop());

test("daemons continue each other's listing, one pass at a time, and a dead daemon's turn expires", async () => {
  const t = fixture.t;
  t.clock.set(Math.floor(Date.now() / 1000));
  const pipeline = await createPipeline(t, fixture.owner, fixture.projectId);
  await createBuild(t.ctx, { pipelineId: pipeline.id, branch: "main", commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
  // Three objects no row names (bytes whose artifact row never came), old enough to go.
  const orphans = ["a", "b", "c"].map((id) => artifactKey("gone-build", id));
  for (const key of orphans) await t.ctx.objects.put(key, new TextEncoder().encode(key), { maxBytes: 1024, tooLarge: "too large" });
  t.clock.advance(ABANDONED_FILE_SECONDS + 60);
  const left = async () => (await t.ctx.objects.list({ prefix: "artifacts/", after: undefined, limit: 100 })).objects.length;

  // Two daemons at once: one takes the turn, the other skips its pass.
  const [first, second] = await Promise.all([sweepNextPage(t.ctx, "daemon-1", 1), sweepNextPage(t.ctx, "daemon-2", 1)]);
  expect([first === null, second === null].sort()).toEqual([false, true]);
  expect(await left()).toBe(2);
  // The other daemon goes on from where that pass stopped: one new key a pass, none listed twice.
  expect((await sweepNextPage(t.ctx, "daemon-2", 1))?.deleted).toBe(1);
  expect(await left()).toBe(1);

  // A daemon killed during its pass holds the cursor until the lease runs out.
  await t.db.execute({ sql: "UPDATE object_sweep SET taken_by = 'killed', taken_until = ?", args: [t.clock.now() + SWEEP_LEASE_SECONDS] });
  expect(await sweepNextPage(t.ctx, "daemon-1", 1)).toBeNull();
  t.clock.advance(SWEEP_LEASE_SECONDS + 1);
  expect((await sweepNextPage(t.ctx, "daemon-1", 1))?.deleted).toBe(1);
  expect(await left()).toBe(0);
});
