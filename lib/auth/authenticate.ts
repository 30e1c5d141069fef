// One mechanism that enforces every route's auth rule (lib/http/route.ts AuthRule). Handlers never
// look at the Authorization header themselves.
import { isProjectRule, type AuthRule } from "../http/route.ts";
import { authorizeProject } from "./project-access.ts";
import type { AppContext, SetupGrant } from "../http/context.ts";
import type { Principal } from "./principal.ts";
import type { User } from "./users.ts";
import { fail } from "../http/errors.ts";
import { bearerToken } from "../http/io.ts";
import { findSessionBySecret, rememberedSession, type SessionRow } from "./sessions.ts";
import { LAST_USED_RESOLUTION_SECONDS, findApiTokenBySecret, rememberedApiToken, touchApiToken, type ApiTokenRow } from "./api-tokens.ts";
import { getInstance } from "../setup/instance.ts";
import { checkSetupToken } from "./one-time-credentials.ts";
import { lowerRole, roleAtLeast, type Role } from "./roles.ts";
import { constantTimeEqualStrings } from "./secrets.ts";
import { isLoopbackAddress } from "../net/addresses.ts";
import { rememberedRunner, runnerForToken, touchRunner, type Runner, type RunnerStands } from "../runners/store.ts";
import { findStreamGrant } from "./stream-tokens.ts";
import { findBuild } from "../builds/store.ts";
import { projectRoleOf } from "./project-access.ts";
import { reauthenticate } from "./reauthenticate.ts";
import { cookieSessionToken } from "./browser-session.ts";
import { credentialKind, describeCredential } from "./credential-kind.ts";
import type { SecretKind } from "./secrets.ts";

/**
 * What the rule authenticated, handed to the handler in its context: which fields each rule sets
 * is lib/http/context.ts AuthenticatedBy (a projectRole rule adds the project and what the path names).
 */
export interface Authentication {
  principal?: Principal;
  setupToken?: SetupGrant;
  runner?: Runner;
  streamBuildId?: string;
  /**
   * Set when the principal's credential was taken as this daemon remembers it, without asking the
   * database whether anything was committed since (authenticate's `fromMemory`): the data version
   * it was read at, and how many reads the reader had made (Db.lastRead). The caller confirms it
   * after reads of its own, or authenticates again (lib/http/app.ts).
   */
  unconfirmed?: { version: number; reads: number };
  /**
   * Set when the runner was taken as this process remembers it (a route whose handler checks it in
   * its write: `memory` "runner-in-write"): the condition its write batch must hold, and on which
   * the handler, when the batch wrote nothing, confirms the runner (confirmRunner) before going on.
   */
  runnerStands?: RunnerStands;
}

const MIN_ROLE: Partial<Record<Exclude<AuthRule, object>, Role>> = {
  user: "developer",
  session: "developer",
  maintainer: "maintainer",
  admin: "admin",
  owner: "owner",
};

interface ExpectedCredential {
  takes: string;
  kinds: readonly SecretKind[];
  endpoints: string;
}

const USER_CREDENTIAL: ExpectedCredential = { takes: "a user session or an API token", kinds: ["sess", "pat"], endpoints: "user endpoints" };
const RULE_CREDENTIAL: Partial<Record<Exclude<AuthRule, object>, ExpectedCredential>> = {
  runner: { takes: "the runner's own token", kinds: ["rt"], endpoints: "runner protocol endpoints" },
  stream: { takes: "a stream token", kinds: ["st"], endpoints: "the log stream" },
  setup: { takes: "the setup token", kinds: ["setup"], endpoints: "setup endpoints" },
  session: { takes: "a user session", kinds: ["sess"], endpoints: "session-only endpoints (such as logout)" },
};

/** What a rule takes, which credential kinds that is, and what its endpoints are called, for the 401 sentences. */
function expectedCredential(rule: AuthRule): ExpectedCredential {
  return isProjectRule(rule) ? USER_CREDENTIAL : (RULE_CREDENTIAL[rule] ?? USER_CREDENTIAL);
}

/**
 * 401 when no credential was sent, or one of a kind this rule never takes. Only the prefix is
 * read, so the sentence is the same for a valid, revoked or invented token of that kind.
 */
function requireCredential(rule: AuthRule, token: string | null, where = "'Authorization: Bearer <token>'"): string {
  const expected = expectedCredential(rule);
  if (token === null) fail("missing_auth", `This endpoint takes ${expected.takes} as ${where}; the request has none.`);
  if (token === "") fail("missing_auth", `This endpoint takes ${expected.takes} as ${where}; the Authorization header does not use the Bearer scheme.`);
  const kind = credentialKind(token);
  if (kind === null || !expected.kinds.includes(kind)) {
    const hint = kind === "pat" && rule === "session" ? " API tokens are revoked with DELETE /v1/api-tokens/{token_id}." : "";
    const received = describeCredential(token);
    fail(
      "wrong_credential",
      `${received[0]!.toUpperCase()}${received.slice(1)} cannot call ${expected.endpoints}: this endpoint takes ${expected.takes}.${hint}`,
    );
  }
  return token;
}

/**
 * The runner of a request authenticated from memory (Authentication.runnerStands) read afresh, as
 * any other runner request reads it: refused (401, 403) when its token no longer works.
 */
export async function confirmRunner(ctx: AppContext & { request: Request }, runnerId: string): Promise<Runner> {
  return (await authenticate("runner", ctx.request, ctx, null, { runner_id: runnerId })).runner!;
}

/**
 * The runner of a request that has been waiting (a long-poll claim), read afresh before it takes
 * anything more: refused (401) when its token was revoked or rotated meanwhile, through any daemon.
 * Not recorded as seen: the request was, when it came.
 */
export async function runnerStillValid(ctx: AppContext & { request: Request }, runnerId: string): Promise<Runner> {
  const runner = await runnerForToken(ctx.db, bearerToken(ctx.request) ?? "");
  if (!runner || runner.id !== runnerId) fail("invalid_token", RUNNER_TOKEN_REFUSED);
  return runner;
}

const RUNNER_TOKEN_REFUSED = "The runner token is not valid (rotated or revoked?).";

/**
 * `memory` true (`fromMemory`): for an instance rule, a session or API token this daemon remembers, and that works
 * as remembered, may answer without a statement (Authentication.unconfirmed); anything else, and
 * every refusal, is asked of the database as usual.
 */
export async function authenticate(
  rule: AuthRule,
  request: Request,
  ctx: AppContext,
  peer: string | null,
  params: Record<string, string> = {},
  memory: boolean | "runner-in-write" = false,
): Promise<Authentication> {
  const fromMemory = memory === true;
  if (rule === "public" || rule === "webhook") return {};

  // Rules that take a user session also read it from the browser's HttpOnly cookie when no
  // Authorization header is sent (lib/auth/browser-session.ts, with its CSRF check).
  const token = bearerToken(request) ?? (isProjectRule(rule) || rule in MIN_ROLE ? cookieSessionToken(request, ctx) : null);
  if (rule === "runner") {
    const presented = requireCredential(rule, token);
    // A handler that checks the runner in its own write batch takes it as this process remembers it (lib/runners/store.ts RememberedRunner).
    // Only on its own runner's path: any other is answered from a read (a revoked token: 401, not 403).
    const kept = memory === "runner-in-write" ? rememberedRunner(ctx.db, presented) : null;
    const remembered = kept?.runner.id === params.runner_id ? kept : null;
    // A runner token works only on its own runner's paths (type confusion and cross-runner calls refused).
    const runner = remembered?.runner ?? (await runnerForToken(ctx.db, presented));
    if (!runner) fail("invalid_token", RUNNER_TOKEN_REFUSED);
    if (params.runner_id !== runner.id) fail("forbidden", "This runner token belongs to another runner.");
    // last_seen_at has a resolution of a second: a runner's further calls within it write nothing
    // (each write is a transaction, a round trip on a remote database).
    const now = ctx.clock.now();
    if (runner.last_seen_at === null || runner.last_seen_at < now) await touchRunner(ctx.db, runner.id, now, remembered?.stands);
    return remembered ? { runner, runnerStands: remembered.stands } : { runner };
  }
  if (rule === "stream") {
    // Stream tokens travel in the query string (EventSource sends no headers): scoped to one build, read-only, short-lived.
    const presented = new URL(request.url).searchParams.get("token");
    const where = "?token= (POST /v1/builds/{build_id}/stream-token)";
    const grant = await findStreamGrant(ctx.db, requireCredential(rule, presented || null, where), ctx.clock.now());
    if (!grant) fail("invalid_token", "The stream token is unknown or expired; ask for a new one.");
    if (grant.build_id !== params.build_id) fail("forbidden", "This stream token is for another build.");
    // The token is the user's, not a bearer pass: the session or API token it was minted with must
    // still work, and its user still see the project, when the stream opens (and while it is
    // open: lib/auth/stream-guard.ts). Signed out, revoked, deactivated or removed: refused.
    const principal = await reauthenticate(ctx.db, grant.credential, ctx.clock.now());
    if (!principal)
      fail("forbidden", "The session or API token this stream token was minted with no longer works (signed out, revoked, expired, or its user deactivated).");
    const build = await findBuild(ctx.db, grant.build_id);
    if (!build || (await projectRoleOf(ctx.db, principal, build.project_id)) === null) {
      fail("forbidden", "The user this stream token was issued to can no longer see this build.");
    }
    return { principal, streamBuildId: grant.build_id };
  }
  if (rule === "metrics") {
    // Prometheus scrapes with a static bearer token; without one configured, only this host may scrape.
    if (ctx.config.metricsToken) {
      if (token === null) fail("missing_auth", "Send the metrics token as 'Authorization: Bearer <token>'.");
      if (!constantTimeEqualStrings(token, ctx.config.metricsToken)) fail("invalid_token", "The metrics token is not valid.");
    } else if (!isLoopbackAddress(peer)) {
      fail("forbidden", "Without ROOST_METRICS_TOKEN, /metrics answers loopback peers only.");
    }
    return {};
  }
  if (rule === "setup") {
    const instance = await getInstance(ctx.db);
    if (instance.state === "ready") fail("setup_already_complete");
    const setupToken = await checkSetupToken(ctx.db, requireCredential(rule, token), ctx.clock.now());
    if (!setupToken) fail("invalid_setup_token", "The setup token is unknown or expired; mint a new one with `roost recover setup-token`.");
    return { setupToken };
  }

  const presented = requireCredential(rule, token);
  if (fromMemory && !isProjectRule(rule) && rule !== "session") {
    const remembered = rememberedPrincipal(presented, ctx, MIN_ROLE[rule]!);
    if (remembered !== null) return remembered;
  }
  const principal = rule === "session" ? await fromSession(presented, ctx) : await fromSessionOrApiToken(presented, ctx);
  if (isProjectRule(rule)) return authorizeProject(ctx.db, principal, rule, params);
  const minimum = MIN_ROLE[rule]!;
  if (!roleAtLeast(principal.role, minimum)) fail("forbidden", `This endpoint needs the ${minimum} role or higher.`);
  return { principal };
}

async function fromSession(token: string, ctx: AppContext): Promise<Principal> {
  // The session and its user as the database holds them now (read, or remembered only while nothing
  // has been committed since: lib/db/verified-reads.ts): a logout or a deactivation in any process refuses the next request.
  const found = await findSessionBySecret(ctx.db, token, ctx.clock.now());
  if (!found || !found.user.active) fail("invalid_session");
  return sessionPrincipal(found.session, found.user);
}

function sessionPrincipal(session: SessionRow, user: User): Principal {
  return { kind: "session", user, role: user.role, sessionId: session.id, tokenId: null, credentialExpiresAt: session.expires_at };
}

/**
 * The principal of a session or API token as this daemon remembers it, when it works as
 * remembered and its role meets `minimum`: taken with the data version it was read at, for the
 * caller to confirm. Null for anything else (not remembered, refused, an API token whose last use
 * is due to be written, not the role): the database is then asked, and refuses as usual.
 */
function rememberedPrincipal(token: string, ctx: AppContext, minimum: Role): Authentication | null {
  const now = ctx.clock.now();
  let principal: Principal;
  let taken: { version: number; reads: number };
  if (token.startsWith("roost_pat_")) {
    const found = rememberedApiToken(ctx.db, token);
    if (!found || apiTokenRefusal(found.token, found.creator, now) !== null || lastUseDue(found.token, now)) return null;
    principal = apiTokenPrincipal(found.token, found.creator);
    taken = found.taken;
  } else {
    const found = rememberedSession(ctx.db, token, now);
    if (!found || !found.user.active) return null;
    principal = sessionPrincipal(found.session, found.user);
    taken = found.taken;
  }
  if (!roleAtLeast(principal.role, minimum)) return null;
  return { principal, unconfirmed: taken };
}

/** Every refused API token gets the same answer. */
export const INVALID_API_TOKEN_MESSAGE = "The API token is not valid.";

/**
 * Refuses an API token with one body whatever the reason: telling a caller that a token was
 * revoked, expired or belongs to a deactivated user confirms that a leaked string was once a real
 * token and whose it was (OWASP Authentication Cheat Sheet, "Authentication and Error Messages").
 * The reason goes to the server's log only, with the token's id, never its secret.
 */
function refuseApiToken(ctx: AppContext, tokenId: string | null, reason: "unknown" | "revoked" | "expired" | "creator_inactive"): never {
  ctx.log.info("api token refused", { token_id: tokenId, reason });
  fail("invalid_token", INVALID_API_TOKEN_MESSAGE);
}

async function fromSessionOrApiToken(token: string, ctx: AppContext): Promise<Principal> {
  if (!token.startsWith("roost_pat_")) return fromSession(token, ctx);
  const now = ctx.clock.now();
  // The token and its creator as the database holds them now (read, or remembered only while
  // nothing has been committed since: lib/db/verified-reads.ts), so a revocation or a deactivation
  // in any process refuses the very next request.
  const found = await findApiTokenBySecret(ctx.db, token);
  if (!found) refuseApiToken(ctx, null, "unknown");
  const { token: apiToken, creator } = found;
  const refusal = apiTokenRefusal(apiToken, creator, now);
  if (refusal !== null) refuseApiToken(ctx, apiToken.id, refusal);
  // A write (and the write lock) only when last_used_at is due, not on every request.
  if (lastUseDue(apiToken, now)) await touchApiToken(ctx.db, apiToken.id, now);
  return apiTokenPrincipal(apiToken, creator);
}

/** Why an API token does not work now, or null when it does. */
function apiTokenRefusal(apiToken: ApiTokenRow, creator: User, now: number): "revoked" | "expired" | "creator_inactive" | null {
  if (apiToken.revoked_at !== null) return "revoked";
  if (apiToken.expires_at <= now) return "expired";
  // A token never outlives or outranks its creator (docs/authorization.md "Roles").
  if (!creator.active) return "creator_inactive";
  return null;
}

/** Whether the token's last_used_at is due to be written (at most once a minute). */
function lastUseDue(apiToken: ApiTokenRow, now: number): boolean {
  return apiToken.last_used_at === null || apiToken.last_used_at <= now - LAST_USED_RESOLUTION_SECONDS;
}

function apiTokenPrincipal(apiToken: ApiTokenRow, creator: User): Principal {
  return {
    kind: "api_token",
    user: creator,
    role: lowerRole(apiToken.role, creator.role),
    sessionId: null,
    tokenId: apiToken.id,
    credentialExpiresAt: apiToken.expires_at,
  };
}
