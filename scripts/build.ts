// `npm run build`: compiles the whole daemon (CLI, handlers, migrations, the management socket
// companion) into one executable, dist/roost. A local database goes through Bun's built-in SQLite,
// so there is no native addon to embed; @libsql/client is loaded only for a remote database URL
// (its pure-JavaScript web client) or the tests' ROOST_DB_DRIVER=libsql.
// The web app (web/, lib/web/build.ts) is embedded as a map of its files that a generated entry
// registers before bin/roost.ts runs, so the binary serves it with nothing beside it.
//
// Start-up (docs/benchmarks.md "Start-up of the compiled binary"): the bytecode is laid out by a
// profile of `roost serve` starting and then idle for 11 s (https://bun.com/docs/bundler/executables,
// "Profile-guided bytecode layout"), so a start reads and decodes less of the executable, and the JIT starts
// reluctant ("JIT policy"): the run-once start-up code stays in the interpreter until
// bin/roost.ts restores the normal policy once the daemon serves. The profile is recorded by the
// first build of a checkout, into dist/ (profiles match functions by a hash of their syntax, so a
// recording keeps applying as the code changes; delete dist/roost-serve.order to record anew).
import { chmod, mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildWebAssets } from "../lib/web/build.ts";
import { MIGRATIONS } from "../lib/db/migrate.ts";
import { takeSchemaSnapshot } from "../lib/db/schema-snapshot.ts";

const ROOT = resolve(import.meta.dir, "..");
const HOST_TARGET = `bun-${process.platform}-${process.arch}`;
/** The recorded start of `roost serve` that orders the bytecode. */
export const ORDER_FILE = join(ROOT, "dist", "roost-serve.order");
/**
 * JavaScriptCore's tier-up thresholds are this many times higher until the daemon serves. At 8, zod's
 * helper that defines each schema class's bound methods (called for every schema the start builds)
 * still reached the optimizing JIT during the start in most starts, and its first compile maps about
 * 2 MiB of the compiler's own code into the idle daemon; at 32 it stays in the baseline tiers, and
 * the start takes no more CPU (docs/benchmarks.md, "idle RSS").
 */
const START_JIT_POLICY = 32;

export async function buildBinary(options: { target?: string; outfile?: string } = {}): Promise<string> {
  const target = options.target ?? HOST_TARGET;
  const outfile = options.outfile ?? join(ROOT, "dist", "roost");
  await mkdir(join(ROOT, "dist"), { recursive: true });
  if (!existsSync(ORDER_FILE)) await recordStartProfile();
  return compile(target, outfile, existsSync(ORDER_FILE) ? ORDER_FILE : null);
}

async function compile(target: string, outfile: string, order: string | null): Promise<string> {
  const entry = await writeEmbeddingEntry();
  const result = await Bun.build({
    entrypoints: [entry],
    compile: { target: target as "bun-linux-x64", outfile, jitPolicy: START_JIT_POLICY, bytecodeOrder: order },
    minify: true,
    // The bundle is embedded as bytecode too, so a start does not parse 2.5 MB of JavaScript first
    // (about a third of the CPU time to a ready /readyz; https://bun.com/docs/bundler/bytecode).
    // ESM bytecode needs `compile`, and keeps bin/roost.ts's top-level await.
    bytecode: true,
    format: "esm",
    sourcemap: "linked",
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("build failed");
  }
  await chmod(outfile, 0o755);
  return outfile;
}

/**
 * How long the recording goes on once the daemon is ready: past the first pass of every background
 * task that runs within 10 s (lib/daemon/background.ts), so the code an idle daemon runs is laid out
 * together with the start's instead of spread over the executable's pages (about 1.2 MiB less RSS
 * once the passes have run; docs/benchmarks.md, "idle RSS").
 */
const RECORD_IDLE_MS = 11_000;

/**
 * Builds a host binary without a profile, starts `roost serve` on an empty data directory until
 * /readyz answers 200 and RECORD_IDLE_MS more, stops it (the profile is written on exit) and keeps
 * the profile as ORDER_FILE. A recording that fails leaves no file: the build goes on without one.
 */
async function recordStartProfile(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "roost-order-"));
  try {
    const binary = await compile(HOST_TARGET, join(dir, "roost"), null);
    const recording = join(dir, "serve.order");
    const child = Bun.spawn([binary, "serve"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", ROOST_LISTEN: "127.0.0.1:0", BUN_BYTECODE_ORDER_OUT: recording },
      stdout: "ignore",
      stderr: "pipe",
    });
    // A daemon that neither serves nor exits within a minute must not hold the build: the
    // recording is given up (no profile) and the build goes on.
    const giveUp = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const url = await listeningUrl(child.stderr);
    for (let i = 0; url && i < 500; i++) {
      if (
        (await fetch(`${url}/readyz`).then(
          (r) => r.status,
          () => 0,
        )) === 200
      )
        break;
      await Bun.sleep(10);
    }
    if (url) await Bun.sleep(RECORD_IDLE_MS);
    child.kill("SIGTERM");
    await child.exited;
    clearTimeout(giveUp);
    if (url && existsSync(recording)) await rename(recording, ORDER_FILE);
    else console.error("build: could not record a start-up profile; building without one");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The URL of the daemon's "roost listening" log line, or null when it ends without one. */
async function listeningUrl(stderr: ReadableStream<Uint8Array>): Promise<string | null> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stderr) {
    buffer += decoder.decode(chunk);
    const line = buffer.split("\n").find((l) => l.includes('"roost listening"'));
    if (line) return (JSON.parse(line) as { url: string }).url;
  }
  return null;
}

/** dist/.embed/entry.ts: registers the web app's files and the schema snapshot, then runs the CLI. */
async function writeEmbeddingEntry(): Promise<string> {
  const dir = join(ROOT, "dist", ".embed");
  await mkdir(dir, { recursive: true });
  const files: Record<string, { type: string; base64: string }> = {};
  for (const [path, asset] of await buildWebAssets()) files[path] = { type: asset.type, base64: Buffer.from(asset.body).toString("base64") };
  await writeFile(
    join(dir, "web-assets.ts"),
    `import { registerEmbeddedWebAssets } from ${JSON.stringify(join(ROOT, "lib", "web", "assets.ts"))};\nregisterEmbeddedWebAssets(${JSON.stringify(files)});\n`,
  );
  // The whole schema as one step for a new database (lib/db/schema-snapshot.ts).
  await writeFile(
    join(dir, "schema-snapshot.ts"),
    `import { registerSchemaSnapshot } from ${JSON.stringify(join(ROOT, "lib", "db", "schema-snapshot.ts"))};\nregisterSchemaSnapshot(${JSON.stringify(takeSchemaSnapshot(MIGRATIONS))});\n`,
  );
  const entry = join(dir, "entry.ts");
  await writeFile(entry, `import "./web-assets.ts";\nimport "./schema-snapshot.ts";\nimport ${JSON.stringify(join(ROOT, "bin", "roost.ts"))};\n`);
  return entry;
}

if (import.meta.main) {
  const target = process.argv.find((a) => a.startsWith("--target="))?.slice("--target=".length);
  const outfile = await buildBinary({ target });
  const size = (await stat(outfile)).size;
  console.log(`built ${outfile} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
}
