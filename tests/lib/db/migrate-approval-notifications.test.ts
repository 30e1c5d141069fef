// Migration 29 (schema.sql): notification_deliveries rebuilt to take `approval_requested` and name
// the deployment. A delivery made before keeps every field, with deployment_id '', so the table
// still keeps one delivery per notification, build and event; a build's deliveries and a
// deployment's live side by side.
import { expect, test } from "bun:test";
import { databasePerTest, migrateTo, projectRows, seedBeforeMigration } from "../../helpers/migrations.ts";

const t = databasePerTest("roost-migrate-approvals-");

test("a delivery made before migration 29 keeps every field; one delivery per notification, build, event and deployment", async () => {
  await seedBeforeMigration(t.db, 29, [
    ...projectRows(),
    "INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, trigger_type, queued_at, created_at, updated_at) VALUES ('b1', 'p1', 'pl1', 1, 'main', 'abc', '{}', 'failed', 'manual', 1, 1, 1)",
    "INSERT INTO notifications (id, project_id, name, channel, events, secrets_sealed, created_at, updated_at) VALUES ('n1', 'p1', 'chat', 'slack', '[\"failed\"]', 'sealed', 1, 1)",
    "INSERT INTO notification_deliveries (id, notification_id, build_id, event, status, attempts, next_attempt_at, last_error, created_at, updated_at, delivered_at) VALUES ('d1', 'n1', 'b1', 'failed', 'pending', 3, 500, 'the receiver answered HTTP 503', 100, 200, NULL)",
  ]);
  await migrateTo(t.db, 29);
  const rows = (await t.db.execute("SELECT * FROM notification_deliveries")).rows.map((r) => ({ ...r }));
  expect(rows).toEqual([
    {
      id: "d1",
      notification_id: "n1",
      build_id: "b1",
      event: "failed",
      deployment_id: "",
      status: "pending",
      attempts: 3,
      next_attempt_at: 500,
      last_error: "the receiver answered HTTP 503",
      created_at: 100,
      updated_at: 200,
      delivered_at: null,
    },
  ]);
  const insert = (id: string, event: string, deployment: string) =>
    t.db.execute({
      sql: "INSERT INTO notification_deliveries (id, notification_id, build_id, event, deployment_id, status, next_attempt_at, created_at, updated_at) VALUES (?, 'n1', 'b1', ?, ?, 'pending', 1, 1, 1)",
      args: [id, event, deployment],
    });
  await expect(insert("d2", "failed", "")).rejects.toThrow(/UNIQUE/);
  await insert("d3", "approval_requested", "dep1");
  await insert("d4", "approval_requested", "dep2");
  await expect(insert("d5", "approval_requested", "dep2")).rejects.toThrow(/UNIQUE/);
  await expect(insert("d6", "deployed", "")).rejects.toThrow(/CHECK/);
});
