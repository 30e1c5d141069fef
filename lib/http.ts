// Reading requests and writing responses: the only place that knows how a body is parsed
// and how an error is rendered (docs/api.md "Errors").
import { z } from "zod";
import { ApiError, fail, type ErrorDetail } from "./errors.ts";

/** Default cap for JSON request bodies; routes may lower or raise it (documented in docs/api.md). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

export function renderError(error: ApiError, requestId?: string): Response {
  const body: { code: string; message: string; details?: ErrorDetail[] } = { code: error.code, message: error.message };
  if (error.details) body.details = error.details;
  const headers: Record<string, string> = { ...error.headers };
  if (requestId) headers["x-request-id"] = requestId;
  return json(body, error.status, headers);
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
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
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
    fail("unsupported_media_type", "The request body must be JSON (Content-Type: application/json).");
  }
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) fail("malformed_json", "The request body is empty; send a JSON object.");
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    fail("malformed_json", "The request body is not valid JSON.");
  }
}

/** Validates `value` with `schema`, answering 400 invalid_request with one detail per issue. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
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
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : "";
}
