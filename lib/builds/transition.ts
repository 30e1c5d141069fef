// The only way a build's status changes after creation (lib/builds/state-machine.ts). A
// conditional UPDATE makes the move atomic: of two racing transitions (a runner finishing, a user
// canceling) exactly one wins, and the loser gets null.
//
// The change writes what follows it in the same transaction: the notification outbox row of a
// finished build and the commit status of its commit (lib/builds/what-follows.ts).
//
// A state change that writes more than the build row (a job finished *and* its build finished; a
// lost job, its log line, its build and an incident) runs transitionBuildIn inside one transaction
// and publishes only after the commit (lib/runners/job-lifecycle.ts): listeners never hear of a
// change that a rollback then undoes.
import type { Db, Executor, SqlCondition, Statement } from "../db/client.ts";
import { ALWAYS } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { toBuild, type Build } from "./store.ts";
import { allowedFrom, isFinished, nextStatus, type BuildTransition } from "./state-machine.ts";
import { afterStatusChanged, commitStatusChanged, statusChangedStatements } from "./what-follows.ts";
import type { Clock } from "../http/context.ts";
import type { EventBus } from "../daemon/events.ts";

export interface TransitionFields {
  runner_id?: string;
  exit_code?: number;
  failure_reason?: string;
  runner_policy_block_reason?: string | null;
}

/** A one-statement transition, published at once (a cancel, a test moving a build along). */
export async function transitionBuild(
  deps: { db: Db | Executor; clock: Clock; events: EventBus },
  buildId: string,
  transition: BuildTransition,
  fields: TransitionFields = {},
): Promise<Build | null> {
  const now = deps.clock.now();
  const db = deps.db;
  // The change and what follows it (what-follows.ts) commit together.
  const build =
    "transaction" in db
      ? await db.transaction((tx) => transitionBuildIn(tx, now, buildId, transition, fields))
      : await transitionBuildIn(db, now, buildId, transition, fields);
  if (build) publishBuildChanged(deps.events, build);
  return build;
}

/** Tell this process's listeners (SSE, commit statuses, runners) that a build moved; call after commit. */
export function publishBuildChanged(events: EventBus, build: Build): void {
  events.publish({ type: "build.changed", build_id: build.id, project_id: build.project_id, status: build.status });
}

/** The transition's UPDATE on the caller's executor (a transaction), without publishing. */
export async function transitionBuildIn(
  db: Db | Executor,
  now: number,
  buildId: string,
  transition: BuildTransition,
  fields: TransitionFields = {},
): Promise<Build | null> {
  const row = (await db.execute(transitionUpdate(now, { sql: "?", args: [buildId] }, transition, fields))).rows[0];
  if (!row) return null;
  const build = toBuild(row);
  await afterStatusChanged(db, [build]);
  return build;
}

/**
 * A transition to a status that is not finished, as statements for one batch (the claim,
 * lib/runners/jobs.ts): the build is named by an SQL expression over a row an earlier statement of
 * the same batch wrote, so nothing is read first and the whole change is one round trip to a
 * remote server. The expression must name a build the transition cannot be refused for under the
 * same write lock. The first statement RETURNs the build; the second is what follows the change.
 */
export function transitionStatements(
  now: number,
  target: { sql: string; args: InValue[] },
  transition: BuildTransition,
  fields: TransitionFields = {},
): Statement[] {
  const to = nextStatus(allowedFrom(transition)[0]!, transition)!;
  if (isFinished(to)) throw new Error(`transitionStatements: ${transition} finishes a build, and what follows that needs the build read`);
  return [transitionUpdate(now, target, transition, fields), commitStatusChanged(target, to, now)];
}

/** The build as `transition` leaves it, from the build as read; null when its status does not allow the transition. */
export function transitioned(now: number, build: Build, transition: BuildTransition, fields: TransitionFields = {}): Build | null {
  const to = nextStatus(build.status, transition);
  if (!to) return null;
  return {
    ...build,
    status: to,
    started_at: transition === "start" ? now : transition === "release" ? null : build.started_at,
    finished_at: isFinished(to) ? now : build.finished_at,
    runner_id: transition === "release" ? null : (fields.runner_id ?? build.runner_id),
    exit_code: fields.exit_code ?? build.exit_code,
    failure_reason: fields.failure_reason ?? build.failure_reason,
    runner_policy_block_reason: fields.runner_policy_block_reason !== undefined ? fields.runner_policy_block_reason : build.runner_policy_block_reason,
    updated_at: now,
  };
}

/**
 * A transition of a build read beforehand, as statements for one guarded write batch (the
 * runner's finish, lib/runners/job-lifecycle.ts): what follows the change (what-follows.ts), and
 * the conditional UPDATE, RETURNING the build when it moved. Each is written only where `when`
 * holds, which must say that the build's status is still the one read; the caller puts the
 * UPDATE, which changes it, after every statement so guarded, so either all of them write or none
 * does. `moved` is the build as the transition leaves it (transitioned).
 */
export function transitionAfterRead(
  moved: Build,
  transition: BuildTransition,
  fields: TransitionFields,
  when: SqlCondition,
): { follows: Statement[]; update: Statement } {
  return {
    follows: statusChangedStatements(moved, when),
    update: transitionUpdate(moved.updated_at, { sql: "?", args: [moved.id] }, transition, fields, when),
  };
}

/** The conditional UPDATE of a transition, RETURNING the build when it moved: of two racing transitions exactly one wins. */
function transitionUpdate(
  now: number,
  target: { sql: string; args: InValue[] },
  transition: BuildTransition,
  fields: TransitionFields,
  when: SqlCondition = ALWAYS,
): Statement {
  const from = allowedFrom(transition);
  const to = nextStatus(from[0]!, transition)!;
  return {
    sql: `UPDATE builds SET
       status = ?,
       started_at = CASE ? WHEN 'start' THEN ? WHEN 'release' THEN NULL ELSE started_at END,
       finished_at = CASE WHEN ? THEN ? ELSE finished_at END,
       runner_id = CASE WHEN ? = 'release' THEN NULL ELSE COALESCE(?, runner_id) END,
       exit_code = COALESCE(?, exit_code),
       failure_reason = COALESCE(?, failure_reason),
       runner_policy_block_reason = CASE WHEN ? THEN ? ELSE runner_policy_block_reason END,
       updated_at = ?
     WHERE id = ${target.sql} AND status IN (${from.map(() => "?").join(", ")}) AND ${when.sql}
     RETURNING *`,
    args: [
      to,
      transition,
      now,
      // Whether it finishes the build, decided here: an IN list of three in the statement was a
      // temporary b-tree SQLite built on every status change (schema.sql migration 50).
      isFinished(to) ? 1 : 0,
      now,
      transition,
      fields.runner_id ?? null,
      fields.exit_code ?? null,
      fields.failure_reason ?? null,
      fields.runner_policy_block_reason !== undefined ? 1 : 0,
      fields.runner_policy_block_reason ?? null,
      now,
      ...target.args,
      ...from,
      ...when.args,
    ],
  };
}
