// An S3-compatible bucket as the object store, through Bun's built-in S3 client
// (https://bun.com/docs/runtime/s3): requests signed with AWS Signature Version 4, multipart
// uploads for large objects, presigned URLs. Every failure the bucket reports becomes 502
// object_store_error with a sentence an operator can act on; the credentials are never logged.
import { ApiError } from "../http/errors.ts";
import type { ObjectStoreConfig } from "../daemon/config.ts";
import { displayObjectStore } from "../daemon/config.ts";
import type { Logger } from "../daemon/log.ts";
import type { ObjectStore } from "./store.ts";
import { eachChunk } from "./chunks.ts";

type S3Config = Extract<ObjectStoreConfig, { kind: "s3" }>;

/** Parts of a multipart upload: S3's smallest (5 MiB) would need 400 parts for a 2 GiB artifact; 16 MiB keeps it near 128. */
const PART_BYTES = 16 * 1024 * 1024;

/** The codes with which S3 (and its imitations) refuse a request's signature or key. */
const CREDENTIAL_CODES = new Set([
  "SignatureDoesNotMatch",
  "InvalidAccessKeyId",
  "AccessDenied",
  "InvalidToken",
  "ExpiredToken",
  "AuthorizationHeaderMalformed",
]);

export function openS3Store(config: S3Config, log: Logger): ObjectStore {
  const client = new Bun.S3Client({
    bucket: config.bucket,
    endpoint: config.endpoint,
    region: config.region,
    virtualHostedStyle: config.virtualHostedStyle,
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    sessionToken: config.sessionToken,
  });
  const where = displayObjectStore(config);
  const name = (key: string) => config.prefix + key;

  /** The bucket's refusal as an ApiError, logged once with its code (the request's line in the log carries only the status). */
  function refused(error: unknown, action: string, key: string): ApiError {
    if (error instanceof ApiError) return error;
    const code = String((error as { code?: unknown })?.code ?? "UnknownError");
    log.error("object store request failed", { store: where, action, key: name(key), code, error: String((error as Error)?.message ?? error) });
    const message = CREDENTIAL_CODES.has(code)
      ? `The object store ${where} refused Roost's credentials (${code}) while it tried to ${action}: check ROOST_S3_ACCESS_KEY_ID and ROOST_S3_SECRET_ACCESS_KEY.`
      : code === "NoSuchBucket"
        ? `The bucket of the object store ${where} does not exist; create it, or correct ROOST_OBJECT_STORE.`
        : /^(Connection|Unable|Timeout|Timed|FailedToOpenSocket)/.test(code)
          ? `The object store ${where} could not be reached (${code}) while Roost tried to ${action}; check ROOST_OBJECT_STORE's endpoint.`
          : `The object store ${where} failed to ${action} (${code}).`;
    return new ApiError("object_store_error", message);
  }
  const isMissing = (error: unknown) => (error as { code?: unknown })?.code === "NoSuchKey";

  return {
    kind: "s3",
    async put(key, body, o) {
      const writer = client.file(name(key)).writer({ partSize: PART_BYTES, retry: 3 });
      let bucketFailed = false;
      const toBucket = async <T>(step: () => T | Promise<T>): Promise<T> => {
        try {
          return await step();
        } catch (error) {
          bucketFailed = true;
          throw refused(error, "store an object", key);
        }
      };
      let written: { size: number; sha256: string };
      try {
        written = await eachChunk(body, o, (chunk) => toBucket(() => writer.write(chunk)).then(() => {}));
      } catch (error) {
        // Bun's writer completes what was written even when ended with an error (an object of the
        // bytes so far), so the object is deleted: a put that fails leaves no object at `key`, not
        // even one that was there before. (The log archive never starts a put it might cut short:
        // lib/logs/archive.ts.)
        if (!bucketFailed) await Promise.resolve(writer.end(error as Error)).catch(() => {});
        await client.delete(name(key)).catch(() => {});
        throw error;
      }
      await toBucket(() => writer.end());
      try {
        o.verify?.(written);
      } catch (error) {
        await client.delete(name(key)).catch(() => {});
        throw error;
      }
      return written;
    },
    async get(key) {
      // The first chunk is read here, so a missing object or a refusal is an answer of its own,
      // not a 200 whose body breaks off.
      const reader = client.file(name(key)).stream().getReader();
      let first: Awaited<ReturnType<typeof reader.read>>;
      try {
        first = await reader.read();
      } catch (error) {
        if (isMissing(error)) return null;
        throw refused(error, "read an object", key);
      }
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (first.done) controller.close();
          else controller.enqueue(first.value);
        },
        async pull(controller) {
          const next = await reader.read();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
    },
    async bytes(key) {
      try {
        return await client.file(name(key)).bytes();
      } catch (error) {
        if (isMissing(error)) return null;
        throw refused(error, "read an object", key);
      }
    },
    presign(key, o) {
      if (config.presignSeconds === 0) return null;
      return client.presign(name(key), {
        expiresIn: config.presignSeconds,
        method: "GET",
        // Sent back by the bucket as the download's Content-Disposition (response-content-disposition).
        contentDisposition: `attachment; filename="${o.filename}"`,
      });
    },
    async delete(key) {
      try {
        await client.delete(name(key));
      } catch (error) {
        if (!isMissing(error)) throw refused(error, "delete an object", key);
      }
    },
    async list({ prefix, after, limit }) {
      // ListObjectsV2 from a key (start-after), not a continuation token: the cursor is a key,
      // which a later pass, or another daemon, can carry on from.
      let page: Awaited<ReturnType<typeof client.list>>;
      try {
        page = await client.list({ prefix: name(prefix), startAfter: after === undefined ? undefined : name(after), maxKeys: limit });
      } catch (error) {
        throw refused(error, "list objects", prefix);
      }
      const objects = (page.contents ?? []).map((o) => ({
        key: o.key.slice(config.prefix.length),
        size: o.size ?? 0,
        modifiedAt: Date.parse(o.lastModified ?? "") / 1000,
      }));
      return { objects, next: page.isTruncated && objects.length > 0 ? objects.at(-1)!.key : null };
    },
  };
}
