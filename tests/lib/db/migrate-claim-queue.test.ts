// Migrations 17 and 21 (schema.sql) on a database made before them: the builds already there are
// counted by pipeline and status, and the queued and running ones get their place in the queue
// (in the order they were queued), their route and their own max_concurrent, so claims after the
// upgrade hand them out as before.
import { expect, test } from "bun:test";
import { databasePerTest, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";
import { all } from "../../../lib/db/client.ts";
import { MIGRATIONS, migrate } from "../../../lib/db/migrate.ts";
import { routeKey } from "../../../lib/runners/routing.ts";

const t = databasePerTest("roost-migrate21-");

const snapshot = (platforms: string[], labels: string[] | undefined, maxConcurrent: number) =>
  JSON.stringify({
    pipeline_name: "p",
    concurrency: { cancel_previous: false, max_concurrent: maxConcurrent },
    execution_config: { platforms, ...(labels ? { runner_labels: labels } : {}) },
  });

test("builds from before are counted, and the queued and running ones keep their order, routes and limits", async () => {
  await seedBeforeMigration(t.db, 17, projectRows());
  const insert = (id: string, n: number, status: string, queuedAt: number, snap: string, source = '{"source":"api"}') =>
    t.db.execute({
      sql: "INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at, definition_source) VALUES (?, 'p1', 'pl1', ?, 'main', 'abc', ?, ?, 'manual', ?, 1, 1, ?)",
      args: [id, n, snap, status, queuedAt, source],
    });
  await insert("done", 1, "succeeded", 10, snapshot(["android"], undefined, 1));
  await insert("late", 2, "queued", 30, snapshot(["ios", "android", "macos"], ["mac-mini", "gpu"], 1));
  await insert("running", 3, "running", 20, snapshot(["android"], undefined, 1));
  await insert("early", 4, "queued", 25, snapshot(["android"], [], 3), '{"source":"file","path":"roost.yaml","commit_sha":"abc"}');

  expect(await migrate(t.db, () => 2)).toEqual({ from: 16, to: MIGRATIONS.length });

  expect(await all(t.db, "SELECT status, n FROM build_counts ORDER BY status")).toEqual([
    { status: "queued", n: 2 },
    { status: "running", n: 1 },
    { status: "succeeded", n: 1 },
  ]);
  expect(
    await all(t.db, "SELECT id, queue_seq, runner_route, own_max_concurrent FROM builds WHERE status IN ('queued', 'running') ORDER BY queue_seq"),
  ).toEqual([
    { id: "running", queue_seq: 1, runner_route: routeKey({ apple: [], labels: [] }), own_max_concurrent: 0 },
    { id: "early", queue_seq: 2, runner_route: routeKey({ apple: [], labels: [] }), own_max_concurrent: 3 },
    { id: "late", queue_seq: 3, runner_route: routeKey({ apple: ["ios", "macos"], labels: ["mac-mini", "gpu"] }), own_max_concurrent: 0 },
  ]);
  expect(await all(t.db, "SELECT runner_route, own_max_concurrent, queued FROM build_queue_groups ORDER BY own_max_concurrent")).toEqual([
    { runner_route: routeKey({ apple: ["ios", "macos"], labels: ["mac-mini", "gpu"] }), own_max_concurrent: 0, queued: 1 },
    { runner_route: routeKey({ apple: [], labels: [] }), own_max_concurrent: 3, queued: 1 },
  ]);
  expect(await all(t.db, "SELECT next FROM build_queue_sequence")).toEqual([{ next: 4 }]);
});
