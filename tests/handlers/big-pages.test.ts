// The largest pages the API allows, of the longest texts it keeps: a libSQL server answers at most
// 10 MB a request (sqld's --max-response-size, RESPONSE_TOO_LARGE), a file has no such limit, and
// either must answer the same page with the same cursor. Run on a libSQL server too (scripts/test,
// ROOST_TEST_DATABASE=sqld).
import { describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { copyBuild } from "../helpers/rows.ts";
import { reportCheckRuns } from "../../lib/test-results/check-runs.ts";
import { UNROUTABLE_AFTER_SECONDS, flagUnroutableBuilds } from "../../lib/runners/reaper.ts";

let t: TestApp, owner: string, projectId: string, host: HostApiStandIn;
// A log cap of 24 MB: its rolling tail (half) holds more than 10 MB of lines.
const LOG_CAP = 24 * 1024 * 1024;
fixturePerFile(
  () => startCiFixture({ ROOST_MAX_BUILD_LOG_BYTES: String(LOG_CAP) }),
  (fixture) => ({ t, owner, projectId, host } = fixture),
);

/** `n - 6` characters of 3 bytes each in UTF-8. */
const text = (n: number) => "語".repeat(n - 6);
/** `n` characters: row `seq`'s number, then `text(n)`, as the seeding SQL writes them. */
const numbered = (seq: number | string, n: number) => `${String(seq).padStart(5, " ")} ${text(n)}`;

/**
 * A build whose runner uploaded one JUnit report of `statuses.length` cases (case i is
 * `statuses[i]`, failures on test/big_test.dart line i + 1), finished when `finish` says so.
 */
async function buildWithCases(statuses: ("passed" | "failed" | "skipped")[], o: { finish?: boolean; name?: string } = {}): Promise<string> {
  const pipeline = await createPipeline(t, owner, projectId, o.name ? { name: o.name } : {});
  const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
  const created = (await t.call("POST", "/v1/runners", { token: owner, body: { name: `big-${crypto.randomUUID().slice(0, 6)}` } })).body;
  await t.call("POST", `/v1/runners/${created.runner.id}/connect`, { token: created.token, body: { capabilities: { os: "linux", arch: "x64" } } });
  const job = (
    await t.call("POST", `/v1/runners/${created.runner.id}/jobs/claim`, { token: created.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })
  ).body.job;
  expect(job.build.id).toBe(made.body.build.id);
  const cases = statuses.map((s, i) => {
    const name = `case ${String(i).padStart(4, "0")}`;
    if (s === "passed") return `<testcase classname="big" name="${name}"/>`;
    if (s === "skipped") return `<testcase classname="big" name="${name}"><skipped/></testcase>`;
    return `<testcase classname="big" name="${name}" file="test/big_test.dart" line="${i + 1}"><failure message="m">s</failure></testcase>`;
  });
  const xml = `<?xml version="1.0"?><testsuite name="big" tests="${statuses.length}">${cases.join("")}</testsuite>`;
  const res = await t.call("PUT", `/v1/runners/${created.runner.id}/jobs/${job.job_id}/test-reports?path=${encodeURIComponent("TEST-big.xml")}`, {
    token: created.token,
    raw: xml,
    contentType: "application/octet-stream",
  });
  expect(res.status).toBeLessThan(300);
  if (o.finish)
    await t.call("POST", `/v1/runners/${created.runner.id}/jobs/${job.job_id}/finish`, {
      token: created.token,
      body: { status: "failed", exit_code: 1, line_count: 0 },
    });
  return made.body.build.id as string;
}

describe("a build's test cases", () => {
  // 200 cases (the page limit) of a 4,000-character message, a 16,000-character stack and 8,000
  // characters of output, the most a report keeps (lib/test-results/report.ts), of 3-byte
  // characters: about 17 MB, read as one page.
  test("the largest page of the longest non-ASCII texts answers whole, with the cursor that smaller pages give", async () => {
    const statuses = Array.from({ length: 250 }, (_, i) => (i % 5 === 0 ? "failed" : i % 5 === 1 ? "skipped" : "passed") as "passed" | "failed" | "skipped");
    const buildId = await buildWithCases(statuses);
    // Seeded directly: a report of such texts is ~20 MB to upload and read, and the reader's
    // bounds are not under test here. Each case's texts start with its seq, so no two are alike.
    await t.db.execute(
      "UPDATE test_results SET message = printf('%5d ', seq) || ?, stack = printf('%5d ', seq) || ?, output = printf('%5d ', seq) || ? WHERE build_id = ?",
      [text(4_000), text(16_000), text(8_000), buildId],
    );

    const get = (query: string) => t.call("GET", `/v1/builds/${buildId}/tests/cases?${query}`, { token: owner });
    const first = await get("limit=200");
    expect(first.status).toBe(200);
    const rest = await get(`limit=200&cursor=${first.body.next_cursor}`);
    expect(rest.status).toBe(200);
    const all = [...first.body.cases, ...rest.body.cases];
    expect({ first: first.body.cases.length, rest: rest.body.cases.length, end: rest.body.next_cursor }).toEqual({ first: 200, rest: 50, end: null });
    // Failures first, then skipped, then passed, each in report order; every text whole.
    const seqs = (s: string) => statuses.flatMap((v, i) => (v === s ? [i + 1] : []));
    expect(all.map((c) => Number(c.id))).toEqual([...seqs("failed"), ...seqs("skipped"), ...seqs("passed")]);
    for (const c of all) expect([c.message, c.stack, c.output]).toEqual([numbered(c.id, 4_000), numbered(c.id, 16_000), numbered(c.id, 8_000)]);

    // Pages of 20 (about 1.7 MB each) read the same cases, and the tenth ends at the same cursor.
    const small: any[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page = await get(`limit=20${cursor ? `&cursor=${cursor}` : ""}`);
      small.push(...page.body.cases);
      cursor = page.body.next_cursor;
    }
    expect(cursor).toBe(first.body.next_cursor);
    expect(small).toEqual(first.body.cases);
  });
});

describe("a build's analyzer issues", () => {
  // 2,000 issues (the most a build keeps, lib/test-results/record.ts) of a 1,000-character file and
  // a 4,000-character message (the most a report keeps) of 3-byte characters: about 30 MB.
  test("every issue of a build holding the most, of the longest non-ASCII texts, answers in order", async () => {
    const buildId = await buildWithCases(["passed"]);
    await t.db.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
       INSERT INTO build_annotations (build_id, seq, severity, file, line, col, code, message)
       SELECT ?, i, CASE i % 3 WHEN 0 THEN 'error' WHEN 1 THEN 'warning' ELSE 'notice' END, printf('%5d ', i) || ?, i, NULL, 'code', printf('%5d ', i) || ? FROM n`,
      [buildId, text(1_000), text(4_000)],
    );
    const res = await t.call("GET", `/v1/builds/${buildId}/tests`, { token: owner });
    expect(res.status).toBe(200);
    const bySeverity = (r: number) => Array.from({ length: 2000 }, (_, i) => i + 1).filter((i) => i % 3 === r);
    const seqs = [...bySeverity(0), ...bySeverity(1), ...bySeverity(2)];
    expect(res.body.annotations.map((a: { line: number }) => a.line)).toEqual(seqs);
    expect(
      res.body.annotations.every(
        (a: { line: number; file: string; message: string }) => a.file === numbered(a.line, 1_000) && a.message === numbered(a.line, 4_000),
      ),
    ).toBe(true);
  });
});

describe("a build's check run", () => {
  // 200 failed tests (the most a check run annotates, lib/test-results/check-runs.ts) of a
  // 4,000-character message and a 16,000-character stack of 3-byte characters: about 12 MB.
  test("annotates each of 200 failed tests of the longest non-ASCII texts", async () => {
    const buildId = await buildWithCases(
      Array.from({ length: 200 }, () => "failed"),
      { finish: true, name: "BigChecks" },
    );
    await t.db.execute("UPDATE test_results SET message = printf('%5d ', seq) || ?, stack = printf('%5d ', seq) || ? WHERE build_id = ?", [
      text(4_000),
      text(16_000),
      buildId,
    ]);
    await reportCheckRuns({
      db: t.db,
      secrets: t.ctx.secrets,
      config: t.ctx.config,
      clock: t.clock,
      log: t.ctx.log,
      now: t.clock.now(),
      baseUrl: "https://ci.example.test",
    });
    const run = host.github.checkRuns.find((r) => r.name === "roost/BigChecks");
    expect(run?.annotations.length).toBe(200);
    expect(run!.annotations.every((a: any) => a.message === numbered(a.start_line, 4_000) && a.raw_details === numbered(a.start_line, 16_000))).toBe(true);
    expect(run!.annotations.map((a: any) => a.start_line)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });
});

describe("the webhook delivery log", () => {
  // A delivery's body is kept up to 25 MB (lib/webhooks/limits.ts; a libSQL server stores a value
  // of about 5 MB at most); lists do not show it. Three of 4 MB: 12 MB.
  test("a page of deliveries whose bodies pass 10 MB together lists every delivery", async () => {
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const now = t.clock.now();
    for (const [i, id] of ids.entries())
      await t.db.execute(
        `INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, project_id, decisions, body, received_at, body_expires_at)
         VALUES (?, 'github', ?, 'push', '', 1, 'ignored', 'no pipeline matched', ?, '[]', replace(hex(zeroblob(2000000)), '0', 'x'), ?, ?)`,
        [id, `big-${i}`, projectId, now + 1000 + i, now + 1000 + i + 86_400],
      );
    for (const path of [`/v1/projects/${projectId}/webhook-deliveries?limit=200`, "/v1/webhook-deliveries?limit=200"]) {
      const res = await t.call("GET", path, { token: owner });
      expect(res.status).toBe(200);
      expect(res.body.deliveries.slice(0, 3).map((d: { id: string; body?: unknown }) => [d.id, d.body])).toEqual([
        [ids[2], undefined],
        [ids[1], undefined],
        [ids[0], undefined],
      ]);
    }
    // The body itself is still there, one delivery at a time.
    const one = await t.call("GET", `/v1/webhook-deliveries/${ids[0]}`, { token: owner });
    expect({ status: one.status, length: one.body.delivery?.body?.length }).toEqual({ status: 200, length: 4_000_000 });
  });
});

describe("a project's builds", () => {
  // A build carries its config snapshot (a pipeline file is up to 256 KiB) and its changelog (the
  // subject lines of up to 50 commits, of any length): 200 of 150 KB here, about 30 MB.
  test("the largest page of builds carrying long non-ASCII changelogs answers whole, with the cursor that smaller pages give", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "BigBuilds" });
    const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect(made.status).toBe(201);
    const first = made.body.build as { id: string; build_number: number };
    // 210 more builds copied from it, finished, each with 50 changelog lines of 1,000 characters.
    await copyBuild(t.db, first.id, 210, { changelog: Array.from({ length: 50 }, () => text(1_000)).join("\n"), numbered: true, status: "canceled" });
    // The project's next number moves past the copies, as if they had been made through the API.
    await t.db.execute("UPDATE projects SET next_build_number = next_build_number + 210 WHERE id = ?", [projectId]);
    const get = (query: string) => t.call("GET", `/v1/pipelines/${pipeline.id}/builds?${query}`, { token: owner });
    const page = await get("limit=200");
    expect(page.status).toBe(200);
    const numbers = Array.from({ length: 200 }, (_, i) => first.build_number + 210 - i);
    expect(page.body.builds.map((b: { build_number: number }) => b.build_number)).toEqual(numbers);
    const lines = Array.from({ length: 50 }, () => text(1_000)).join("\n");
    const copy = (b: { build_number: number }) => b.build_number - first.build_number;
    expect(page.body.builds.every((b: { build_number: number; changelog: string }) => b.changelog === `${String(copy(b)).padStart(5, " ")} ${lines}`)).toBe(
      true,
    );

    const small: any[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const part = await get(`limit=20${cursor ? `&cursor=${cursor}` : ""}`);
      small.push(...part.body.builds);
      cursor = part.body.next_cursor;
    }
    expect(cursor).toBe(page.body.next_cursor);
    expect(small).toEqual(page.body.builds);
    const rest = await get(`limit=200&cursor=${page.body.next_cursor}`);
    expect(rest.body.builds.map((b: { build_number: number }) => b.build_number)).toEqual(Array.from({ length: 11 }, (_, i) => first.build_number + 10 - i));
  });
});

describe("a project's deployments", () => {
  // A deployment carries its release notes (up to 4,000 characters a language, from a pipeline
  // file up to 256 KiB): 200 of 10 languages of 3-byte characters here, about 24 MB.
  test("the largest page of deployments carrying long non-ASCII release notes answers whole, as smaller pages do", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "BigDeploys" });
    const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect(made.status).toBe(201);
    const languages = ["en-US", "de-DE", "fr-FR", "ja-JP", "ko-KR", "zh-CN", "es-ES", "it-IT", "pt-BR", "ru-RU"];
    const now = t.clock.now();
    // 210 deployments, three made in each second (so the order's second key, rowid, matters).
    await t.db.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 210)
       INSERT INTO deployments (id, project_id, build_id, environment_name, publisher_name, publisher_type, publisher, target, trigger, status,
         requested_by_email, artifacts, release_notes, failure_reason, created_at, updated_at, finished_at)
       SELECT printf('big-deploy-%04d', i), ?2, ?3, 'production', 'play', 'google_play', '{"type":"google_play","name":"play"}', 'com.example/internal', 'build', 'failed',
         'ci@example.com', '[]', json_object(${languages.map((l) => `'${l}', printf('%5d ', i) || ?1`).join(", ")}), 'seeded', ?4 + i / 3, ?4 + i / 3, ?4 + i / 3 FROM n`,
      [text(4_000), projectId, made.body.build.id, now],
    );
    const get = (query: string) => t.call("GET", `/v1/projects/${projectId}/deployments?build_id=${made.body.build.id}&${query}`, { token: owner });
    const page = await get("limit=200");
    expect(page.status).toBe(200);
    const order = Array.from({ length: 210 }, (_, i) => 210 - i);
    const id = (i: number) => `big-deploy-${String(i).padStart(4, "0")}`;
    expect(page.body.deployments.map((d: { id: string }) => d.id)).toEqual(order.slice(0, 200).map(id));
    expect(
      page.body.deployments.every((d: { id: string; release_notes: Record<string, string> }) =>
        languages.every((l) => d.release_notes[l] === numbered(Number(d.id.slice(-4)), 4_000)),
      ),
    ).toBe(true);
    const small: any[] = [];
    for (let offset = 0; offset < 200; offset += 20) small.push(...(await get(`limit=20&offset=${offset}`)).body.deployments);
    expect(small).toEqual(page.body.deployments);
    expect((await get("limit=200&offset=200")).body.deployments.map((d: { id: string }) => d.id)).toEqual(order.slice(200).map(id));
  });
});

describe("a project's pipelines", () => {
  // A pipeline's configuration may fill the 1 MiB a request carries: 50 build commands of 4,096
  // characters are 600 KB of 3-byte characters; 20 such pipelines, about 12 MB.
  test("a project's pipelines of the longest non-ASCII commands list whole, by name", async () => {
    const names: string[] = [];
    for (let i = 0; i < 20; i++) {
      const name = `big-${String(i).padStart(2, "0")}`;
      const commands = Array.from({ length: 50 }, (_, j) => numbered(`${i}.${j}`.padStart(5, " "), 4_096));
      const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, {
        token: owner,
        body: { name, execution_config: { commands: { build: commands } } },
      });
      expect(res.status).toBe(201);
      names.push(name);
    }
    const res = await t.call("GET", `/v1/projects/${projectId}/pipelines`, { token: owner });
    expect(res.status).toBe(200);
    const big = res.body.pipelines.filter((p: { name: string }) => p.name.startsWith("big-"));
    expect(big.map((p: { name: string }) => p.name)).toEqual(names);
    expect(
      big.every((p: { name: string; execution_config: { commands: { build: string[] } } }, i: number) =>
        p.execution_config.commands.build.every((c, j) => c === numbered(`${i}.${j}`.padStart(5, " "), 4_096)),
      ),
    ).toBe(true);
  });
});

describe("a full log of long lines", () => {
  // Past its cap a log drops the oldest lines of its tail (lib/logs/store.ts); which ones is read
  // in the append's transaction, up to 1,000 lines: of 64 KiB, more than a libSQL server answers.
  test("appends past the cap of lines of 64 KiB are each accepted, the newest lines kept", async () => {
    const pipeline = await createPipeline(t, owner, projectId, { name: "BigLog" });
    await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const created = (await t.call("POST", "/v1/runners", { token: owner, body: { name: `biglog-${crypto.randomUUID().slice(0, 6)}` } })).body;
    await t.call("POST", `/v1/runners/${created.runner.id}/connect`, { token: created.token, body: { capabilities: { os: "linux", arch: "x64" } } });
    const job = (
      await t.call("POST", `/v1/runners/${created.runner.id}/jobs/claim`, { token: created.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })
    ).body.job;
    // The oldest queued build of the file's project: any build's log will do.
    const line = (i: number) => `${String(i).padStart(4, "0")} ${"x".repeat(65_536 - 5)}`;
    const total = 420; // 27.5 MB: past the cap
    const answers: number[] = [];
    for (let at = 0; at < total; at += 15) {
      const res = await t.call("POST", `/v1/runners/${created.runner.id}/jobs/${job.job_id}/logs`, {
        token: created.token,
        body: { first_line: at, lines: Array.from({ length: 15 }, (_, i) => ({ step: "build", text: line(at + i) })) },
      });
      answers.push(res.status);
    }
    expect(answers.every((s) => s === 202)).toBe(true);
    const text = (await t.call("GET", `/v1/builds/${job.build.id}/logs`, { token: owner, headers: { accept: "text/plain" } })).text;
    const kept = text.split("\n").filter((l) => /^\d{4} x/.test(l));
    expect(kept.at(0)).toBe(line(0));
    expect(kept.at(-1)).toBe(line(total - 1));
    expect(kept.length).toBeLessThan(total);
  });
});

describe("a build's artifacts and test reports", () => {
  // A build uploads an artifact a file its patterns match and records every test report uploaded
  // (those past the 100 it reads as rejected), with no count limit, each a path of up to 500
  // characters: 8,000 of 3-byte characters here, about 13 MB of each.
  const paths = (n: number) => Array.from({ length: n }, (_, i) => numbered(i + 1, 500));
  /** A build of its own pipeline, canceled (not left queued for another test's runner to claim). */
  async function canceledBuild(name: string): Promise<string> {
    const pipeline = await createPipeline(t, owner, projectId, { name });
    const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    expect((await t.call("POST", `/v1/builds/${made.body.build.id}/cancel`, { token: owner })).status).toBe(200);
    return made.body.build.id;
  }

  test("every artifact of a build of thousands answers in path order, each whole", async () => {
    const buildId = await canceledBuild("BigArtifacts");
    await t.db.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8000)
       INSERT INTO artifacts (id, build_id, job_id, path, size, sha256, created_at)
       SELECT printf('artifact-%05d', i), ?, 'job', printf('%5d ', i) || ?, i, printf('%064d', i), 1 FROM n`,
      [buildId, text(500)],
    );
    const res = await t.call("GET", `/v1/builds/${buildId}/artifacts`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.artifacts.map((a: { path: string }) => a.path)).toEqual(paths(8000));
    expect(res.body.artifacts.every((a: { id: string; size: number }) => a.id === `artifact-${String(a.size).padStart(5, "0")}`)).toBe(true);
  });

  test("every test report of a build of thousands answers in path order, each whole", async () => {
    const buildId = await canceledBuild("BigReports");
    await t.db.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8000)
       INSERT INTO test_reports (id, build_id, job_id, path, format, status, problems, bytes, cases, created_at)
       SELECT printf('report-%05d', i), ?, 'job', printf('%5d ', i) || ?, NULL, 'rejected', json_array('A build reads at most 100 test reports'), 0, 0, 1 FROM n`,
      [buildId, text(500)],
    );
    const res = await t.call("GET", `/v1/builds/${buildId}/tests`, { token: owner });
    expect(res.status).toBe(200);
    expect(res.body.reports.map((r: { path: string }) => r.path)).toEqual(paths(8000));
    expect(res.body.reports.every((r: { id: string; path: string }) => r.id === `report-${r.path.slice(0, 5).trim().padStart(5, "0")}`)).toBe(true);
  });
});

describe("the queued builds no runner can take", () => {
  // The pass that flags them (lib/runners/reaper.ts) reads up to 200 of the longest queued whole:
  // 100 of a 150 KB changelog here, about 15 MB. Which reason depends on the runners connected.
  test("each gets its block reason, however large the builds", async () => {
    const pipeline = await createPipeline(t, owner, projectId, {
      name: "BigUnroutable",
      execution_config: { platforms: ["macos"], runner_labels: ["mac-fleet"] },
    });
    const made = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } });
    const source = made.body.build as { id: string };
    await copyBuild(t.db, source.id, 100, { changelog: Array.from({ length: 50 }, () => text(1_000)).join("\n") });
    await t.db.execute("UPDATE projects SET next_build_number = next_build_number + 100 WHERE id = ?", [projectId]);
    t.clock.advance(UNROUTABLE_AFTER_SECONDS + 1);
    await flagUnroutableBuilds(t.ctx);
    const build = (await t.call("GET", `/v1/builds/${source.id}`, { token: owner })).body.build;
    const reason: unknown = build.runner_policy_block_reason;
    expect({ status: build.status, reason: typeof reason }).toEqual({ status: "queued", reason: "string" });
    const copies = await t.db.execute("SELECT COUNT(*) AS n FROM builds WHERE id LIKE ? || '-%' AND runner_policy_block_reason = ?", [
      source.id,
      reason as string,
    ]);
    expect(copies.rows[0]!.n).toBe(100);
  });
});
