// The web app's files (docs/web-app.md): built from web/ by lib/web/build.ts. The compiled
// binary carries them in an embedded map that scripts/build.ts generates and registers before the
// daemon starts, so it serves them with no file beside it and no network. Run from a checkout
// (`npm start`, the tests), the first request for the app builds them in memory once per process.

export interface WebAsset {
  body: Uint8Array;
  type: string;
  /** Hashed file names never change content: cached for a year. index.html is revalidated. */
  immutable: boolean;
}

/** URL path ("/index.html", "/assets/main-1a2b3c.js") → file. */
export type WebAssets = Map<string, WebAsset>;

let embedded: WebAssets | null = null;
let embeddedFiles: Record<string, { type: string; base64: string }> | null = null;
let built: Promise<WebAssets> | null = null;

/**
 * Called by the compiled binary's generated entry (scripts/build.ts) before bin/roost.ts runs.
 * Decoded on the first request for the app, not at start: `roost runner` and the other commands
 * never serve it, and the daemon is ready sooner (docs/benchmarks.md, start-up).
 */
export function registerEmbeddedWebAssets(files: Record<string, { type: string; base64: string }>): void {
  embeddedFiles = files;
  embedded = null;
}

export function webAssets(): Promise<WebAssets> {
  if (embeddedFiles) {
    embedded = new Map();
    for (const [path, file] of Object.entries(embeddedFiles)) {
      embedded.set(path, { body: Uint8Array.from(Buffer.from(file.base64, "base64")), type: file.type, immutable: path.startsWith("/assets/") });
    }
    embeddedFiles = null;
  }
  if (embedded) return Promise.resolve(embedded);
  built ??= buildFromSource().catch((error: unknown) => {
    built = null;
    throw error;
  });
  return built;
}

async function buildFromSource(): Promise<WebAssets> {
  // A variable specifier: the bundler of the compiled binary must not pull the web build in.
  const builder = "./build.ts";
  const { buildWebAssets } = (await import(builder)) as typeof import("./build.ts");
  return buildWebAssets();
}
