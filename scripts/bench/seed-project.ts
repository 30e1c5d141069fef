// One project on a GitHub repository, its pipelines and one real build, written through Roost's own
// functions, for the scenarios that measure a store on a fresh database (schedules-retention.ts,
// test-results.ts). The project is "p"; the build is manual, on main, in the first pipeline.
import type { Db } from "../../lib/db/client.ts";
import { createSecretBox } from "../../lib/crypto/secret-box.ts";
import { EventBus } from "../../lib/daemon/events.ts";
import { silentLogger } from "../../lib/daemon/log.ts";
import { pipelineFields } from "../../lib/pipelines/stored-pipeline.ts";
import { insertPipeline } from "../../lib/pipelines/store.ts";
import { createBuild } from "../../lib/builds/create.ts";
import type { Build } from "../../lib/builds/store.ts";

export async function seedProject(db: Db, pipelineNames: string[], at: number): Promise<{ pipelineIds: string[]; build: Build }> {
  await db.batch([
    {
      sql: "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('i', 'github', 'bench', 'https://api.github.invalid', 'https://github.invalid', '', ?, ?)",
      args: [at, at],
    },
    {
      sql: "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at) VALUES ('r', 'i', 'github', '1', 'acme/app', 'main', 'https://github.invalid', ?, ?)",
      args: [at, at],
    },
    { sql: "INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('p', 'app', 'r', 'main', ?, ?)", args: [at, at] },
  ]);
  const secrets = await createSecretBox(crypto.getRandomValues(new Uint8Array(32)));
  const pipelineIds: string[] = [];
  for (const name of pipelineNames) {
    const fields = await pipelineFields({ name }, [], "main", secrets);
    if (typeof fields === "string") throw new Error(fields);
    pipelineIds.push((await insertPipeline(db, "p", fields, at)).id);
  }
  const ctx = { db, clock: { now: () => at }, events: new EventBus(), log: silentLogger };
  const { build } = await createBuild(ctx as never, {
    pipelineId: pipelineIds[0]!,
    branch: "main",
    commitSha: "a".repeat(40),
    triggerType: "manual",
    concurrencyKey: null,
  });
  return { pipelineIds, build };
}
