// The statements every build change runs cost the same at a million builds as at ten: the
// previous finished status a notification carries (and the status a badge shows) is one seek per
// status, not a walk past the builds of other statuses since, and cancel_previous reads only its
// concurrency group's queued and running builds, not every one the pipeline has queued; a push
// compares its project's pipelines by one lookup.
// Asserted on SQLite's own query plans (https://www.sqlite.org/eqp.html) of the statements the
// real functions run, recorded through the database they are given.
import { beforeAll, describe, expect, test } from "bun:test";
import { migratedDatabasePerFile, plansOf } from "../../helpers/query-plans.ts";
import { seedPipeline } from "../../helpers/rows.ts";
import { inTransaction, one, type Db } from "../../../lib/db/client.ts";
import { ALWAYS } from "../../../lib/db/database.ts";
import { createBuildInTransaction, createBuildsStatements, type CreateBuildInput } from "../../../lib/builds/create.ts";
import { transitionBuild } from "../../../lib/builds/transition.ts";
import { findPipeline, pipelinesState, type Pipeline } from "../../../lib/pipelines/store.ts";
import { EventBus } from "../../../lib/daemon/events.ts";
import { badgeStatus } from "../../../lib/badges/badges.ts";

const t = migratedDatabasePerFile("roost-build-change-plans-");
let pipeline: Pipeline;
beforeAll(async () => {
  const { db } = t;
  await seedPipeline(db, { cancelPrevious: true });
  pipeline = (await findPipeline(db, "pl"))!;
});

const push: CreateBuildInput = { pipelineId: "pl", branch: "main", commitSha: "a".repeat(40), triggerType: "webhook", concurrencyKey: "branch:main" };
const deps = (db: Db) => ({ db, clock: { now: () => 1_800_000_000 }, events: new EventBus() });

/** The plan lines of the statements `work` runs that match `statements`: there is at least one. */
async function plansOfRun(work: (recording: Db) => Promise<unknown>, statements: RegExp): Promise<string[][]> {
  const { statements: seen } = await plansOf(t, work, statements);
  expect(seen.length).toBeGreaterThan(0);
  return seen.map(({ plan }) => plan);
}

// One seek per status and trigger (schema.sql migration 52): the index ends with build_number, so each
// is the newest entry of its range (SQLite says INDEX, not COVERING INDEX, for an index holding the
// generated trigger_kind; the listing plans say the same).
const PREVIOUS_FINISHED =
  "SEARCH builds USING INDEX builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=? AND build_number<?)";
const BRANCH_STATUS = "SEARCH builds USING INDEX builds_pipeline_branch_status_trigger (pipeline_id=? AND branch=? AND status=? AND trigger_kind=?)";
/** Seeks per status: one per trigger. */
const TRIGGERS = 4;
const SUPERSEDED = "SEARCH builds USING INDEX builds_superseded (pipeline_id=? AND concurrency_key=? AND build_number<?)";

describe("a finished build's notification seeks the branch's previous finish", () => {
  test("a build finishing reads the newest succeeded and the newest failed build below it, one index entry each", async () => {
    const { build } = await inTransaction(t.db, (tx) => createBuildInTransaction(tx, 1, { ...push, concurrencyKey: null }));
    await transitionBuild(deps(t.db), build.id, "start");
    const [plan] = await plansOfRun((db) => transitionBuild(deps(db), build.id, "succeed"), /INSERT INTO notification_outbox/);
    expect(plan!.filter((line) => / builds\b| b\b/.test(line))).toEqual(Array(2 * TRIGGERS).fill(PREVIOUS_FINISHED));
  });
});

describe("a badge seeks the newest build of each status that decides it", () => {
  test("one index entry per status, however many canceled builds came after them", async () => {
    const [plan] = await plansOfRun((db) => badgeStatus(db, "pl", "main"), /FROM builds/);
    expect(plan!.filter((line) => line.startsWith("SEARCH builds"))).toEqual(Array(4 * TRIGGERS).fill(BRANCH_STATUS));
  });
});

describe("cancel_previous reads only the concurrency group's queued and running builds", () => {
  test("a build created in a transaction (a schedule, a single delivery)", async () => {
    const [plan] = await plansOfRun((db) => inTransaction(db, (tx) => createBuildInTransaction(tx, 2, push)), /^UPDATE builds SET status = 'canceled'/);
    expect(plan).toContain(SUPERSEDED);
    expect(plan!.join("\n")).not.toMatch(/builds_pipeline_status|SCAN builds/);
  });

  test("builds created in a webhook delivery's batch, with the canceled builds' notifications", async () => {
    const batch = createBuildsStatements(3, "p", [{ id: "new", pipeline, input: push }], ALWAYS);
    const plans = await plansOfRun((db) => db.batch(batch.statements), /status IN \('queued', 'running'\)/);
    // The commit statuses', the notifications' and the cancel itself.
    expect(plans).toHaveLength(3);
    for (const plan of plans) {
      expect(plan).toContain(SUPERSEDED);
      expect(plan.join("\n")).not.toMatch(/builds_pipeline_status|SCAN (builds|c)\b/);
    }
    expect(plans[1]!.filter((line) => line.startsWith("SEARCH builds USING INDEX builds_pipeline_branch"))).toEqual(
      Array(2 * TRIGGERS).fill(PREVIOUS_FINISHED),
    );
  });
});

describe("a push checks its project's pipelines under the write lock by one lookup", () => {
  test("the pipelines' state is the project's count of their changes, not every pipeline's configuration", async () => {
    const state = pipelinesState("r");
    const [plan] = await plansOfRun((db) => one(db, `SELECT ${state.sql} AS state`, state.args), /pipelines_version/);
    expect(plan).toEqual(["SCAN CONSTANT ROW", "SCALAR SUBQUERY 1", "SEARCH projects USING INDEX projects_one_per_repository (repository_id=?)"]);
  });

  test("every change of a pipeline moves it", async () => {
    const version = async () => Number((await one(t.db, "SELECT pipelines_version AS v FROM projects WHERE id = 'p'"))!.v);
    const before = await version();
    await t.db.execute(
      `INSERT INTO pipelines (id, project_id, name, config_path, trigger_config, execution_config, created_at, updated_at)
       VALUES ('pl2', 'p', 'ios', 'roost.yaml', '{}', '{}', 1, 1)`,
    );
    await t.db.execute("UPDATE pipelines SET enabled = 0 WHERE id = 'pl2'");
    await t.db.execute("DELETE FROM pipelines WHERE id = 'pl2'");
    expect(await version()).toBe(before + 3);
  });
});
