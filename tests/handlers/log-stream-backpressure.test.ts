// A slow SSE client lags but never makes the server buffer without bound or drop lines:
// the stream is pulled, so while the client does not read, the server stops reading log pages.
import { describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { recordingDb } from "../helpers/recording-db.ts";
import { createApp } from "../../lib/http/app.ts";
import { routes } from "../../handlers/routes.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

describe("a slow stream reader", () => {
  test("is served page by page as it reads: no page is read ahead of the client, and every line arrives once", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const created = (await t.call("POST", "/v1/runners", { token: owner, body: { name: "r" } })).body;
    await t.call("POST", `/v1/runners/${created.runner.id}/connect`, { token: created.token, body: { capabilities: { os: "linux", arch: "x64" } } });
    const job = (
      await t.call("POST", `/v1/runners/${created.runner.id}/jobs/claim`, { token: created.token, body: { claim_id: "slow-reader-claim", wait_seconds: 0 } })
    ).body.job;
    for (let i = 0; i < 3000; i += 1000) {
      await t.call("POST", `/v1/runners/${created.runner.id}/jobs/${job.job_id}/logs`, {
        token: created.token,
        body: { first_line: i, lines: Array.from({ length: 1000 }, (_, k) => ({ text: `line ${i + k}` })) },
      });
    }

    // Count the log pages the stream reads from the database.
    let pageReads = 0;
    const counting = recordingDb(t.db, (sql) => {
      if (sql.includes("FROM build_logs WHERE build_id = +? AND seq > ?")) pageReads++;
    });
    const app = createApp({ ...t.ctx, db: counting }, routes);
    const { token } = (await t.call("POST", `/v1/builds/${build.id}/stream-token`, { token: owner })).body;
    const response = await app.fetch(new Request(`http://127.0.0.1:8080/v1/builds/${build.id}/logs/stream?token=${token}`), "127.0.0.1");
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value); // "retry: 3000"
    text += decoder.decode((await reader.read()).value); // the status and the first page
    await Bun.sleep(300);
    const whileStalled = pageReads;
    // 3000 lines are 6 pages; a server that read ahead of its client would have read them all by now.
    expect(whileStalled).toBeLessThanOrEqual(2);

    while ((text.match(/^id: /gm)?.length ?? 0) < 3000) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    await reader.cancel();
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
    expect(pageReads).toBeGreaterThan(whileStalled);
  });
});
