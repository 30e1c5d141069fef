// Outbound requests to a source host. Only the integration's configured API origin is ever
// contacted: pagination links that point anywhere else are refused, and no URL from a webhook
// payload is fetched (GitLab CVE-2021-22214 was SSRF through such URLs).
export class HostApiError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

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

export async function hostRequest(fetchImpl: FetchLike, base: string, url: string, init: RequestInit): Promise<Response> {
  if (!sameOrigin(base, url)) throw new HostApiError(`refusing to contact ${url}: not the configured host ${base}`, null);
  let response: Response;
  try {
    response = await fetchImpl(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(HOST_TIMEOUT_MS) });
  } catch (error) {
    throw new HostApiError(`cannot reach ${new URL(base).host}: ${(error as Error).message}`, null);
  }
  if (!response.ok) {
    const text = await response.text().catch(() => "");
    let detail = text.slice(0, 200);
    try {
      detail = (JSON.parse(text) as { message?: string }).message ?? detail;
    } catch {
      // not JSON
    }
    throw new HostApiError(`${new URL(base).host} answered ${response.status}: ${detail}`, response.status);
  }
  return response;
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
