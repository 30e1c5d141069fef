// What a build's change writes beside it, in the same transaction as the change, so that nothing
// acknowledged is lost on a crash and nothing is sent for a change a rollback undid. Every status
// change goes through lib/builds/transition.ts and every new build through lib/builds/create.ts;
// both call these. Background workers read the rows after the commit:
//   notification_outbox    a finished build, for lib/notifications/notifications.ts (docs/notifications.md)
//   commit_status_outbox   the newest state of a commit and pipeline, for lib/forges/commit-statuses.ts
//                          (docs/webhooks.md "Commit statuses"); plain git remotes have none
//   check_run_reports      a finished GitHub build with test results, for lib/test-results/check-runs.ts,
//                          written by triggers (schema.sql migration 47) of the finish and of the results
// A new build's commit status row is the exception: the trigger builds_commit_status writes it in
// the build's own INSERT (schema.sql migration 44), one statement fewer for every new build, which
// on a libSQL server is most of what a statement costs (docs/benchmarks.md "Webhook pushes on sqld").
import type { Executor, SqlCondition, Statement } from "../db/client.ts";
import { ALWAYS } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { newestStatusArgs, newestStatusOfBranch, type Build } from "./store.ts";
import { isFinished, type BuildStatus } from "./state-machine.ts";

/** A build's status changed (one transition, or superseded builds canceled at a creation). */
export async function afterStatusChanged(tx: Executor, builds: Build[]): Promise<void> {
  // Independent writes, started together: on a remote database they go in one request (lib/db/libsql.ts).
  await Promise.all(builds.flatMap((build) => statusChangedStatements(build)).map((stmt) => tx.execute(stmt)));
}

/**
 * What follows a build's change to its (new) status, as statements for a batch, written only
 * where `when` holds (a guarded batch, lib/runners/job-lifecycle.ts finishJob): its commit status,
 * and when it finished its notification.
 */
export function statusChangedStatements(build: Build, when: SqlCondition = ALWAYS): Statement[] {
  const change = commitStatusChanged({ sql: "?", args: [build.id] }, build.status, build.updated_at, when);
  return isFinished(build.status) ? [change, notificationQueued(build, when)] : [change];
}

/**
 * What follows a change to a status that is not finished, as a statement for a batch: the build
 * named by an SQL expression (`target`, lib/builds/transition.ts transitionStatements).
 */
export function commitStatusChanged(target: { sql: string; args: InValue[] }, status: BuildStatus, updatedAt: number, when: SqlCondition = ALWAYS): Statement {
  return {
    sql: `UPDATE commit_status_outbox SET status = ?, version = version + 1, updated_at = ? WHERE build_id = ${target.sql} AND ${when.sql}`,
    args: [status, updatedAt, ...target.args, ...when.args],
  };
}

/**
 * What follows the cancel of the builds an SQL query selects (`ids`), as statements for a batch
 * (createBuildsStatements): written just before that cancel, for the builds it is about to take,
 * with the values it sets (status canceled, updated at `at`), the same rows afterStatusChanged
 * writes after a cancel read back.
 */
export function afterCanceledStatements(ids: { sql: string; args: InValue[] }, at: number): Statement[] {
  return [
    {
      sql: `UPDATE commit_status_outbox SET status = 'canceled', version = version + 1, updated_at = ? WHERE build_id IN (${ids.sql})`,
      args: [at, ...ids.args],
    },
    {
      sql: `INSERT INTO notification_outbox (build_id, status, previous_status, created_at)
            SELECT c.id, 'canceled', ${newestStatusOfBranch(FINISHED, "c.pipeline_id", "c.branch", "c.build_number")}, ?
            FROM builds c WHERE c.id IN (${ids.sql})`,
      args: [at, ...ids.args],
    },
  ];
}

/** A notification's previous status: the newest succeeded or failed build before it on the branch (a success after a failure is a fix). */
const FINISHED = ["succeeded", "failed"] as const;

/**
 * The notification outbox row of a finished build, with the previous finished status of its
 * pipeline's branch. `+?`: with bare parameters this statement was compiled again on every call
 * (31 against 2 µs of CPU alone, on a file of 2,000 builds; docs/benchmarks.md, "The runner fleet").
 */
function notificationQueued(build: Build, when: SqlCondition): Statement {
  return {
    sql: `INSERT INTO notification_outbox (build_id, status, previous_status, created_at)
          SELECT ?, ?, ${newestStatusOfBranch(FINISHED, "+?", "+?", "+?")}, ? WHERE ${when.sql}`,
    args: [build.id, build.status, ...newestStatusArgs(FINISHED, [build.pipeline_id, build.branch, build.build_number]), build.updated_at, ...when.args],
  };
}
