// The pipeline file at a commit never changes, so it is read from the host once per (repository,
// path, commit), and the same text (most commits leave roost.yaml alone) is parsed once; both are
// kept in bounded least-recently-used caches, and deliveries that ask for the same file at the same
// time share one read (docs/pipelines.md, "Where it is read"). A push whose payload shows that
// none of its commits touched the file takes what is kept for the branch's previous head
// (lib/pipelines/source.ts unchangedSince). What a host could not answer is not kept: the next
// delivery asks again.
import { createHash } from "node:crypto";
import { parsePipelineFile, type FilePipelineOutput, type FileProblem } from "./file.ts";

/** What the file at one commit holds, parsed. */
export type FileContent =
  | { status: "missing" }
  | { status: "valid"; pipelines: Map<string, FilePipelineOutput>; lines: Map<string, number> }
  | { status: "invalid"; problems: FileProblem[] };

/** Each cache keeps at most this many files, and at most this many bytes of their text. */
export const FILE_CACHE_ENTRIES = 1000;
export const FILE_CACHE_BYTES = 16 * 1024 * 1024;

/** A Map used as a least-recently-used cache, bounded by entries and by the bytes each entry is charged. */
class Lru<V> {
  readonly #entries = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    // Most recently used last: a Map iterates in insertion order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  /** The value kept for `key`, without counting it as used. */
  peek(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /** Charges a kept entry its size once it is known (a read in flight is charged nothing yet). */
  charge(key: string, value: V, bytes: number): void {
    if (this.peek(key) === value) this.set(key, value, bytes);
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}

export class PipelineFileCache {
  readonly #files: Lru<Promise<FileContent>>;
  readonly #parsed: Lru<FileContent>;
  /** Reads from the host, parses, and files known from an earlier commit since start, for tests and the bench. */
  reads = 0;
  parses = 0;
  reused = 0;

  constructor(maxEntries = FILE_CACHE_ENTRIES, maxBytes = FILE_CACHE_BYTES) {
    this.#files = new Lru(maxEntries, maxBytes);
    this.#parsed = new Lru(maxEntries, maxBytes);
  }

  /**
   * The file's content at one commit (`key` names the repository, path and commit); `read` asks
   * the host for its text (null: no such file there) only when nothing is kept or in flight.
   * `sameAs` names the same path at another commit known to hold the same file (a push that did
   * not touch it: its branch's previous head); what is kept or in flight for that one is used.
   */
  get(key: string, read: () => Promise<string | null>, sameAs?: string): Promise<FileContent> {
    const kept = this.#files.get(key);
    if (kept) return kept;
    const earlier = sameAs === undefined ? undefined : this.#files.get(sameAs);
    if (earlier) {
      this.reused++;
      // A read in flight that fails is forgotten under both keys: the next delivery asks the host.
      const content = earlier.catch((error: unknown) => {
        if (this.#files.peek(key) === content) this.#files.delete(key);
        throw error;
      });
      this.#files.set(key, content, 0);
      return content;
    }
    this.reads++;
    const content = read().then(
      (text) => {
        const parsed = text === null ? ({ status: "missing" } as const) : this.parse(text);
        this.#files.charge(key, content, text?.length ?? 0);
        return parsed;
      },
      (error: unknown) => {
        if (this.#files.peek(key) === content) this.#files.delete(key);
        throw error;
      },
    );
    this.#files.set(key, content, 0);
    return content;
  }

  /** The parsed file for this text, parsed once per distinct text (by its SHA-256). */
  parse(text: string): FileContent {
    const digest = createHash("sha256").update(text).digest("base64url");
    const kept = this.#parsed.get(digest);
    if (kept) return kept;
    this.parses++;
    const parsed = parsePipelineFile(text);
    const content: FileContent = parsed.ok
      ? { status: "valid", pipelines: parsed.pipelines, lines: parsed.lines }
      : { status: "invalid", problems: parsed.problems };
    this.#parsed.set(digest, content, text.length);
    return content;
  }
}

// One cache per app (daemon, or test app), kept beside its secret box as the forge tokens are
// (lib/forges/http.ts), so two apps in one process never share what they read.
const caches = new WeakMap<object, PipelineFileCache>();
export function pipelineFileCacheOf(owner: object): PipelineFileCache {
  let cache = caches.get(owner);
  if (!cache) caches.set(owner, (cache = new PipelineFileCache()));
  return cache;
}
