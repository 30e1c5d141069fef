// The passes every daemon runs every few seconds (lib/daemon/background.ts) take no write lock
// when they find nothing to do. SQLite has one writer (https://www.sqlite.org/lockingv3.html): an
// UPDATE or INSERT takes the lock even when it changes no row, and so does an empty transaction.
// On one libSQL server shared by several hosts (docs/operations.md "Several hosts"), each idle
// daemon's writes every 2 s would queue behind, and hold up, every other daemon's pushes, claims
// and log appends. Each pass runs here once on a database with nothing waiting, and once with
// work waiting, through a database that records what takes the write lock.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../helpers/app.ts";
import type { Db } from "../../../lib/db/client.ts";
import { seedPipeline } from "../../helpers/rows.ts";
import { reportCheckRuns } from "../../../lib/test-results/check-runs.ts";
import { flagUnroutableBuilds, reapLostJobs, reapTimedOutBuilds } from "../../../lib/runners/reaper.ts";
import { reapLostDeployments } from "../../../lib/publishing/reaper.ts";
import { pollGitRemotes } from "../../../lib/forges/git/poll.ts";
import { dispatchNotifications } from "../../../lib/notifications/notifications.ts";
import { enforceRetention } from "../../../lib/retention/retention.ts";
import { publishHostReleases } from "../../../lib/publishing/host-release-claim.ts";
import { reportCommitStatuses } from "../../../lib/forges/commit-statuses.ts";

const READ = /^\s*(SELECT|WITH)\b/i;

/** `db`, adding to `writes` each transaction, write batch and statement that is not a read. */
function writesThrough(db: Db, writes: string[]): Db {
  return new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key === "transaction") return (work: never) => (writes.push("a transaction"), value.call(target, work));
      if (key === "batch") return (stmts: never[], mode?: string) => (writes.push(`a ${mode ?? "write"} batch`), value.call(target, stmts, mode));
      if (key === "execute")
        return (stmt: string | { sql: string }, args?: never) => {
          const sql = typeof stmt === "string" ? stmt : stmt.sql;
          if (!READ.test(sql)) writes.push(sql.trim().slice(0, 80));
          return value.call(target, stmt, args);
        };
      return value.bind(target);
    },
  }) as Db;
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const passes: Record<string, (ctx: TestApp["ctx"]) => Promise<unknown>> = {
  "check runs": (ctx) => reportCheckRuns({ ...ctx, now: ctx.clock.now(), baseUrl: "http://roost.test" }),
  "lost jobs": (ctx) => reapLostJobs(ctx),
  "lost deployments": (ctx) => reapLostDeployments(ctx),
  "unroutable builds": (ctx) => flagUnroutableBuilds(ctx),
  "timed-out builds": (ctx) => reapTimedOutBuilds(ctx),
  "git polls": (ctx) => pollGitRemotes(ctx, "this-daemon"),
  notifications: (ctx) => dispatchNotifications(ctx, "http://roost.test"),
  retention: (ctx) => enforceRetention(ctx),
  "host releases": (ctx) => publishHostReleases(ctx),
  "commit statuses": (ctx) => reportCommitStatuses({ ...ctx, now: ctx.clock.now(), baseUrl: "http://roost.test" }),
};

async function writesOf(pass: (ctx: TestApp["ctx"]) => Promise<unknown>): Promise<string[]> {
  const writes: string[] = [];
  await pass({ ...t.ctx, db: writesThrough(t.db, writes) });
  return writes;
}

describe("with nothing waiting, a pass writes nothing", () => {
  for (const [name, pass] of Object.entries(passes))
    test(name, async () => {
      expect(await writesOf(pass)).toEqual([]);
    });
});

describe("with work waiting, the pass still does it", () => {
  beforeAll(async () => {
    await seedPipeline(t.db);
    await t.db.execute(
      `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, exit_code, trigger_type, trigger_event, trigger_ref,
         trigger_actor, queued_at, started_at, finished_at, created_at, updated_at)
       VALUES ('b', 'p', 'pl', 1, 'main', '${"a".repeat(40)}', '{}', 'failed', 1, 'manual', 'manual', 'refs/heads/main', 'test', 1, 1, 1, 1, 1)`,
    );
  });

  test("a notification outbox row is fanned out, and leaves the outbox", async () => {
    await t.db.execute("INSERT INTO notification_outbox (build_id, status, previous_status, created_at) VALUES ('b', 'failed', NULL, 1)");
    expect(await writesOf(passes.notifications!)).toContain("a transaction");
    expect((await t.db.execute("SELECT COUNT(*) AS n FROM notification_outbox")).rows[0]!.n).toBe(0);
  });

  test("a commit status due is claimed", async () => {
    await t.db.execute({
      sql: `INSERT INTO commit_status_outbox (repository_id, commit_sha, pipeline_id, build_id, build_number, status, updated_at) VALUES ('r', ?, 'pl', 'b', 1, 'failed', ?)`,
      args: ["a".repeat(40), t.clock.now()],
    });
    expect((await writesOf(passes["commit statuses"]!)).some((w) => w.startsWith("UPDATE commit_status_outbox SET claimed_by"))).toBe(true);
  });

  test("a check run due is claimed", async () => {
    await t.db.execute({ sql: "INSERT INTO check_run_reports (build_id, finished_at, updated_at) VALUES ('b', ?, ?)", args: [t.clock.now(), t.clock.now()] });
    expect((await writesOf(passes["check runs"]!)).some((w) => w.startsWith("UPDATE check_run_reports SET claimed_by"))).toBe(true);
  });

  test("a repository a project builds through plain git gets its poll row", async () => {
    expect(await writesOf(passes["git polls"]!)).toContainEqual(expect.stringMatching(/^INSERT INTO git_polls/));
    expect((await t.db.execute("SELECT repository_id FROM git_polls")).rows.map((r) => r.repository_id)).toEqual(["r"]);
  });
});
