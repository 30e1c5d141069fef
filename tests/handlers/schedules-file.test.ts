// Schedules in the pipeline file (docs/pipelines.md "Schedules"): a real git repository whose
// roost.yaml gives a pipeline a schedule, pushed through signed GitHub webhooks and served by the
// host-API stand-in from that repository. A push to the default branch syncs the file's schedules
// (source file, read-only through the API, API-created schedules left alone); a push elsewhere
// changes nothing; the slot builds with the file at the branch head, an invalid file there fails
// the slot with the file's problems as the run's error; a push removing the schedule removes it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestApp } from "../helpers/app.ts";
import { deliveryOf } from "../helpers/deliveries.ts";
import { git as gitIn, postGithubPush, startAppOnRepository } from "../helpers/git.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { runDueSchedules } from "../../lib/schedules/schedules.ts";
import { WEBHOOK_SECRET } from "../helpers/ci.ts";

const REPO = { id: 4343, full_name: "acme/nightly-shop" };
// The test clock starts at 2027-01-15T08:00:00Z.
const START = 1_800_000_000;

const fileWith = (schedules: string) => `version: 1
pipelines:
  nightly:
    triggers:
      events: [pull_request]
    platforms: [android]
    env:
      FLAVOR: nightly
${schedules}`;
const NIGHTLY = fileWith(`    schedules:
      - cron: "30 2 * * *"
        timezone: Europe/Berlin
        build_when_unchanged: false
`);

let dir: string;
let t: TestApp, host: HostApiStandIn, owner: string, projectId: string;

const git = (...args: string[]) => gitIn(dir, ...args);

function commit(branch: string, roostYaml: string, message: string): string {
  git("checkout", "-q", "-B", branch);
  writeFileSync(join(dir, "roost.yaml"), roostYaml);
  git("add", "roost.yaml");
  git("commit", "-q", "--allow-empty", "-m", message);
  return git("rev-parse", "HEAD");
}

async function push(branch: string, sha: string) {
  const res = await postGithubPush(t, { repo: REPO, installationId: host.github.installationId, branch, sha, message: "change", secret: WEBHOOK_SECRET });
  expect(res.status).toBe(200);
  return deliveryOf(t, owner, res.body.delivery_id);
}

async function pipelineId(): Promise<string> {
  const res = await t.call("GET", `/v1/projects/${projectId}/pipelines`, { token: owner });
  return res.body.pipelines.find((p: { name: string }) => p.name === "nightly").id;
}

/** One scheduler pass at `iso`; the clock then returns to the start so the owner's session stays fresh. */
async function fireAt(iso: string) {
  t.clock.set(Date.parse(iso) / 1000);
  try {
    return await runDueSchedules(t.ctx);
  } finally {
    t.clock.set(START);
  }
}

async function schedules(id: string) {
  const res = await t.call("GET", `/v1/pipelines/${id}/schedules`, { token: owner });
  expect(res.status).toBe(200);
  return res.body.schedules;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-nightly-shop-"));
  git("init", "-q", "-b", "main");
  writeFileSync(join(dir, "pubspec.yaml"), "name: nightly_shop\n");
  git("add", "pubspec.yaml");
  git("commit", "-q", "-m", "app");
  ({ t, host, owner, projectId } = await startAppOnRepository(dir, REPO));
  t.clock.set(START);
});

afterAll(async () => {
  t?.close();
  await host?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("schedules in roost.yaml", () => {
  let pipeline: string;
  let fileSchedule: { id: string } & Record<string, unknown>;
  let apiSchedule: { id: string };

  test("a push to the default branch adds the file's schedule, listed with source file beside one created through the API", async () => {
    const sha = commit("main", NIGHTLY, "nightly schedule");
    const delivery = await push("main", sha);
    expect(delivery.reason).toBe(`no pipeline matched; schedules of nightly from roost.yaml at ${sha.slice(0, 12)}: 1 added`);
    pipeline = await pipelineId();
    const made = await t.call("POST", `/v1/pipelines/${pipeline}/schedules`, { token: owner, body: { cron: "0 12 * * 1" } });
    expect(made.status).toBe(201);
    apiSchedule = made.body.schedule;
    const list = await schedules(pipeline);
    fileSchedule = list.find((s: { source: string }) => s.source === "file");
    // 02:30 in Berlin (UTC+1 in January) is 01:30 UTC on the next day.
    expect(fileSchedule).toEqual({
      id: expect.any(String),
      pipeline_id: pipeline,
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      branch: "main",
      build_when_unchanged: false,
      enabled: true,
      source: "file",
      config_path: "roost.yaml",
      next_run_at: Date.parse("2027-01-16T01:30:00Z") / 1000,
      last_run: null,
      created_at: START,
      updated_at: START,
    });
    expect(list.map((s: { source: string }) => s.source).sort()).toEqual(["api", "file"]);
  });

  test("the API refuses to change or delete a file schedule, naming the file", async () => {
    const refusal = {
      code: "schedule_from_file",
      message: "This schedule is defined in roost.yaml; change its schedules there and push to the default branch.",
    };
    const patched = await t.call("PATCH", `/v1/pipelines/${pipeline}/schedules/${fileSchedule.id}`, { token: owner, body: { enabled: false } });
    expect(patched.status).toBe(409);
    expect(patched.body).toEqual(refusal);
    const deleted = await t.call("DELETE", `/v1/pipelines/${pipeline}/schedules/${fileSchedule.id}`, { token: owner });
    expect(deleted.status).toBe(409);
    expect(deleted.body).toEqual(refusal);
    expect((await schedules(pipeline)).find((s: { id: string }) => s.id === fileSchedule.id)).toMatchObject({ enabled: true });
  });

  test("a push to another branch changes no schedule, even one whose file has none", async () => {
    const before = await schedules(pipeline);
    const sha = commit("feature/no-nightly", fileWith(""), "drop the nightly on a branch");
    const delivery = await push("feature/no-nightly", sha);
    expect(delivery.reason).toBe("no pipeline matched");
    expect(await schedules(pipeline)).toEqual(before);
    git("checkout", "-q", "main");
  });

  test("the slot builds the branch head with the pipeline file there, recording definition_source file", async () => {
    // A commit on main that is not pushed: the scheduled build reads the file at the head it asks for.
    const head = commit("main", NIGHTLY.replace("FLAVOR: nightly", "FLAVOR: nightly-2"), "flavor");
    expect((await fireAt("2027-01-16T01:30:00Z")).built).toBe(1);
    const run = (await schedules(pipeline)).find((s: { id: string }) => s.id === fileSchedule.id).last_run;
    expect(run).toMatchObject({ result: "built", commit_sha: head, error: null });
    const build = (await t.call("GET", `/v1/builds/${run.build_id}`, { token: owner })).body.build;
    expect(build).toMatchObject({ trigger_type: "schedule", branch: "main", commit_sha: head });
    expect(build.definition_source).toEqual({ source: "file", path: "roost.yaml", commit_sha: head });
    expect(build.config_snapshot.execution_config.env).toEqual([{ key: "FLAVOR", value: "nightly-2", secret: false }]);
  });

  test("an invalid file at the head fails the slot with the file's problem as the schedule's last error", async () => {
    const head = commit("main", NIGHTLY.replace("platforms: [android]", "platforms: [android, windows-phone]"), "typo");
    expect(await fireAt("2027-01-17T01:30:00Z")).toEqual({ built: 0, unchanged: 0, failed: 1, skipped: 0 });
    const run = (await schedules(pipeline)).find((s: { id: string }) => s.id === fileSchedule.id).last_run;
    expect(run.result).toBe("failed");
    expect(run.build_id).toBeNull();
    expect(run.error).toStartWith(`roost.yaml at ${head.slice(0, 12)} is invalid: line 6, column `);
    expect(run.error).toContain("pipelines.nightly.platforms.1");
  });

  test("a push to the default branch without the schedule removes it; the API's schedule stays", async () => {
    const sha = commit("main", fileWith(""), "no nightly");
    const delivery = await push("main", sha);
    expect(delivery.reason).toBe(`no pipeline matched; schedules of nightly from roost.yaml at ${sha.slice(0, 12)}: 1 removed`);
    expect(delivery.decisions).toEqual([expect.objectContaining({ pipeline_name: "nightly", build: false })]);
    expect((await schedules(pipeline)).map((s: { id: string; source: string }) => [s.id, s.source])).toEqual([[apiSchedule.id, "api"]]);
  });

  test("a schedule the file gets wrong makes the file invalid, with its line, and changes nothing", async () => {
    const before = await schedules(pipeline);
    const sha = commit(
      "main",
      fileWith(`    schedules:
      - cron: "61 * * * *"
        timezone: Mars/Olympus
`),
      "bad schedule",
    );
    const delivery = await push("main", sha);
    expect(delivery.reason).toBe(
      `roost.yaml at ${sha.slice(0, 12)} is invalid: line 10, column 15: pipelines.nightly.schedules.0.cron: Invalid value for minute: 61; ` +
        "line 11, column 19: pipelines.nightly.schedules.0.timezone: must be an IANA time zone name, e.g. UTC or Europe/Berlin",
    );
    expect(await schedules(pipeline)).toEqual(before);
  });

  test("the file's JSON Schema describes schedules", async () => {
    const res = await t.call("GET", "/v1/schemas/pipeline-file.json");
    expect(res.status).toBe(200);
    const pipelineSchema = res.body.properties.pipelines.additionalProperties;
    expect(Object.keys(pipelineSchema.properties.schedules.items.properties).sort()).toEqual(["branch", "build_when_unchanged", "cron", "timezone"]);
  });
});
