// Every call to the API goes through here. The session travels as the HttpOnly cookie the sign-in
// routes set (the app never sees the token); every request carries X-Roost-CSRF: 1, which the
// daemon requires of cookie-authenticated writes (docs/web-app.md "Security").
import { signal } from "@preact/signals";

export interface FieldError {
  path: string;
  message: string;
}

/** An error answer of the API: {code, message} and, for validation, details per field. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldError[] = [],
  ) {
    super(message);
  }

  /** The message for one field (by the last part of its path: "body.email" → "email"), if any. */
  forField(name: string): string | undefined {
    return this.details.find((d) => d.path.split(".").includes(name))?.message;
  }

  /** Places an error that has no details next to a field, by its code (e.g. invalid_setup_token → the token field). */
  placed(byCode: Record<string, string>): ApiFailure {
    const field = byCode[this.code];
    if (this.details.length > 0 || !field) return this;
    return new ApiFailure(this.status, this.code, this.message, [{ path: field, message: this.message }]);
  }
}

/** Set when a request found the session gone: the app then shows sign-in and comes back afterwards. */
export const sessionExpired = signal(false);

export interface CallOptions {
  body?: unknown;
  /** A bearer credential for this call only (the setup token during first-run setup). */
  bearer?: string;
  /** Do not treat 401 as an expired session (sign-in and setup calls). */
  quiet401?: boolean;
}

export async function api<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", "x-roost-csrf": "1" };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  let response: Response;
  try {
    response = await fetch(path, { method, headers, credentials: "same-origin", body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  } catch {
    throw new ApiFailure(0, "network_error", "Roost did not answer; check the connection and try again.");
  }
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed ?? {}) as { code?: string; message?: string; details?: FieldError[] };
    const failure = new ApiFailure(
      response.status,
      error.code ?? "http_" + response.status,
      error.message ?? `The request failed (HTTP ${response.status}).`,
      error.details ?? [],
    );
    if (response.status === 401 && !options.quiet401 && (failure.code === "invalid_session" || failure.code === "missing_auth")) sessionExpired.value = true;
    throw failure;
  }
  return parsed as T;
}

export const get = <T>(path: string) => api<T>("GET", path);
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, { body });
export const put = <T>(path: string, body?: unknown) => api<T>("PUT", path, { body });
export const patch = <T>(path: string, body?: unknown) => api<T>("PATCH", path, { body });
export const del = <T>(path: string) => api<T>("DELETE", path);

/** A query string of the defined values. */
export function query(values: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  const text = params.toString();
  return text ? "?" + text : "";
}
