// A database grown to many builds, fast, for `npm run bench` (scripts/bench/scale.ts): one
// INSERT … SELECT over a recursive CTE writes every build of a project in one transaction, with
// the triggers on builds set aside and what they keep (the counters of migrations 17 and 26, the
// queue's groups of migration 21) computed once from the result, then the triggers put back: the
// same tables the daemon would have after creating each build itself, minus the commit-status rows
// of builds older than a day, which its housekeeping drops. Run on the file while no daemon has it
// open. The builds are history: older than a day, mostly succeeded, 60 % on main and the rest on
// 40 feature branches (each with a full page at 10,000 builds), across the project's pipelines, with failures, cancels, manual and scheduled builds
// mixed in as a team's would be, and the newest `queued` of them waiting in the last pipeline;
// those past the default retention have had their logs and artifacts deleted.
import { Database } from "bun:sqlite";
import { routeKey } from "../../lib/runners/routing.ts";

export interface SeedOptions {
  projectId: string;
  /** The project's pipelines; build i goes to pipelineIds[i % length]. */
  pipelineIds: string[];
  builds: number;
  /** The newest this many builds are queued, in the last pipeline (the claim's queue). */
  queued?: number;
  /** A config_snapshot as the daemon froze it for the project's pipeline. */
  snapshot: string;
  /** Epoch seconds; the newest build finished a day before this. */
  now: number;
}

/**
 * Builds that finished longer ago than the default retention (ROOST_LOG_RETENTION_DAYS and
 * ROOST_ARTIFACT_RETENTION_DAYS, 90) have had their logs and artifacts deleted by then, as a daemon
 * that ran all along would have done (lib/retention/retention.ts): history, not a backlog for the bench to wait on.
 */
const RETENTION_SECONDS = 90 * 86_400;

/** How the bench seeds, said in its output. */
export const SEED_ROUTE = "one INSERT … SELECT from a recursive CTE in one transaction, triggers set aside and their counters computed from the result";

export function seedBuilds(file: string, o: SeedOptions): { ms: number } {
  const started = performance.now();
  const db = new Database(file);
  try {
    db.exec("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000");
    const triggers = db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'builds'").all();
    const queued = o.queued ?? 0;
    const oldest = o.now - 86_400 - o.builds * 10;
    const pipelines = JSON.stringify(o.pipelineIds);
    db.transaction(() => {
      for (const t of triggers) db.exec(`DROP TRIGGER ${t.name}`);
      const start = Number(db.query<{ n: number }, [string]>("SELECT next_build_number AS n FROM projects WHERE id = ?").get(o.projectId)!.n);
      db.query(
        `INSERT INTO builds (id, project_id, pipeline_id, build_number, branch, commit_sha, config_snapshot, status, exit_code, trigger_type, trigger_event, trigger_ref, trigger_actor,
           queued_at, started_at, finished_at, created_at, updated_at, queue_seq, runner_route, own_max_concurrent, logs_deleted_at, artifacts_deleted_at)
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $builds),
         b AS (SELECT i, $start + i AS number, $oldest + i * 10 AS at,
                 CASE WHEN i >= $builds - $queued THEN json_extract($pipelines, '$[#-1]') ELSE json_extract($pipelines, '$[' || (i % json_array_length($pipelines)) || ']') END AS pipeline,
                 CASE WHEN i >= $builds - $queued THEN 'queued' WHEN i % 50 = 7 THEN 'failed' WHEN i % 97 = 3 THEN 'canceled' ELSE 'succeeded' END AS status,
                 CASE WHEN i % 10 < 6 THEN 'main' ELSE 'feature/' || (i % 100) END AS branch,
                 CASE WHEN i % 20 = 0 THEN 'schedule' WHEN i % 7 = 0 THEN 'manual' ELSE 'webhook' END AS kind
               FROM n)
         SELECT $project || '-' || number, $project, pipeline, number, branch, printf('%040x', number), $snapshot, status,
           CASE status WHEN 'succeeded' THEN 0 WHEN 'failed' THEN 1 ELSE NULL END,
           CASE kind WHEN 'webhook' THEN 'webhook' ELSE 'manual' END, CASE kind WHEN 'webhook' THEN 'push' WHEN 'schedule' THEN 'schedule' ELSE 'manual' END,
           'refs/heads/' || branch, 'bench', at, CASE WHEN status = 'queued' THEN NULL ELSE at + 5 END, CASE WHEN status = 'queued' THEN NULL ELSE at + 300 END, at, at + 300,
           CASE WHEN status = 'queued' THEN number ELSE NULL END, $route, 0,
           CASE WHEN at + 300 < $retainedFrom THEN at + 300 + $retention ELSE NULL END, CASE WHEN at + 300 < $retainedFrom THEN at + 300 + $retention ELSE NULL END
         FROM b`,
      ).run({
        builds: o.builds,
        start,
        oldest,
        queued,
        pipelines,
        project: o.projectId,
        snapshot: o.snapshot,
        route: routeKey({ apple: [], labels: [] }),
        retainedFrom: o.now - RETENTION_SECONDS,
        retention: RETENTION_SECONDS,
      });
      db.query("UPDATE projects SET next_build_number = next_build_number + ? WHERE id = ?").run(o.builds, o.projectId);
      // What the triggers keep, computed from the builds now there (the same statements as the migrations).
      db.exec(`DELETE FROM build_counts; DELETE FROM build_branch_counts; DELETE FROM build_queue_groups;
        INSERT INTO build_counts (pipeline_id, project_id, status, trigger_kind, n)
          SELECT pipeline_id, project_id, status, CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END, COUNT(*) FROM builds GROUP BY 1, 3, 4;
        INSERT INTO build_branch_counts (pipeline_id, project_id, branch, status, trigger_kind, n)
          SELECT pipeline_id, project_id, branch, status, CASE WHEN trigger_event = 'schedule' THEN 'schedule' ELSE trigger_type END, COUNT(*) FROM builds GROUP BY 1, 3, 4, 5;
        INSERT INTO build_queue_groups (pipeline_id, runner_route, own_max_concurrent, queued)
          SELECT pipeline_id, runner_route, own_max_concurrent, COUNT(*) FROM builds WHERE status = 'queued' GROUP BY 1, 2, 3;
        UPDATE build_queue_sequence SET next = (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM builds);`);
      for (const t of triggers) db.exec(t.sql);
    })();
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  return { ms: performance.now() - started };
}
