// Objects no row refers to are deleted by a background pass (lib/object-store/sweep.ts,
// docs/operations.md "Object storage"): an upload whose bytes reached the store but whose row was
// never committed, a log or artifact whose row went while the store refused its delete. The pass
// lists one page of keys after where the last one stopped, so each costs the same however large
// the store. Run on the data directory and on a real S3 server (tests/support/s3-server.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../../helpers/ci.ts";
import { startS3Server, type S3Server } from "../../support/s3-server.ts";
import { createBuild } from "../../../lib/builds/create.ts";
import { storeArtifact } from "../../../lib/artifacts/artifacts.ts";
import { artifactKey } from "../../../lib/object-store/store.ts";
import { ABANDONED_FILE_SECONDS } from "../../../lib/artifacts/artifacts.ts";
import { cacheObjectKey, storeCache } from "../../../lib/caches/store.ts";
import { SWEEP_START, sweepOrphanedObjects, type SweepCursor } from "../../../lib/object-store/sweep.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const opts = { maxBytes: 1024, tooLarge: "too large" };

for (const kind of ["disk", "s3"] as const) {
  describe(`objects no row refers to, on ${kind === "disk" ? "the data directory" : "an S3-compatible bucket"}`, () => {
    let s3: S3Server | undefined;
    let fixture: CiFixture;
    beforeAll(async () => {
      if (kind === "s3") s3 = await startS3Server();
      // On the real clock from the start (the objects are dated by it), before the owner's session is made.
      fixture = await startCiFixture(s3 ? s3.env() : {}, { clockStart: Math.floor(Date.now() / 1000) });
    });
    afterAll(async () => {
      await fixture.stop();
      await s3?.stop();
    });

    test("are deleted once old, a page per pass, while objects with rows and young ones stay", async () => {
      const t = fixture.t;
      t.clock.set(Math.floor(Date.now() / 1000));
      const pipeline = await createPipeline(t, fixture.owner, fixture.projectId);
      const { build } = await createBuild(t.ctx, { pipelineId: pipeline.id, branch: "main", commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
      // An artifact stored as an upload stores it: object, then row.
      const kept = await storeArtifact(t.db, t.ctx.objects, {
        buildId: build.id,
        jobId: "job-that-uploaded",
        path: "app.apk",
        body: new Blob([bytes("apk")]).stream(),
        expectedSha256: new Bun.CryptoHasher("sha256").update("apk").digest("hex"),
        maxBytes: 1024,
        declaredLength: null,
        now: t.clock.now(),
      });
      // Bytes whose row never came (a daemon killed between the two), of this build and of one deleted.
      const orphans = [artifactKey(build.id, "0-never-committed"), artifactKey(build.id, "1-never-committed"), artifactKey("gone-build", "2-never-committed")];
      for (const key of orphans) await t.ctx.objects.put(key, bytes(key), opts);
      // Sorted here: S3 lists in key order, S3rver in its directory's order.
      const keys = async () => (await t.ctx.objects.list({ prefix: "artifacts/", after: undefined, limit: 100 })).objects.map((o) => o.key).sort();
      const all = [...orphans, artifactKey(build.id, kept.id)].sort();
      expect(await keys()).toEqual(all);

      // A pass lists two keys; passes go through the listing and start over at its end.
      const cycle = async () => {
        let cursor: SweepCursor = SWEEP_START;
        let deleted = 0;
        for (let pass = 0; pass < 10; pass++) {
          const r = await sweepOrphanedObjects(t.ctx, cursor, 2);
          expect(r.deleted).toBeLessThanOrEqual(2);
          deleted += r.deleted;
          cursor = r.next;
          if (cursor.prefix === 0 && cursor.after === undefined) return deleted;
        }
        throw new Error("the sweep never came back to the start of the listing");
      };
      // Young: an upload may still be committing its row.
      expect(await cycle()).toBe(0);
      expect(await keys()).toEqual(all);

      t.clock.advance(ABANDONED_FILE_SECONDS + 60);
      let deleted = 0;
      // S3 lists in key order, so one cycle finds every key; S3rver in its directory order, after the cursor, so it may take two.
      for (let i = 0; i < 3 && deleted < 3; i++) deleted += await cycle();
      expect(deleted).toBe(3);
      expect(await keys()).toEqual([artifactKey(build.id, kept.id)]);
      const download = await t.call("GET", `/v1/builds/${build.id}/artifacts/${kept.id}`, { token: fixture.owner });
      expect({ status: download.status, text: download.text }).toEqual({ status: 200, text: "apk" });

      // A shared cache archive: kept with its row, deleted without one once old.
      const saved = await storeCache(t.db, t.ctx.objects, t.ctx.log, {
        writer: { projectId: fixture.projectId, pipelineId: pipeline.id, scope: "branch:main" },
        key: "pub-1",
        version: "v1",
        body: new Blob([bytes("pub cache")]).stream(),
        expectedSha256: new Bun.CryptoHasher("sha256").update("pub cache").digest("hex"),
        maxBytes: 1024,
        declaredLength: null,
        now: t.clock.now(),
      });
      const strayCache = cacheObjectKey(fixture.projectId, "never-recorded");
      await t.ctx.objects.put(strayCache, bytes("stray"), opts);
      const cacheKeys = async () => (await t.ctx.objects.list({ prefix: "caches/", after: undefined, limit: 100 })).objects.map((o) => o.key).sort();
      expect(await cacheKeys()).toEqual([cacheObjectKey(fixture.projectId, saved.id), strayCache].sort());
      t.clock.advance(ABANDONED_FILE_SECONDS + 60);
      deleted = 0;
      for (let i = 0; i < 3 && deleted < 1; i++) deleted += await cycle();
      expect(deleted).toBe(1);
      expect(await cacheKeys()).toEqual([cacheObjectKey(fixture.projectId, saved.id)]);
    });
  });
}
