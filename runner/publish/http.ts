// The store clients' HTTP: one request, logged (method, path, status, never a body or a header),
// with a timeout, its JSON answer read; an answer that is not 2xx becomes a StoreRefusal with the
// store's own message, which the client turns into a sentence (a version code already used, a
// package not found, a permission missing).
import type { PublishContext } from "./context.ts";

export class StoreRefusal extends Error {
  constructor(
    readonly status: number,
    /** The store's own message, as it said it. */
    readonly storeMessage: string,
    /** Its machine-readable reason when it gives one (Google's errors[].reason or status, Apple's errors[].code). */
    readonly reason: string,
    readonly body: unknown,
  ) {
    super(`${status} ${reason ? `${reason}: ` : ""}${storeMessage}`);
  }
}

export interface StoreRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | null;
  /** Milliseconds; uploads get longer. */
  timeoutMs?: number;
  /** What the log calls the request, instead of its path. */
  label?: string;
}

/** Reads the message and reason of a Google (error.message, error.errors[0].reason / error.status) or Apple (errors[0].detail, code) error body. */
export function storeErrorOf(body: unknown, fallback: string): { message: string; reason: string } {
  const google = (body as { error?: { message?: string; status?: string; errors?: { reason?: string }[] } | string; error_description?: string } | null)?.error;
  if (typeof google === "string") return { message: (body as { error_description?: string }).error_description ?? google, reason: google };
  if (google && typeof google === "object") return { message: google.message ?? fallback, reason: google.errors?.[0]?.reason ?? google.status ?? "" };
  const apple = (body as { errors?: { detail?: string; title?: string; code?: string }[] } | null)?.errors?.[0];
  if (apple) return { message: apple.detail ?? apple.title ?? fallback, reason: apple.code ?? "" };
  return { message: fallback, reason: "" };
}

export async function storeRequest<T>(ctx: PublishContext, store: string, url: string, init: StoreRequest = {}): Promise<T> {
  const method = init.method ?? "GET";
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(init.timeoutMs ?? 60_000)]);
  let response: Response;
  try {
    response = await fetch(url, { method, headers: init.headers, body: init.body ?? null, signal });
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    throw new StoreRefusal(0, `${store} could not be reached: ${(error as Error).message}`, "unreachable", null);
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  ctx.log(`[${store}] ${method} ${init.label ?? new URL(url).pathname} → ${response.status}`);
  if (!response.ok) {
    const { message, reason } = storeErrorOf(body, text.slice(0, 300) || response.statusText);
    throw new StoreRefusal(response.status, message, reason, body);
  }
  return body as T;
}
