// Status badges (docs/api.md "Status badges"): private by default, public when the project says
// so, the newest build's status per branch, and cache headers GitHub's image proxy revalidates.
import { describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, createProject, startGithubFixture, fixturePerFile } from "../helpers/ci.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";

let t: TestApp, owner: string;
fixturePerFile(startGithubFixture, (fixture) => ({ t, owner } = fixture));

async function build(pipelineId: string, branch: string, ...moves: ("start" | "succeed" | "fail" | "cancel")[]) {
  const { build } = await createBuild(t.ctx, { pipelineId, branch, commitSha: SHA_A, triggerType: "manual", concurrencyKey: null });
  for (const m of moves) await transitionBuild(t.ctx, build.id, m);
}

const status = (svg: string) => /aria-label="[^"]*: (\w+)"/.exec(svg)?.[1];

describe("status badges", () => {
  test("private by default: without the project's consent the badge is 404 as if the pipeline did not exist", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const res = await t.call("GET", `/v1/pipelines/${pipeline.id}/badge.svg`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: "not_found", message: "No pipeline with that id." });
    expect((await t.call("GET", `/v1/projects/${project.id}/badges`, { token: owner })).body).toEqual({
      public: false,
      badges: [{ pipeline_id: pipeline.id, pipeline_name: pipeline.name, url: `http://127.0.0.1:8080/v1/pipelines/${pipeline.id}/badge.svg` }],
    });
  });

  test("only a maintainer makes badges public; then anyone reads unknown, running, passing, failing per branch", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const dev = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${project.id}/members/${dev.id}`, { token: owner, body: { role: "developer" } });
    const denied = await t.call("PUT", `/v1/projects/${project.id}/badges`, { token: dev.token, body: { public: true } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe("forbidden");
    expect((await t.call("PUT", `/v1/projects/${project.id}/badges`, { token: owner, body: { public: true } })).body.public).toBe(true);

    const read = async (branch?: string) => {
      const res = await t.call("GET", `/v1/pipelines/${pipeline.id}/badge.svg${branch ? `?branch=${encodeURIComponent(branch)}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/svg+xml; charset=utf-8");
      return status(res.text);
    };
    expect(await read()).toBe("unknown");
    await build(pipeline.id, "main", "start");
    expect(await read()).toBe("running");
    await t.db.execute("UPDATE builds SET status = 'succeeded' WHERE pipeline_id = ?", [pipeline.id]);
    expect(await read()).toBe("passing");
    await build(pipeline.id, "main", "start", "fail");
    expect(await read()).toBe("failing");
    // A canceled build does not decide; another branch has its own badge.
    await build(pipeline.id, "main", "cancel");
    expect(await read()).toBe("failing");
    await build(pipeline.id, "release/1.0", "start", "succeed");
    expect(await read("release/1.0")).toBe("passing");
    expect(await read()).toBe("failing");
  });

  test("Cache-Control: no-cache with an ETag; If-None-Match answers 304 until the status changes", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    await t.call("PUT", `/v1/projects/${project.id}/badges`, { token: owner, body: { public: true } });
    const first = await t.call("GET", `/v1/pipelines/${pipeline.id}/badge.svg`);
    expect(first.headers.get("cache-control")).toBe("no-cache, max-age=0");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await t.call("GET", `/v1/pipelines/${pipeline.id}/badge.svg`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    await build(pipeline.id, "main", "start");
    const changed = await t.call("GET", `/v1/pipelines/${pipeline.id}/badge.svg`, { headers: { "if-none-match": etag } });
    expect(changed.status).toBe(200);
    expect(status(changed.text)).toBe("running");
    expect(changed.headers.get("etag")).not.toBe(etag);
  });
});
