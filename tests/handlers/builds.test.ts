// Builds (docs/api.md "Builds"): manual creation, re-run, cancel, listings, numbering and the
// concurrency rules.
import { describe, expect, test } from "bun:test";
import { userWithRole, type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, SHA_B, createPipeline, createProject, startGithubFixture, fixturePerFile } from "../helpers/ci.ts";
import { createBuild } from "../../lib/builds/create.ts";
import { transitionBuild } from "../../lib/builds/transition.ts";

let t: TestApp, host: HostApiStandIn, owner: string;
fixturePerFile(startGithubFixture, (fixture) => ({ t, host, owner } = fixture));

describe("manual builds", () => {
  test("without a commit, the branch head is asked of the host; the build is queued with a frozen snapshot", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id, { execution_config: { env: [{ key: "TOKEN", value: "s3cr3t-value", secret: true }] } });
    const res = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id } });
    expect(res.status).toBe(201);
    expect(res.body.build).toMatchObject({
      build_number: 1,
      project_id: project.id,
      pipeline_id: pipeline.id,
      status: "queued",
      branch: "main",
      commit_sha: SHA_A,
      trigger_type: "manual",
      trigger_event: "manual",
      trigger_ref: "refs/heads/main",
      trigger_actor: "owner@example.test",
      source_build_id: null,
      runner_id: null,
      exit_code: null,
      queued_at: t.clock.now(),
      started_at: null,
      finished_at: null,
      step_results: [],
    });
    expect(res.body.build.config_snapshot.pipeline_name).toBe(pipeline.name);
    expect(res.body.build.config_snapshot.execution_config.env).toEqual([{ key: "TOKEN", value: "", secret: true }]);
    expect(res.text).not.toContain("s3cr3t-value");
  });

  test("a named branch and commit are used as given; an unknown branch is 404; an unreachable host is 502", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const given = await t.call("POST", `/v1/projects/${project.id}/builds`, {
      token: owner,
      body: { pipeline_id: pipeline.id, branch: "release/1.0", commit_sha: SHA_B },
    });
    expect(given.body.build).toMatchObject({ branch: "release/1.0", commit_sha: SHA_B });
    const head = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, branch: "release/1.0" } });
    expect(head.body.build.commit_sha).toBe(SHA_B);
    const missing = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, branch: "nope" } });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ code: "not_found", message: "Branch nope does not exist in acme/app." });
    host.failNext(1);
    const down = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id } });
    expect(down.status).toBe(502);
    expect(down.body.code).toBe("source_host_error");
    const bad = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: "abc" } });
    expect(bad.status).toBe(400);
  });

  test("a pipeline of another project is 404", async () => {
    const a = await createProject(t, owner);
    const b = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, b.id);
    const res = await t.call("POST", `/v1/projects/${a.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect(res.status).toBe(404);
  });

  test("project viewers cannot start builds; developers can", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const user = await userWithRole(t, owner, "developer");
    await t.call("PUT", `/v1/projects/${project.id}/members/${user.id}`, { token: owner, body: { role: "viewer" } });
    const refused = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: user.token, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect(refused.status).toBe(403);
    await t.call("PUT", `/v1/projects/${project.id}/members/${user.id}`, { token: owner, body: { role: "developer" } });
    const ok = await t.call("POST", `/v1/projects/${project.id}/builds`, { token: user.token, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect(ok.status).toBe(201);
  });
});

describe("build numbers", () => {
  test("50 parallel creations get 1..50 exactly once each", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } }),
      ),
    );
    expect(results.every((r) => r.status === 201)).toBe(true);
    const numbers = results.map((r) => r.body.build.build_number).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });
});

describe("re-run", () => {
  test("copies the source's snapshot, branch and commit even after the pipeline changed", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id, { execution_config: { flutter_version: "3.22.0" } });
    const source = (
      await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, branch: "release/1.0", commit_sha: SHA_B } })
    ).body.build;
    await t.call("PATCH", `/v1/pipelines/${pipeline.id}`, { token: owner, body: { execution_config: { flutter_version: "3.24.5" } } });
    const res = await t.call("POST", `/v1/builds/${source.id}/rerun`, { token: owner });
    expect(res.status).toBe(201);
    expect(res.body.build).toMatchObject({
      source_build_id: source.id,
      branch: "release/1.0",
      commit_sha: SHA_B,
      trigger_type: "rerun",
      status: "queued",
      build_number: source.build_number + 1,
    });
    expect(res.body.build.config_snapshot).toEqual(source.config_snapshot);
    expect(res.body.build.config_snapshot.execution_config.flutter_version).toBe("3.22.0");
    expect((await t.call("POST", "/v1/builds/nope/rerun", { token: owner })).status).toBe(404);
  });
});

describe("cancel", () => {
  test("queued and running builds are canceled with finished_at; anything else is 409 build_not_cancelable", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const queued = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const res = await t.call("POST", `/v1/builds/${queued.id}/cancel`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.build).toMatchObject({ status: "canceled", finished_at: t.clock.now(), failure_reason: "canceled by owner@example.test" });
    const again = await t.call("POST", `/v1/builds/${queued.id}/cancel`, { token: owner });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      code: "build_not_cancelable",
      message: `Build #${queued.build_number} is canceled; only queued or running builds can be canceled.`,
    });

    const running = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    t.clock.advance(5);
    await transitionBuild(t.ctx, running.id, "start", { runner_id: "r1" });
    const stopped = await t.call("POST", `/v1/builds/${running.id}/cancel`, { token: owner });
    expect(stopped.body.build).toMatchObject({ status: "canceled", started_at: t.clock.now(), runner_id: "r1" });
  });

  test("illegal transitions are refused by the state machine", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const { build } = await createBuild(t.ctx, { pipelineId: pipeline.id, branch: "main", commitSha: SHA_A, triggerType: "manual" });
    expect(await transitionBuild(t.ctx, build.id, "succeed")).toBeNull();
    expect((await transitionBuild(t.ctx, build.id, "start"))!.status).toBe("running");
    expect(await transitionBuild(t.ctx, build.id, "start")).toBeNull();
    const done = await transitionBuild(t.ctx, build.id, "succeed", { exit_code: 0 });
    expect(done).toMatchObject({ status: "succeeded", exit_code: 0, finished_at: t.clock.now() });
    expect(await transitionBuild(t.ctx, build.id, "cancel")).toBeNull();
  });
});

describe("concurrency", () => {
  test("cancel_previous cancels older queued/running builds of the same branch, never other branches, tags or manual builds", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id, { concurrency: { cancel_previous: true, max_concurrent: 5 } });
    const push = (branch: string) =>
      createBuild(t.ctx, {
        pipelineId: pipeline.id,
        branch,
        commitSha: SHA_A,
        triggerType: "webhook",
        triggerEvent: "push",
        concurrencyKey: `branch:${branch}`,
      });
    const first = (await push("main")).build;
    const other = (await push("dev")).build;
    const tag = (
      await createBuild(t.ctx, { pipelineId: pipeline.id, branch: "main", commitSha: SHA_A, triggerType: "webhook", triggerEvent: "tag", concurrencyKey: null })
    ).build;
    const manual = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    await transitionBuild(t.ctx, first.id, "start", { runner_id: "r1" });
    const newer = await push("main");
    expect(newer.canceled.map((b) => b.id)).toEqual([first.id]);
    const statuses = async (id: string) => (await t.call("GET", `/v1/builds/${id}`, { token: owner })).body.build;
    expect(await statuses(first.id)).toMatchObject({ status: "canceled", failure_reason: `superseded by build #${newer.build.build_number}` });
    for (const id of [other.id, tag.id, manual.id, newer.build.id]) expect((await statuses(id)).status).toBe("queued");
  });
});

describe("listings", () => {
  const numbers = (res: { body: { builds: { build_number: number }[] } }) => res.body.builds.map((x) => x.build_number);

  test("per project and per pipeline, newest first and filtered; total only when asked for", async () => {
    const project = await createProject(t, owner);
    const a = await createPipeline(t, owner, project.id);
    const b = await createPipeline(t, owner, project.id);
    for (const p of [a, b, a]) await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: p.id, commit_sha: SHA_A } });
    const all = await t.call("GET", `/v1/projects/${project.id}/builds?limit=2`, { token: owner });
    expect(numbers(all)).toEqual([3, 2]);
    expect("total" in all.body).toBe(false);
    expect((await t.call("GET", `/v1/projects/${project.id}/builds?include=total`, { token: owner })).body).toMatchObject({ total: 3, next_cursor: null });
    const ofA = await t.call("GET", `/v1/pipelines/${a.id}/builds`, { token: owner });
    expect(numbers(ofA)).toEqual([3, 1]);
    await t.call("POST", `/v1/builds/${ofA.body.builds[0].id}/cancel`, { token: owner });
    const canceled = await t.call("GET", `/v1/projects/${project.id}/builds?status=canceled&include=total`, { token: owner });
    expect(numbers(canceled)).toEqual([3]);
    expect(canceled.body.total).toBe(1);
    expect((await t.call("GET", `/v1/pipelines/${a.id}/builds?status=queued&include=total`, { token: owner })).body.total).toBe(1);
    expect((await t.call("GET", `/v1/projects/${project.id}/builds?status=exploded`, { token: owner })).status).toBe(400);
    const combined = await t.call("GET", `/v1/projects/${project.id}/builds?trigger_type=manual&branch=main&status=queued&include=total`, { token: owner });
    expect(numbers(combined)).toEqual([2, 1]);
    expect(combined.body.total).toBe(2);
    expect(numbers(await t.call("GET", `/v1/projects/${project.id}/builds?trigger_type=webhook`, { token: owner }))).toEqual([]);
  });

  test("next_cursor walks every build once, and builds created meanwhile do not shift the pages", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const create = () => t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    for (let i = 0; i < 5; i++) await create();
    const walk = async (path: string, pages: number[][], createAfter: number) => {
      let cursor: string | null = null;
      for (const [i, expected] of pages.entries()) {
        const res = await t.call("GET", `${path}?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { token: owner });
        expect(numbers(res)).toEqual(expected);
        cursor = res.body.next_cursor;
        expect(cursor === null).toBe(i === pages.length - 1);
        if (i === createAfter) await create(); // a newer build: the next page still continues below this one
      }
    };
    await walk(`/v1/projects/${project.id}/builds`, [[5, 4], [3, 2], [1]], 1);
    await walk(
      `/v1/pipelines/${pipeline.id}/builds`,
      [
        [6, 5],
        [4, 3],
        [2, 1],
      ],
      0,
    );
    // An exactly full last page says so too: no cursor to an empty page.
    const exact = await t.call("GET", `/v1/projects/${project.id}/builds?limit=7`, { token: owner });
    expect(numbers(exact)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(exact.body.next_cursor).toBeNull();
  });

  test("a cursor this API did not give out, and the old offset parameter, are refused as JSON 400s", async () => {
    const project = await createProject(t, owner);
    for (const cursor of ["not-a-cursor", "YjA", Buffer.from("b-1").toString("base64url"), "%E2%9C%93", "x".repeat(40)]) {
      const res = await t.call("GET", `/v1/projects/${project.id}/builds?cursor=${cursor}`, { token: owner });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: "invalid_request",
        details: [{ path: "query.cursor", message: "is not a cursor from this listing (use next_cursor as given)" }],
      });
    }
    const offset = await t.call("GET", `/v1/projects/${project.id}/builds?offset=50`, { token: owner });
    expect(offset.status).toBe(400);
    expect(offset.body.code).toBe("invalid_request");
    expect(JSON.stringify(offset.body.details)).toContain("offset");
    expect((await t.call("GET", `/v1/projects/${project.id}/builds?include=everything`, { token: owner })).status).toBe(400);
  });

  test("filters together answer full pages, however many other builds lie between the ones they match", async () => {
    const project = await createProject(t, owner);
    const pipeline = await createPipeline(t, owner, project.id);
    const seed = (
      await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipeline.id, branch: "feature", commit_sha: SHA_B } })
    ).body.build;
    // 1,500 newer builds on main, copied from the first in one statement.
    await t.db.execute({
      sql: `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, trigger_event, queued_at, created_at, updated_at)
            WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 1501)
            SELECT 'copy-' || ? || '-' || i, project_id, pipeline_id, i, 'main', commit_sha, config_snapshot, 'queued', trigger_type, trigger_event, queued_at, created_at, updated_at FROM builds, n WHERE id = ?`,
      args: [seed.id, seed.id],
    });
    for (const filters of ["status=queued&branch=feature", "status=queued&branch=feature&trigger_type=manual", "branch=feature&trigger_type=manual"]) {
      const page = await t.call("GET", `/v1/projects/${project.id}/builds?${filters}&limit=10`, { token: owner });
      expect(numbers(page)).toEqual([1]);
      expect(page.body.next_cursor).toBeNull();
      expect((await t.call("GET", `/v1/projects/${project.id}/builds?${filters}&include=total`, { token: owner })).body.total).toBe(1);
    }
  });

  test("every combination of status, branch and trigger, per project and per pipeline, walks its builds newest first in full pages", async () => {
    const project = await createProject(t, owner);
    const pipelines = [await createPipeline(t, owner, project.id), await createPipeline(t, owner, project.id)];
    const seed = (await t.call("POST", `/v1/projects/${project.id}/builds`, { token: owner, body: { pipeline_id: pipelines[0].id, commit_sha: SHA_A } })).body
      .build;
    await t.call("POST", `/v1/builds/${seed.id}/cancel`, { token: owner });
    // Builds 2..211 of every status, three branches, every trigger and both pipelines, each value
    // on a different period so that every combination matches some builds and skips others.
    const statuses = ["queued", "running", "succeeded", "failed", "canceled"];
    const branches = ["main", "feature", "release/1"];
    const triggers = ["manual", "rerun", "webhook", "schedule"];
    const made = Array.from({ length: 210 }, (_, k) => ({
      number: k + 2,
      status: statuses[k % 5]!,
      branch: branches[Math.floor(k / 2) % 3]!,
      trigger: triggers[Math.floor(k / 3) % 4]!,
      pipeline: pipelines[Math.floor(k / 7) % 2].id as string,
    }));
    for (const b of made)
      await t.db.execute({
        sql: `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, trigger_event, queued_at, created_at, updated_at)
              SELECT ?, project_id, ?, ?, ?, commit_sha, config_snapshot, ?, ?, ?, queued_at, created_at, updated_at FROM builds WHERE id = ?`,
        args: [
          `${seed.id}-${b.number}`,
          b.pipeline,
          b.number,
          b.branch,
          b.status,
          b.trigger === "schedule" ? "manual" : b.trigger,
          b.trigger === "schedule" ? "schedule" : b.trigger,
          seed.id,
        ],
      });
    const all = [{ number: 1, status: "canceled", branch: "main", trigger: "manual", pipeline: pipelines[0].id as string }, ...made].reverse();
    for (const pipeline of [undefined, pipelines[1].id as string])
      for (const status of [undefined, "failed", "queued"])
        for (const branch of [undefined, "feature"])
          for (const trigger of [undefined, "schedule", "rerun"]) {
            const filters = Object.entries({ status, branch, trigger_type: trigger }).filter(([, v]) => v !== undefined);
            const path = `${pipeline ? `/v1/pipelines/${pipeline}` : `/v1/projects/${project.id}`}/builds?${filters.map(([k, v]) => `${k}=${v}`).join("&")}`;
            const expected = all
              .filter(
                (b) =>
                  (!pipeline || b.pipeline === pipeline) &&
                  (!status || b.status === status) &&
                  (!branch || b.branch === branch) &&
                  (!trigger || b.trigger === trigger),
              )
              .map((b) => b.number);
            const pages: number[][] = [];
            let cursor: string | null = null;
            do {
              const res = await t.call("GET", `${path}&limit=4${cursor ? `&cursor=${cursor}` : ""}`, { token: owner });
              expect(res.status).toBe(200);
              pages.push(numbers(res));
              cursor = res.body.next_cursor;
            } while (cursor !== null && pages.length <= expected.length);
            expect({ path, builds: pages.flat() }).toEqual({ path, builds: expected });
            // Full pages up to the last: no page stops short for having read too far.
            expect({ path, sizes: pages.map((p) => p.length) }).toEqual({
              path,
              sizes: Array.from({ length: Math.max(1, Math.ceil(expected.length / 4)) }, (_, i) => Math.min(4, expected.length - 4 * i)),
            });
          }
  });
});
