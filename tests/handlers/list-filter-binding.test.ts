// The list endpoints that compose their WHERE clause from the filters given bind each filter's
// `= value` as `+?` beside their ORDER BY, as every statement written whole does
// (tests/lib/db/bound-parameters.test.ts): a bare `?` there has SQLite compile the statement again
// on every call (https://www.sqlite.org/c3ref/prepare.html; a project's deployments with every
// filter took 44.7 µs of CPU instead of 4.8, docs/benchmarks.md "The runner fleet's CPU per job:
// its reads"). The source test cannot see a clause built piece by piece, so this one calls each
// list endpoint with all its filters and holds the statements the app actually ran to the rule.
import { describe, expect, test } from "bun:test";
import type { TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, fixturePerFile, startCiFixture } from "../helpers/ci.ts";
import { recordingDb } from "../helpers/recording-db.ts";
import { createApp } from "../../lib/http/app.ts";
import { createLive } from "../../lib/live/live.ts";
import { routes } from "../../handlers/routes.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

/** The statements with an ORDER BY that a GET of `path` ran, after answering 200. */
async function orderedStatementsOf(path: string): Promise<string[]> {
  const seen: string[] = [];
  const db = recordingDb(t.db, (sql) => seen.push(sql.replace(/\s+/g, " ")));
  const app = createApp({ ...t.ctx, db, live: createLive({ db, events: t.ctx.events }) }, routes);
  const res = await app.fetch(
    new Request(`http://127.0.0.1:8080${path}`, { headers: { host: "127.0.0.1:8080", authorization: `Bearer ${owner}` } }),
    "127.0.0.1",
  );
  expect(res.status).toBe(200);
  return seen.filter((sql) => /\bORDER BY\b/.test(sql));
}

/** The same rules as bound-parameters.test.ts: no `= ?` beside the ORDER BY (an UPDATE's SET assignments aside), no bare LIMIT or OFFSET. */
const bare = (sql: string) => /(?<![!<>=])=\s*(\?|:\w+)|\bWHEN \?|\b(LIMIT|OFFSET) (\?|:\w+)/.test(sql.replace(/\bSET\b[^()]*?(?=\bWHERE\b)/g, "SET"));

describe("a list endpoint's composed filters are bound +? beside its ORDER BY", () => {
  const paths: [string, () => string][] = [
    ["a project's deployments, every filter", () => `/v1/projects/${projectId}/deployments?build_id=b-1&environment=production&status=succeeded`],
    ["a build's deployments", () => `/v1/builds/${buildId}/deployments?environment=production&status=succeeded`],
    ["a project's webhook deliveries, by result", () => `/v1/projects/${projectId}/webhook-deliveries?result=failed`],
    ["every webhook delivery, by result", () => "/v1/webhook-deliveries?result=failed"],
    ["a project's variable changes, of a pipeline", () => `/v1/projects/${projectId}/variable-changes?pipeline_id=${pipelineId}`],
    ["operator incidents, open and unread", () => "/v1/operator-incidents?status=open&unread=true"],
    ["operator incidents, resolved", () => "/v1/operator-incidents?status=resolved"],
    ["a build's test cases, by status, search and cursor", () => `/v1/builds/${buildId}/tests/cases?status=failed,error&q=login&cursor=0.5`],
    ["the projects a user sees", () => "/v1/projects?q=acme"],
    ["a project's builds, every filter and the total", () => `/v1/projects/${projectId}/builds?status=failed&branch=main&trigger_type=schedule&include=total`],
    ["a project's builds by trigger, a merge of ranges", () => `/v1/projects/${projectId}/builds?trigger_type=schedule`],
    ["a pipeline's builds, by branch", () => `/v1/pipelines/${pipelineId}/builds?branch=main`],
  ];
  let pipelineId: string, buildId: string;

  test.each(paths)("%s", async (_, path) => {
    if (!buildId) {
      pipelineId = (await createPipeline(t, owner, projectId)).id;
      const created = await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipelineId, commit_sha: SHA_A } });
      buildId = created.body.build.id;
    }
    const ordered = await orderedStatementsOf(path());
    expect(ordered.length).toBeGreaterThan(0);
    expect(ordered.filter(bare)).toEqual([]);
  });
});
