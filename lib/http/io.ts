// Reading requests and writing responses: the only place that knows how a body is parsed
// and how an error is rendered (docs/api.md "Errors").
import { z } from "zod";
import { ApiError, fail, type ErrorDetail } from "./errors.ts";
import { bearerChallenge } from "../auth/credential-kind.ts";
import { readableIssue } from "./validation-messages.ts";

/** Default cap for JSON request bodies; routes may lower or raise it (documented in docs/api.md). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The text of each Response json() made, so the listener writes it at once instead of reading the
 * body back from the Response (a turn of the event loop and a copy per answer: lib/http/listener.ts).
 */
const wholeBodies = new WeakMap<Response, string>();

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = JSON.stringify(body) ?? "";
  // The length lets the listener send the answer whole (lib/http/listener.ts); a streamed body has none.
  const response = new Response(text, {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)), ...headers },
  });
  wholeBodies.set(response, text);
  return response;
}

/** The body json() gave `response`, while nothing has read it; null for any other Response. */
export function wholeBodyOf(response: Response): string | null {
  return response.bodyUsed ? null : (wholeBodies.get(response) ?? null);
}

/**
 * The WWW-Authenticate challenge a 401 must carry (RFC 9110 section 15.5.2): Bearer for every
 * token-protected endpoint (RFC 6750 section 3), and for the receivers and the trusted-proxy login,
 * which take no bearer token, a scheme named after what they do take.
 */
function challengeFor(error: ApiError): string {
  if (error.code === "webhook_signature_missing" || error.code === "webhook_signature_invalid")
    return 'HMAC-SHA256 realm="roost", header="X-Hub-Signature-256"';
  if (error.code === "webhook_token_missing" || error.code === "webhook_token_invalid") return 'Token realm="roost", header="X-Gitlab-Token"';
  if (error.code.startsWith("trusted_proxy_")) return 'Trusted-Proxy realm="roost"';
  return bearerChallenge(error.code === "missing_auth" ? undefined : error.message);
}

export function renderError(error: ApiError, requestId?: string): Response {
  const body: { code: string; message: string; details?: ErrorDetail[] } = { code: error.code, message: error.message };
  if (error.details) body.details = error.details;
  const headers: Record<string, string> = { ...error.headers };
  if (error.status === 401 && !Object.keys(headers).some((h) => h.toLowerCase() === "www-authenticate")) headers["www-authenticate"] = challengeFor(error);
  if (requestId) headers["x-request-id"] = requestId;
  return json(body, error.status, headers);
}

/**
 * A body the listener bounds in time (lib/http/listener.ts), by the Request Bun.serve made for it:
 * read whole, natively, or as a stream that keeps the bound. That Request's own `body` would be
 * read without the bound, so a body is read through readBodyBytes or requestBody.
 */
export interface ListenedBody {
  /** The whole body (of a declared length, which the caller checked against its limit). */
  bytes(): Promise<Uint8Array>;
  readonly stream: ReadableStream<Uint8Array>;
}

const listenedBodies = new WeakMap<Request, ListenedBody>();

/** `request`, whose body is read through `body`. */
export function withListenedBody(request: Request, body: ListenedBody): Request {
  listenedBodies.set(request, body);
  return request;
}

/** The request's body as a stream (an upload a handler streams to its store): the listener's bounded one, where it bounds it. */
export function requestBody(request: Request): ReadableStream<Uint8Array> | null {
  return listenedBodies.get(request)?.stream ?? request.body;
}

/**
 * Reads the raw body, refusing more than `limit` bytes. Content-Length is checked first so an
 * honest oversized upload is refused before any of it is buffered; a chunked body is counted as
 * it streams and abandoned as soon as it passes the limit.
 */
export async function readBodyBytes(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) {
    fail("payload_too_large", `The request body is larger than the limit of ${limit} bytes.`);
  }
  const listened = listenedBodies.get(request);
  // Of a declared length within the limit, the listener's body is read whole, natively; a chunked one as it streams.
  if (listened && declared !== null && !request.headers.has("transfer-encoding")) return listened.bytes();
  const stream = listened?.stream ?? request.body;
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      fail("payload_too_large", `The request body is larger than the limit of ${limit} bytes.`);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

export function isJsonContentType(value: string | null): boolean {
  if (!value) return false;
  const mediaType = value.split(";")[0]!.trim().toLowerCase();
  return mediaType === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

/** Parses a JSON body: 415 for another media type, 413 over the limit, 400 for bad JSON. */
export async function readJson(request: Request, limit = DEFAULT_BODY_LIMIT_BYTES): Promise<unknown> {
  if (!isJsonContentType(request.headers.get("content-type"))) {
    fail("unsupported_media_type");
  }
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) fail("malformed_json", "The request body is empty; send a JSON object.");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    fail("malformed_json");
  }
  if (nestingExceeds(text, MAX_JSON_DEPTH)) {
    fail("invalid_request", `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    fail("malformed_json");
  }
  // The text was decoded as strict UTF-8, so a lone surrogate can only come from a \uD800–\uDFFF
  // escape: without one, no string needs walking (most bodies, and every log batch).
  const illFormed = SURROGATE_ESCAPE.test(text) ? illFormedStringPath(value) : null;
  if (illFormed !== null) {
    const path = ["body", ...illFormed].join(".");
    const message = "must be valid Unicode text (a lone UTF-16 surrogate such as \\ud800 is not a character)";
    fail("invalid_request", `The body is not valid: ${path}: ${message}`, { details: [{ path, message }] });
  }
  return value;
}

/**
 * Deepest nesting of arrays and objects accepted in any JSON body, checked on the text before
 * parsing, so a body nested 50,000 deep costs one linear scan instead of a parse and a stack
 * overflow in whatever walks it next. Routes bound their free-form fields further (lib/schemas/shared.ts).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `[` and `{` outside strings nest deeper than `max` anywhere in `text`. A string is
 * skipped with indexOf to its closing quote (one not escaped by an odd run of backslashes), not
 * walked a character at a time: most of a body's bytes are inside strings (a log batch's lines),
 * and this scan runs on every JSON body.
 */
export function nestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escapedAt(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return false; // an unterminated string: JSON.parse refuses the body
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether the character at `at` is escaped: preceded by an odd number of backslashes. */
function escapedAt(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Matches a lone surrogate only: with the u flag a proper surrogate pair is one code point, so
 * this is the negation of String.prototype.isWellFormed (ES2024).
 */
const LONE_SURROGATE = /\p{Cs}/u;

/** A JSON escape of a UTF-16 surrogate (RFC 8259 section 7), paired or not. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * The path to the first string (value or key) that is not well-formed UTF-16, or null. JSON text
 * can carry a lone surrogate as an escape ("\ud800"); stored as TEXT it would silently become
 * U+FFFD, so such a body is refused whatever the route (RFC 8259 section 8.2 calls the behaviour
 * of such strings unpredictable). Iterative; the depth is already bounded by MAX_JSON_DEPTH.
 */
function illFormedStringPath(value: unknown): string[] | null {
  const stack: Array<[unknown, string[]]> = [[value, []]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === "string") {
      if (LONE_SURROGATE.test(current)) return path;
    } else if (current !== null && typeof current === "object") {
      for (const [key, child] of Object.entries(current)) {
        if (LONE_SURROGATE.test(key)) return [...path, key];
        stack.push([child, [...path, key]]);
      }
    }
  }
  return null;
}

/** Validates `value` with `schema`, answering 400 invalid_request with one detail per issue, each a sentence for people. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value, { error: readableIssue });
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({
    path: [where, ...issue.path.map(String)].join("."),
    message: issue.message,
  }));
  fail("invalid_request", `The ${where} is not valid: ${details[0]?.path}: ${details[0]?.message}`, { details });
}

/** The bearer credential of a request, or null when there is no Authorization header. */
export function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = BEARER.exec(header);
  return match ? match[1]! : "";
}

/** RFC 6750 section 2.1 (the scheme case-insensitive, RFC 9110 section 11.1); one RegExp, not one a request. */
const BEARER = /^Bearer[ ]+(\S+)\s*$/i;
