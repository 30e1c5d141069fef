// The instance's setup state (docs/api.md "Setup"): `incomplete` until an owner exists and the
// chosen modes are complete, then `ready` for good.
import type { Executor } from "../db/client.ts";
import { numOrNull, one, str, strOrNull } from "../db/client.ts";

export type InstanceState = "incomplete" | "ready";
export type RuntimeMode = "local" | "remote";
export type RemoteAuthMode = "oidc" | "trusted_proxy";

export interface Instance {
  state: InstanceState;
  /** null until chosen; an unchosen instance behaves as Local Only (README "First run"). */
  runtime_mode: RuntimeMode | null;
  remote_auth_mode: RemoteAuthMode | null;
  preferences_set_at: number | null;
  ready_at: number | null;
}

export async function getInstance(db: Executor): Promise<Instance> {
  const row = await one(db, "SELECT * FROM instance WHERE id = 1");
  if (!row) throw new Error("instance row missing: the database was not migrated");
  return {
    state: str(row, "state") as InstanceState,
    runtime_mode: strOrNull(row, "runtime_mode") as RuntimeMode | null,
    remote_auth_mode: strOrNull(row, "remote_auth_mode") as RemoteAuthMode | null,
    preferences_set_at: numOrNull(row, "preferences_set_at"),
    ready_at: numOrNull(row, "ready_at"),
  };
}

/** The effective runtime mode: Local Only until someone chooses External Access. */
export function runtimeMode(instance: Instance): RuntimeMode {
  return instance.runtime_mode ?? "local";
}

export async function setPreferences(db: Executor, runtime: RuntimeMode, remoteAuth: RemoteAuthMode | null, now: number): Promise<boolean> {
  const result = await db.execute({
    sql: "UPDATE instance SET runtime_mode = ?, remote_auth_mode = ?, preferences_set_at = ? WHERE id = 1 AND state = 'incomplete'",
    args: [runtime, remoteAuth, now],
  });
  return result.rowsAffected === 1;
}

/** Moves incomplete → ready exactly once; false when another request got there first. */
export async function markReady(db: Executor, now: number): Promise<boolean> {
  const result = await db.execute({
    sql: "UPDATE instance SET state = 'ready', ready_at = ? WHERE id = 1 AND state = 'incomplete'",
    args: [now],
  });
  return result.rowsAffected === 1;
}

/** After setup: the owner moves a ready instance between Local Only and External Access (docs/external-access.md). */
export async function setRuntimeMode(db: Executor, runtime: RuntimeMode, remoteAuth: RemoteAuthMode | null): Promise<void> {
  await db.execute({ sql: "UPDATE instance SET runtime_mode = ?, remote_auth_mode = ? WHERE id = 1 AND state = 'ready'", args: [runtime, remoteAuth] });
}
