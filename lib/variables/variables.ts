// Project and pipeline variables (docs/secrets.md): plain or secret, a value or a file. Secret
// values are sealed with the secret box (bound to their project, pipeline and key), never
// returned by the API, and given only to builds the project trusts: never to a pull request from
// a fork, as GitHub Actions withholds secrets from fork pull requests
// (https://docs.github.com/en/actions/security-for-github-actions/security-guides/using-secrets-in-github-actions#using-secrets-in-a-workflow),
// and, for a variable with protected_refs, only to builds of a matching branch or tag that are
// not pull requests (GitLab's protected variables,
// https://docs.gitlab.com/ci/variables/#protect-a-cicd-variable). Every change is recorded in
// variable_changes with who and when, never the value. An environment's secrets (docs/publishing.md)
// are variables of an environment scope: never given to a build, only to a publish to that
// environment (lib/publishing/deployments.ts).
import { z } from "zod";
import type { Executor, Row, Statement } from "../db/client.ts";
import type { InValue } from "../db/database.ts";
import { all, bool, inTransaction, json, num, one, rowMapper, str, strOrNull } from "../db/client.ts";
import type { Db } from "../db/client.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import { newId } from "../auth/secrets.ts";
import { matchRefPatterns, RefPattern } from "../pipelines/branch-patterns.ts";
import type { Build } from "../builds/store.ts";
import type { StoredEnvEntry } from "../pipelines/config.ts";

/** Largest file variable, decoded: keystores, .p12 files and provisioning profiles are a few KiB. */
export const MAX_FILE_BYTES = 256 * 1024;
const MAX_VALUE_CHARS = 16_384;

export const VariableKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be a shell variable name (letters, digits, _; at most 128)")
  .refine((k) => !k.startsWith("ROOST_"), "ROOST_ variables are set by the runner");

export const PutVariableBody = z
  .object({
    value: z.string().describe("the value; for a file variable, the file's bytes in base64. Always required: values are write-only"),
    secret: z.boolean().default(false).describe("encrypted at rest, never returned, masked in logs, withheld from fork pull requests"),
    file: z.boolean().default(false).describe("the runner writes the value to a private file and sets the variable to its path"),
    protected_refs: z
      .array(RefPattern)
      .max(50)
      .default([])
      .describe(
        "branch patterns (main, release/*) and tag patterns written refs/tags/… (refs/tags/v*); a plain pattern never matches a tag. When set, only builds of a matching ref that are not pull requests receive the variable",
      ),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (!body.file) {
      if (body.value.length > MAX_VALUE_CHARS) ctx.addIssue({ code: "custom", path: ["value"], message: `must be at most ${MAX_VALUE_CHARS} characters` });
      return;
    }
    const compact = body.value.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0)
      ctx.addIssue({ code: "custom", path: ["value"], message: "a file variable's value must be base64" });
    else if ((compact.length / 4) * 3 > MAX_FILE_BYTES + 2)
      ctx.addIssue({ code: "custom", path: ["value"], message: `a file must be at most ${MAX_FILE_BYTES / 1024} KiB` });
  });
export type PutVariableBody = z.output<typeof PutVariableBody>;

export const VariableResource = z.object({
  key: z.string(),
  value: z.string().nullable().describe("null for a secret: secret values are never returned"),
  secret: z.boolean(),
  file: z.boolean(),
  protected_refs: z.array(z.string()),
  pipeline_id: z.string().nullable().describe("null for a project variable"),
  created_at: z.number().int(),
  updated_at: z.number().int(),
  updated_by: z.string().nullable().describe("id of the user who last set it"),
});

export const VariableChangeResource = z.object({
  id: z.string(),
  key: z.string(),
  pipeline_id: z.string().nullable(),
  environment_id: z.string().nullable().describe("set for an environment's secret (docs/publishing.md)"),
  action: z.enum(["created", "updated", "deleted"]),
  secret: z.boolean(),
  file: z.boolean(),
  actor_id: z.string().nullable(),
  actor: z.string().describe("the actor's e-mail when the change was made"),
  created_at: z.number().int(),
});

/** One variable or secret (table variables). */
const toVariable = rowMapper({
  id: str,
  project_id: str,
  pipeline_id: strOrNull,
  /** Set for an environment's secret: given only to publishes to that environment. */
  environment_id: strOrNull,
  key: str,
  /** Sealed when secret. */
  value: str,
  secret: bool,
  file: bool,
  protected_refs: json<string[]>(),
  created_at: num,
  updated_at: num,
  updated_by: strOrNull,
});
export type Variable = ReturnType<typeof toVariable>;

export function toPublicVariable(v: Variable): z.output<typeof VariableResource> {
  return {
    key: v.key,
    value: v.secret ? null : v.value,
    secret: v.secret,
    file: v.file,
    protected_refs: v.protected_refs,
    pipeline_id: v.pipeline_id,
    created_at: v.created_at,
    updated_at: v.updated_at,
    updated_by: v.updated_by,
  };
}

/** Where a variable belongs: the project, one of its pipelines, or one of its environments. */
export interface VariableScope {
  projectId: string;
  pipelineId: string | null;
  environmentId?: string | null;
}

/** The scope's key in the variables table: "" for the project, the pipeline's id, or env:<id>. */
function scopeKey(scope: VariableScope): string {
  return scope.environmentId ? `env:${scope.environmentId}` : (scope.pipelineId ?? "");
}

/**
 * A project's own variables (pipelineId null), one pipeline's or one environment's, by key.
 * `= +?`: with bare parameters beside the ORDER BY the index answers, SQLite compiled this
 * statement again on every call (20 against 5 µs alone; tests/lib/db/bound-parameters.test.ts).
 */
export async function listVariables(db: Executor, projectId: string, pipelineId: string | null, environmentId: string | null = null): Promise<Variable[]> {
  const rows = await all(db, "SELECT * FROM variables WHERE project_id = +? AND scope_key = +? ORDER BY key", [
    projectId,
    scopeKey({ projectId, pipelineId, environmentId }),
  ]);
  return rows.map(toVariable);
}

/**
 * The variables a build receives as a statement naming the build by an SQL expression (`+?` for
 * an id; a job's payload reads them in the claim's write batch, lib/runners/protocol.ts): its
 * project's own, then its pipeline's, each by key. The project's scope key is "" and sorts before
 * any pipeline's id, and the index answers the order (one seek per scope).
 */
export function variablesOfBuild(build: { sql: string; args: InValue[] }): Statement {
  return {
    sql: `SELECT v.* FROM builds b JOIN variables v ON v.project_id = b.project_id AND v.scope_key IN ('', b.pipeline_id)
          WHERE b.id = ${build.sql} ORDER BY v.scope_key, v.key`,
    args: build.args,
  };
}

/** The rows of variablesOfBuild. */
export function toVariablesOfBuild(rows: Row[]): Variable[] {
  return rows.map(toVariable);
}

/** The purpose a secret is sealed for: it opens only as this variable of this scope. */
function purpose(v: { project_id: string; pipeline_id: string | null; environment_id?: string | null }, key: string): string {
  return v.environment_id ? `variable:${v.project_id}:env:${v.environment_id}:${key}` : `variable:${v.project_id}:${v.pipeline_id ?? ""}:${key}`;
}

/** A variable's value in the clear: secrets opened for their own scope only. */
export async function revealVariable(secrets: SecretBox, v: Variable): Promise<string> {
  return v.secret ? secrets.open(v.value, purpose(v, v.key)) : v.value;
}

export interface Actor {
  id: string | null;
  email: string;
}

/** Creates or replaces a variable and records the change; returns it and whether it was new. */
export async function putVariable(
  db: Db,
  secrets: SecretBox,
  scope: VariableScope,
  key: string,
  body: PutVariableBody,
  actor: Actor,
  now: number,
): Promise<{ variable: Variable; created: boolean }> {
  const plain = body.file ? body.value.replace(/\s+/g, "") : body.value;
  const value = body.secret
    ? await secrets.seal(plain, purpose({ project_id: scope.projectId, pipeline_id: scope.pipelineId, environment_id: scope.environmentId ?? null }, key))
    : plain;
  return inTransaction(db, async (tx) => {
    const existing = await one(tx, "SELECT id FROM variables WHERE project_id = ? AND scope_key = ? AND key = ?", [scope.projectId, scopeKey(scope), key]);
    const refs = JSON.stringify(body.protected_refs);
    if (existing) {
      await tx.execute({
        sql: "UPDATE variables SET value = ?, secret = ?, file = ?, protected_refs = ?, updated_by = ?, updated_at = ? WHERE id = ?",
        args: [value, body.secret ? 1 : 0, body.file ? 1 : 0, refs, actor.id, now, str(existing, "id")],
      });
    } else {
      await tx.execute({
        sql: `INSERT INTO variables (id, project_id, pipeline_id, environment_id, scope_key, key, value, secret, file, protected_refs, created_by, updated_by, created_at, updated_at)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        args: [
          newId(),
          scope.projectId,
          scope.pipelineId,
          scope.environmentId ?? null,
          scopeKey(scope),
          key,
          value,
          body.secret ? 1 : 0,
          body.file ? 1 : 0,
          refs,
          actor.id,
          actor.id,
          now,
          now,
        ],
      });
    }
    await recordChange(tx, scope, key, existing ? "updated" : "created", body, actor, now);
    const row = await one(tx, "SELECT * FROM variables WHERE project_id = ? AND scope_key = ? AND key = ?", [scope.projectId, scopeKey(scope), key]);
    return { variable: toVariable(row!), created: !existing };
  });
}

/** Deletes a variable and records it; false when there was none. */
export async function deleteVariable(db: Db, scope: VariableScope, key: string, actor: Actor, now: number): Promise<boolean> {
  return inTransaction(db, async (tx) => {
    const row = await one(tx, "SELECT * FROM variables WHERE project_id = ? AND scope_key = ? AND key = ?", [scope.projectId, scopeKey(scope), key]);
    if (!row) return false;
    const v = toVariable(row);
    await tx.execute({ sql: "DELETE FROM variables WHERE id = ?", args: [v.id] });
    await recordChange(tx, scope, key, "deleted", v, actor, now);
    return true;
  });
}

async function recordChange(
  tx: Executor,
  scope: VariableScope,
  key: string,
  action: "created" | "updated" | "deleted",
  kind: { secret: boolean; file: boolean },
  actor: Actor,
  now: number,
): Promise<void> {
  await tx.execute({
    sql: "INSERT INTO variable_changes (id, project_id, pipeline_id, environment_id, key, action, secret, file, actor_id, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    args: [
      newId(),
      scope.projectId,
      scope.pipelineId,
      scope.environmentId ?? null,
      key,
      action,
      kind.secret ? 1 : 0,
      kind.file ? 1 : 0,
      actor.id,
      actor.email,
      now,
    ],
  });
}

/** The project's variable changes (its own and its pipelines'), newest first. */
export async function listVariableChanges(
  db: Executor,
  projectId: string,
  options: { pipelineId?: string; limit: number; offset: number },
): Promise<z.output<typeof VariableChangeResource>[]> {
  const where = ["project_id = +?"];
  const args: (string | number)[] = [projectId];
  if (options.pipelineId) {
    where.push("pipeline_id = +?");
    args.push(options.pipelineId);
  }
  const rows = await all(db, `SELECT * FROM variable_changes WHERE ${where.join(" AND ")} ORDER BY created_at DESC, rowid DESC LIMIT +? OFFSET +?`, [
    ...args,
    options.limit,
    options.offset,
  ]);
  return rows.map((r) => ({
    id: str(r, "id"),
    key: str(r, "key"),
    pipeline_id: strOrNull(r, "pipeline_id"),
    environment_id: strOrNull(r, "environment_id"),
    action: str(r, "action") as "created" | "updated" | "deleted",
    secret: bool(r, "secret"),
    file: bool(r, "file"),
    actor_id: strOrNull(r, "actor_id"),
    actor: str(r, "actor"),
    created_at: num(r, "created_at"),
  }));
}

/**
 * Whether the project trusts a build with its secrets: not a pull request from a fork. The
 * webhook path records `fork: true` in the build's context for those (a re-run copies the
 * context, so it stays untrusted).
 */
export function buildIsTrusted(build: Pick<Build, "context">): boolean {
  const context = build.context as { fork?: unknown } | null;
  return !(context && context.fork === true);
}

/**
 * Whether a variable limited to protected_refs reaches this build: its ref matches (a tag build,
 * whose branch column holds the tag's name, only by a refs/tags/ pattern), it is not a
 * pull request, and its commit is the ref's own (a manual build that named its commit_sha could
 * pair a protected branch's name with any commit, e.g. one pushed to a feature branch).
 */
export function refAllowed(v: Variable, build: Pick<Build, "branch" | "trigger_event" | "context">): boolean {
  if (v.protected_refs.length === 0) return true;
  if (build.trigger_event === "pull_request") return false;
  if ((build.context as { commit_pinned?: boolean } | null)?.commit_pinned === true) return false;
  return matchRefPatterns(v.protected_refs, { kind: build.trigger_event === "tag" ? "tag" : "branch", name: build.branch }).matched;
}

export interface SecretFile {
  key: string;
  content_base64: string;
  secret: boolean;
}

export interface BuildVariables {
  env: StoredEnvEntry[];
  files: SecretFile[];
  /** Keys of secrets this build did not receive, and why (for one line in its log). */
  withheld: string[];
  withheldReason: string | null;
}

/**
 * What a build's job receives, revealed: the frozen pipeline env (its secrets only when trusted),
 * then the project's variables, then the pipeline's (a later one replaces an earlier one of the
 * same key, as GitLab lets settings variables override the file's), as variablesOfBuild read them.
 */
export async function variablesForBuild(
  secrets: SecretBox,
  build: Build,
  frozenEnv: StoredEnvEntry[] | Promise<StoredEnvEntry[]>,
  scoped: Variable[],
): Promise<BuildVariables> {
  const frozen = await frozenEnv;
  const trusted = buildIsTrusted(build);
  const env = new Map<string, StoredEnvEntry>();
  const files = new Map<string, SecretFile>();
  const withheld = new Set<string>();
  for (const e of frozen) {
    if (e.secret && !trusted) withheld.add(e.key);
    else env.set(e.key, e);
  }
  for (const v of scoped) {
    if ((v.secret && !trusted) || !refAllowed(v, build)) {
      if (v.secret) withheld.add(v.key);
      env.delete(v.key);
      files.delete(v.key);
      continue;
    }
    const value = await revealVariable(secrets, v);
    withheld.delete(v.key);
    if (v.file) {
      env.delete(v.key);
      files.set(v.key, { key: v.key, content_base64: value, secret: v.secret });
    } else {
      files.delete(v.key);
      env.set(v.key, { key: v.key, value, secret: v.secret });
    }
  }
  return {
    env: [...env.values()],
    files: [...files.values()],
    withheld: [...withheld].sort(),
    withheldReason:
      withheld.size === 0
        ? null
        : !trusted
          ? "this build is of a pull request from a fork"
          : (build.context as { commit_pinned?: boolean } | null)?.commit_pinned === true
            ? "their protected_refs are not given to a build whose commit was named by hand"
            : "their protected_refs do not match this build's ref",
  };
}

export interface RegistryAuth {
  /** The registry auth file registry_credentials names, or null. */
  auth: { key: string; content: string } | null;
  /** Why there is none although the pipeline names one: the build fails with it. */
  problem: string | null;
}

/**
 * Takes the variable a pipeline's registry_credentials names out of what its steps receive: it is
 * for the engine's pulls only (docs/pipelines.md "Private images"), as GitLab's DOCKER_AUTH_CONFIG
 * is for the runner's (https://docs.gitlab.com/ci/docker/using_docker_images/#access-an-image-from-a-private-container-registry).
 * It must be a secret holding an auth file, `{"auths": {…}}`, the format of Docker's config.json
 * and of containers-auth.json(5).
 */
export function takeRegistryAuth(variables: BuildVariables, key: string | undefined): RegistryAuth {
  if (!key) return { auth: null, problem: null };
  const entry = variables.env.find((e) => e.key === key);
  const file = variables.files.find((f) => f.key === key);
  variables.env = variables.env.filter((e) => e.key !== key);
  variables.files = variables.files.filter((f) => f.key !== key);
  if (variables.withheld.includes(key))
    return { auth: null, problem: `the registry credentials ${key} are not given to this build (${variables.withheldReason ?? "not trusted"})` };
  if (!entry && !file)
    return { auth: null, problem: `registry_credentials names ${key}, but neither the project nor the pipeline has a secret variable ${key}` };
  if (!(entry?.secret ?? file?.secret))
    return { auth: null, problem: `registry_credentials names ${key}, which is not a secret: set it again with secret: true` };
  const content = entry ? entry.value : Buffer.from(file!.content_base64, "base64").toString("utf8");
  let auths: unknown;
  try {
    auths = (JSON.parse(content) as { auths?: unknown }).auths;
  } catch {
    auths = null;
  }
  if (!auths || typeof auths !== "object" || Array.isArray(auths))
    return {
      auth: null,
      problem: `the registry credentials ${key} are not a registry auth file: its value must be JSON like {"auths": {"registry.example.com": {"auth": "<base64 of user:password>"}}}`,
    };
  return { auth: { key, content }, problem: null };
}
