// Rows written straight into a test database, for tests of what the daemon does with rows it finds
// (query plans, background passes): a plain git integration 'i', its repository 'r' (acme/app,
// default branch main), project 'p' and pipeline 'pl' (android, built on pushes).
import type { Executor } from "../../lib/db/client.ts";

export async function seedPipeline(db: Executor, pipeline: { cancelPrevious?: boolean } = {}): Promise<void> {
  await db.execute(
    "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i', 'git', 'git', '/src/app', '/src/app', 'x', 1, 1)",
  );
  await db.execute(
    "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, clone_url, created_at, updated_at) VALUES ('r', 'i', 'git', 'i', 'src/app', 'main', '/src/app', '/src/app', 1, 1)",
  );
  await db.execute("INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p', 'app', 'r', 'main', 1, 1)");
  await db.execute({
    sql: `INSERT INTO pipelines (id, project_id, name, config_path, cancel_previous, max_concurrent, trigger_config, execution_config, created_at, updated_at)
          VALUES ('pl', 'p', 'android', 'roost.yaml', ?, 1, '{"events":["push"]}', '{"platforms":["android"]}', 1, 1)`,
    args: [pipeline.cancelPrevious ? 1 : 0],
  });
}

/**
 * `count` copies of build `sourceId` written in one statement (ids `<source>-0001`…, numbers after
 * the source's, not queued), each with `changelog` (a 50-line changelog of long lines is the
 * largest a build carries), and with `status` when given. The project's next build number is
 * not moved: a caller that makes more builds through the API moves it.
 */
export async function copyBuild(
  db: Executor,
  sourceId: string,
  count: number,
  copy: { changelog: string; numbered?: boolean; status?: string },
): Promise<void> {
  const columns = ((await db.execute("PRAGMA table_info(builds)")).rows as unknown as { name: string }[]).map((c) => c.name);
  const copied: Record<string, string> = {
    id: "printf('%s-%04d', b.id, i)",
    build_number: "b.build_number + i",
    queue_seq: "NULL",
    // Numbered: each changelog starts with its copy's number, so no two are alike.
    changelog: copy.numbered ? "printf('%5d ', i) || ?" : "?",
    ...(copy.status ? { status: `'${copy.status}'` } : {}),
  };
  await db.execute(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
     INSERT INTO builds (${columns.join(", ")}) SELECT ${columns.map((c) => copied[c] ?? `b.${c}`).join(", ")} FROM builds b, n WHERE b.id = ?`,
    [copy.changelog, sourceId],
  );
}
