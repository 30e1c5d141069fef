// A PublishContext for calling a store client directly (runner/publish/context.ts), as
// run-publish.ts makes one: the files written to a private directory, secrets by name, and the
// log kept in memory, masked with runner/masking.ts as the runner masks it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { maskLine, maskNeedles } from "../../../runner/masking.ts";
import { normalizePublisher, PublisherInput } from "../../../lib/publishing/publishers.ts";
import { PublishFailure, type LocalArtifact, type PublishContext } from "../../../runner/publish/context.ts";
import { STORE_ENDPOINTS, type PublishEndpoints } from "../../../runner/publish/endpoints.ts";

export interface TestPublish {
  ctx: PublishContext;
  lines: string[];
  cleanup(): void;
}

export interface PublishOptions {
  publisher: Record<string, unknown>;
  files: Record<string, Uint8Array | string>;
  secrets?: Record<string, string>;
  notes?: Record<string, string>;
  endpoints?: Partial<PublishEndpoints>;
}

/** Runs a store client on a fresh context and removes its directory after: its answer (or the error it threw) and the lines it logged. */
export async function runPublish<T>(client: (ctx: PublishContext) => Promise<T>, options: PublishOptions): Promise<{ answer: T | Error; lines: string[] }> {
  const t = publishContext(options);
  try {
    return { answer: await client(t.ctx).catch((e: Error) => e), lines: t.lines };
  } finally {
    t.cleanup();
  }
}

export function publishContext(options: PublishOptions): TestPublish {
  const dir = mkdtempSync(join(tmpdir(), "roost-publish-test-"));
  const lines: string[] = [];
  const needles: string[] = [];
  const mask = (value: string) => {
    needles.push(...maskNeedles([value]));
    needles.sort((a, b) => b.length - a.length);
  };
  for (const v of Object.values(options.secrets ?? {})) mask(v);
  const artifacts: LocalArtifact[] = Object.entries(options.files).map(([path, content], i) => {
    const file = join(dir, `a${i}-${path.split("/").pop()}`);
    writeFileSync(file, content);
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    return { id: `artifact${i}`, path, size: bytes.length, sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex"), role: "binary", file };
  });
  const publisher = normalizePublisher(PublisherInput.parse(options.publisher));
  const ctx: PublishContext = {
    claimed: {
      deployment_id: "d1",
      lease_seconds: 30,
      heartbeat_seconds: 5,
      next_line: 0,
      step: "publish:test",
      environment: String(options.publisher.environment),
      build: { id: "b1", build_number: 7, project_id: "p1", branch: "main", commit_sha: "a".repeat(40), trigger_event: "push", tag: null },
      publisher: publisher as never,
      artifacts,
      release_notes: options.notes ?? {},
      secrets: [],
      missing_secrets: [],
    },
    publisher,
    artifacts,
    notes: options.notes ?? {},
    endpoints: { ...STORE_ENDPOINTS, ...options.endpoints },
    dir,
    signal: new AbortController().signal,
    secret(key) {
      const text = options.secrets?.[key];
      if (text === undefined) throw new PublishFailure(`environment has no secret ${key}`);
      const path = join(dir, `secret-${key}`);
      writeFileSync(path, text, { mode: 0o600 });
      return { key, text, path };
    },
    log: (text) => lines.push(maskLine(text, needles)),
    mask,
  };
  return { ctx, lines, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
