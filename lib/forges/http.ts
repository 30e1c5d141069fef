// Outbound requests to a forge's API. Only the integration's configured API origin is ever
// contacted: pagination links that point anywhere else are refused, and no URL from a webhook
// payload is fetched (GitLab CVE-2021-22214 was SSRF through such URLs). Link-local and cloud
// metadata addresses are refused (lib/net/address-policy.ts). What users see of a failure is a status and
// a fixed phrase, never the host's body.
import { createHash } from "node:crypto";
import { hostRefusal } from "../net/address-policy.ts";
import type { Integration } from "../integrations/store.ts";
import { openCredentials } from "../integrations/credentials.ts";
import type { ForgeDeps } from "./forge.ts";

export class ForgeApiError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** When the host said to try again (its rate limit), epoch seconds; null when it did not say. */
    readonly retryAt: number | null = null,
  ) {
    super(message);
  }
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** How one app reaches forges, from its context (forgeAccess). */
export interface ForgeAccess {
  fetch: FetchLike;
  /** ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: link-local and metadata addresses are reachable. */
  allowLinkLocal: boolean;
  /** Unix epoch seconds. */
  now(): number;
  /** This app's short-lived host credentials until near their expiry: GitHub installation and clone tokens and App JWTs (lib/forges/github/api.ts). */
  tokens: Map<string, { token: string; expiresAt: number }>;
  /**
   * Until when (epoch seconds) a host asked not to be sent more requests with given credentials,
   * by origin and credentials; requests before then fail at once without reaching the host.
   */
  limits?: Map<string, number>;
  /** Stops every request of this access when it aborts (its reason, an Error, says why), besides each request's own timeout. */
  signal?: AbortSignal;
}

/** This app's way to forges: its own link-local policy (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL), clock, tokens and the forges' rate limits. */
export function forgeAccess(deps: ForgeDeps): ForgeAccess {
  const kept = keptOf(deps.secrets);
  return {
    fetch,
    allowLinkLocal: deps.config.integrations.allowLinkLocal,
    now: () => deps.clock.now(),
    tokens: kept.tokens,
    limits: kept.limits,
    ...(deps.signal ? { signal: deps.signal } : {}),
  };
}

/** An API client of the integration: its API URL, its opened credentials and this app's way to forges. */
export async function forgeClient<C extends object, T>(
  Client: new (apiUrl: string, credentials: C, access: ForgeAccess) => T,
  deps: ForgeDeps,
  integration: Integration,
): Promise<T> {
  return new Client(integration.api_url, await openCredentials<C>(deps.secrets, integration), forgeAccess(deps));
}

// Installation tokens live for an hour, and a forge's rate limit until it resets; each app (daemon,
// or test app) keeps its own, beside its secret box, so two apps in one process never share them.
const keptByApp = new WeakMap<object, Required<Pick<ForgeAccess, "tokens" | "limits">>>();
function keptOf(owner: object): Required<Pick<ForgeAccess, "tokens" | "limits">> {
  let entry = keptByApp.get(owner);
  if (!entry) keptByApp.set(owner, (entry = { tokens: new Map(), limits: new Map() }));
  return entry;
}

export const FORGE_TIMEOUT_MS = 10_000;

/** How long an upload of `size` bytes may take: a minute, and a second more for each 100 KB (at least 100 KB/s). */
export function uploadTimeoutMs(size: number): number {
  return 60_000 + Math.ceil(size / 100_000) * 1000;
}
/** Catalogue sync stops after this many pages (10,000 repositories at 100 a page). */
export const MAX_PAGES = 100;

/** The origins of the configured API URLs, each parsed once (every commit status is a request to one). */
const baseOrigins = new Map<string, string | null>();
const MAX_BASE_ORIGINS = 256;

function originOf(base: string): string | null {
  let origin = baseOrigins.get(base);
  if (origin === undefined) {
    origin = URL.parse(base)?.origin ?? null;
    if (baseOrigins.size >= MAX_BASE_ORIGINS) baseOrigins.clear();
    baseOrigins.set(base, origin);
  }
  return origin;
}

/** Why `signal` stopped a request: its reason's message. */
export function stopReason(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
}

/** One request to the forge at `base`; `timeoutMs` is longer than FORGE_TIMEOUT_MS only for uploads (a release's assets). */
export async function forgeRequest(access: ForgeAccess, base: string, url: string, init: RequestInit, timeoutMs = FORGE_TIMEOUT_MS): Promise<Response> {
  const target = URL.parse(url);
  const origin = originOf(base);
  if (target === null || origin === null || target.origin !== origin)
    throw new ForgeApiError(`refusing to contact a URL that is not the configured host ${hostOf(base)}`, null);
  const refusal = await hostRefusal(target.hostname, access.allowLinkLocal);
  if (refusal) throw new ForgeApiError(`refusing to contact ${hostOf(base)}: it is ${refusal} (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL)`, null);
  const limitKey = access.limits ? rateLimitKey(origin, init.headers) : "";
  const waitUntil = access.limits?.get(limitKey);
  if (waitUntil !== undefined) {
    if (waitUntil > access.now())
      throw new ForgeApiError(`${hostOf(base)} asked to wait (rate limited) until ${new Date(waitUntil * 1000).toISOString()}`, 429, waitUntil);
    access.limits!.delete(limitKey);
  }
  let response: Response;
  try {
    const timeout = AbortSignal.timeout(timeoutMs);
    response = await access.fetch(url, { ...init, redirect: "manual", signal: access.signal ? AbortSignal.any([timeout, access.signal]) : timeout });
  } catch (error) {
    if (access.signal?.aborted) throw new ForgeApiError(`stopped before ${hostOf(base)} answered: ${stopReason(access.signal)}`, null);
    const timedOut = (error as Error).name === "TimeoutError" || (error as Error).name === "AbortError";
    throw new ForgeApiError(`cannot reach ${hostOf(base)}: ${timedOut ? `no answer within ${Math.round(timeoutMs / 1000)} s` : "the connection failed"}`, null);
  }
  const retryAt = rateLimitedUntil(response, access.now());
  if (retryAt !== null) access.limits?.set(limitKey, retryAt);
  if (!response.ok) {
    // Only the status reaches users: the host's own body may be anything (an internal service's
    // page, a token echoed back), so it is read and dropped, never passed on.
    await response.body?.cancel().catch(() => {});
    throw new ForgeApiError(`${hostOf(base)} answered HTTP ${response.status}${statusMeaning(response.status)}`, response.status, retryAt);
  }
  return response;
}

/**
 * The REST calls every forge client makes, bound to its API origin and its headers (which carry its
 * credentials): refusals and host errors are forgeRequest's; a 404 is an answer only where it
 * means "there is no such thing".
 */
export interface ForgeApi {
  /** GET `url`: the answer, unread. */
  get(url: string): Promise<Response>;
  /** A request with a JSON body (none when `body` is undefined): the answer, unread. */
  send(method: string, url: string, body?: unknown): Promise<Response>;
  /** A JSON request, its status and answer (null for 204); a 404 is answered (body null) when `orNull`, else thrown. */
  call<T>(method: string, url: string, body?: unknown, orNull?: boolean): Promise<{ status: number; body: T | null }>;
  /** A file's text, or null when the host answers 404 (no such file at that ref); `accept` where the host serves raw files by media type. */
  fileText(url: string, accept?: string): Promise<string | null>;
}

export function forgeApi(access: ForgeAccess, base: string, headers: Record<string, string>): ForgeApi {
  const request = (method: string, url: string, body?: unknown, accept?: string): Promise<Response> =>
    forgeRequest(access, base, url, {
      method,
      headers: { ...headers, ...(accept ? { accept } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return {
    get: (url) => request("GET", url),
    send: (method, url, body) => request(method, url, body),
    async call<T>(method: string, url: string, body?: unknown, orNull = false) {
      const answer = async () => {
        const response = await request(method, url, body);
        return { status: response.status, body: response.status === 204 ? null : ((await response.json()) as T) };
      };
      return orNull ? notFoundAs(answer, { status: 404, body: null }) : answer();
    },
    fileText: (url, accept) => notFoundAs(async () => (await request("GET", url, undefined, accept)).text(), null),
  };
}

/** `attempt`'s result, or `answer` when the host said 404. */
async function notFoundAs<T>(attempt: () => Promise<T>, answer: T): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (error instanceof ForgeApiError && error.status === 404) return answer;
    throw error;
  }
}

/**
 * Every item of a paged list, MAX_PAGES pages at the most: `readPage` reads the page a cursor
 * names (its URL, or GitLab's page number) and names the next one, null after the last.
 */
export async function collectPages<T>(first: string, readPage: (cursor: string) => Promise<{ items: T[]; next: string | null }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = first;
  for (let page = 0; cursor && page < MAX_PAGES; page++) {
    const { items, next } = await readPage(cursor);
    out.push(...items);
    cursor = next;
  }
  return out;
}

/**
 * When a host's answer says the next request with the same credentials must wait: Retry-After
 * (seconds or an HTTP date, RFC 9110 section 10.2.3) on any answer, or no requests remaining and
 * when they reset (GitHub's x-ratelimit-remaining/-reset, GitLab's RateLimit-Remaining/-Reset, in
 * epoch seconds). Null when it says nothing of the kind.
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
 */
export function rateLimitedUntil(response: Response, now: number): number | null {
  const retryAfter = response.headers.get("retry-after")?.trim();
  if (retryAfter) {
    if (/^\d{1,9}$/.test(retryAfter)) return now + Number(retryAfter);
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(now, Math.ceil(at / 1000));
  }
  const remaining = response.headers.get("x-ratelimit-remaining") ?? response.headers.get("ratelimit-remaining");
  const reset = response.headers.get("x-ratelimit-reset") ?? response.headers.get("ratelimit-reset");
  if (remaining !== null && Number(remaining) <= 0 && reset && /^\d{1,12}$/.test(reset.trim())) {
    const at = Number(reset.trim());
    if (at > now) return at;
  }
  return null;
}

/** Rate limits count per credential: the origin and a digest of the headers that carry one. */
function rateLimitKey(origin: string, headers: RequestInit["headers"]): string {
  const credential = `${headerOf(headers, "authorization") ?? ""}\n${headerOf(headers, "private-token") ?? ""}`;
  let digest = credentialDigests.get(credential);
  if (digest === undefined) {
    digest = createHash("sha256").update(credential).digest("base64url").slice(0, 22);
    if (credentialDigests.size >= MAX_CREDENTIAL_DIGESTS) credentialDigests.clear();
    credentialDigests.set(credential, digest);
  }
  return `${origin} ${digest}`;
}

/** The digests of the credentials in use (a token serves an hour of requests), each taken once. */
const credentialDigests = new Map<string, string>();
const MAX_CREDENTIAL_DIGESTS = 256;

/** A header of a request's init, by its lower-case name: the clients pass plain objects, read without building a Headers. */
function headerOf(headers: RequestInit["headers"], name: string): string | null {
  if (headers === undefined) return null;
  if (headers instanceof Headers || Array.isArray(headers)) return new Headers(headers).get(name);
  for (const key in headers) if (key.toLowerCase() === name) return (headers as Record<string, string>)[key]!;
  return null;
}

function hostOf(base: string): string {
  return URL.parse(base)?.host ?? "the configured host";
}

/** A short, fixed explanation of a host's refusal (RFC 9110 section 15). */
function statusMeaning(status: number): string {
  if (status >= 300 && status < 400) return " (a redirect, which Roost does not follow: check the API URL)";
  if (status === 401) return " (the credentials were refused)";
  if (status === 403) return " (the credentials lack access)";
  if (status === 404) return " (not found: check the API URL and the repository)";
  if (status === 429) return " (rate limited: try again later)";
  if (status >= 500) return " (the host had an error)";
  return "";
}

/** The rel="next" URL of an RFC 8288 Link header, if any. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m) return m[1]!;
  }
  return null;
}
