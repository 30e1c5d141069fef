// Outbound requests to a source host. Only the integration's configured API origin is ever
// contacted: pagination links that point anywhere else are refused, and no URL from a webhook
// payload is fetched (GitLab CVE-2021-22214 was SSRF through such URLs). Link-local and cloud
// metadata addresses are refused (lib/address-policy.ts). What users see of a failure is a status and
// a fixed phrase, never the host's body.
import { hostRefusal } from "../address-policy.ts";

export class ForgeApiError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** How one app reaches source hosts, from its context (lib/integrations/index.ts forgeAccess). */
export interface ForgeAccess {
  fetch: FetchLike;
  /** ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: link-local and metadata addresses are reachable. */
  allowLinkLocal: boolean;
  /** Unix epoch seconds. */
  now(): number;
  /** This app's short-lived host credentials until near their expiry: GitHub installation and clone tokens and App JWTs (lib/forges/github/api.ts). */
  tokens: Map<string, { token: string; expiresAt: number }>;
}

export const HOST_TIMEOUT_MS = 10_000;
/** Catalogue sync stops after this many pages (10,000 repositories at 100 a page). */
export const MAX_PAGES = 100;

export function sameOrigin(base: string, url: string): boolean {
  try {
    return new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

export async function forgeRequest(access: ForgeAccess, base: string, url: string, init: RequestInit): Promise<Response> {
  if (!sameOrigin(base, url)) throw new ForgeApiError(`refusing to contact a URL that is not the configured host ${hostOf(base)}`, null);
  const refusal = await hostRefusal(new URL(url).hostname, access.allowLinkLocal);
  if (refusal) throw new ForgeApiError(`refusing to contact ${hostOf(base)}: it is ${refusal} (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL)`, null);
  let response: Response;
  try {
    response = await access.fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(HOST_TIMEOUT_MS) });
  } catch (error) {
    const timedOut = (error as Error).name === "TimeoutError" || (error as Error).name === "AbortError";
    throw new ForgeApiError(`cannot reach ${hostOf(base)}: ${timedOut ? `no answer within ${HOST_TIMEOUT_MS / 1000} s` : "the connection failed"}`, null);
  }
  if (!response.ok) {
    // Only the status reaches users: the host's own body may be anything (an internal service's
    // page, a token echoed back), so it is read and dropped, never passed on.
    await response.body?.cancel().catch(() => {});
    throw new ForgeApiError(`${hostOf(base)} answered HTTP ${response.status}${statusMeaning(response.status)}`, response.status);
  }
  return response;
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
