// The object store port (docs/operations.md "Object storage"): where artifacts and finished build
// logs are kept, by key ("artifacts/<build_id>/<artifact_id>", "logs/<build_id>.jsonl.gz"). Two
// drivers: the data directory (the default, one host) and any S3-compatible bucket (AWS S3,
// Cloudflare R2, MinIO, Garage), which every daemon of an instance reads and writes, so any of
// them serves any artifact or log.
import type { ObjectStoreConfig } from "../daemon/config.ts";
import type { Logger } from "../daemon/log.ts";
import { openDiskStore } from "./disk.ts";
import { openS3Store } from "./s3.ts";

export interface PutOptions {
  /** Bytes past this fail the write with 413 payload_too_large and `tooLarge` as its message. */
  maxBytes: number;
  tooLarge: string;
  /**
   * Called with what arrived once every byte is written, before the object counts as stored:
   * throwing here (a checksum mismatch) leaves no object behind.
   */
  verify?(written: { size: number; sha256: string }): void;
}

/** An object as a listing names it. */
export interface StoredObject {
  key: string;
  size: number;
  /** When it was last written, in seconds since the epoch. */
  modifiedAt: number;
}

export interface ObjectStore {
  kind: ObjectStoreConfig["kind"];
  /**
   * Streams `body` to `key`, counting and hashing it (never more than one chunk in memory). Once
   * it resolves the object is durable (fsynced, or acknowledged by the bucket) and verified; when
   * it throws, nothing is left under `key`.
   */
  put(key: string, body: ReadableStream<Uint8Array> | Uint8Array | null, o: PutOptions): Promise<{ size: number; sha256: string }>;
  /** The object's bytes as a stream, or null when there is no such object (of `size` bytes, when given). */
  get(key: string, size?: number): Promise<ReadableStream<Uint8Array> | Blob | null>;
  /** The whole object (a compressed log), or null when there is none. */
  bytes(key: string): Promise<Uint8Array | null>;
  /** A URL a client may fetch the object from directly for a while, or null when downloads go through the daemon. */
  presign(key: string, o: { filename: string }): string | null;
  /** Removes the object; removing one that is not there is no error. */
  delete(key: string): Promise<void>;
  /**
   * Up to `limit` objects whose keys start with `prefix` (ending in "/"), in key order, after the
   * key `after`; `next` is the last key listed when more may follow, null at the end.
   */
  list(o: { prefix: string; after: string | undefined; limit: number }): Promise<{ objects: StoredObject[]; next: string | null }>;
}

export function openObjectStore(config: ObjectStoreConfig, dataDir: string, log: Logger): ObjectStore {
  return config.kind === "s3" ? openS3Store(config, log) : openDiskStore(dataDir);
}

export function artifactKey(buildId: string, artifactId: string): string {
  return `artifacts/${buildId}/${artifactId}`;
}
