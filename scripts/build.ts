// `npm run build`: compiles the whole daemon (CLI, handlers, migrations, the management socket
// companion) into one executable, dist/roost. A local database goes through Bun's built-in SQLite,
// so there is no native addon to embed; @libsql/client is loaded only for a remote database URL
// (its pure-JavaScript web client) or the tests' ROOST_DB_DRIVER=libsql.
// The web app (web/, lib/web/build.ts) is embedded as a map of its files that a generated entry
// registers before bin/roost.ts runs, so the binary serves it with nothing beside it.
import { chmod, mkdir, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { buildWebAssets } from "../lib/web/build.ts";

const ROOT = resolve(import.meta.dir, "..");

export async function buildBinary(options: { target?: string; outfile?: string } = {}): Promise<string> {
  const target = options.target ?? `bun-${process.platform}-${process.arch}`;
  const outfile = options.outfile ?? join(ROOT, "dist", "roost");
  await mkdir(join(ROOT, "dist"), { recursive: true });
  const entry = await writeEmbeddingEntry();
  const result = await Bun.build({
    entrypoints: [entry],
    compile: { target: target as "bun-linux-x64", outfile },
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

/** dist/.embed/entry.ts: registers the web app's files, then runs the CLI. */
async function writeEmbeddingEntry(): Promise<string> {
  const dir = join(ROOT, "dist", ".embed");
  await mkdir(dir, { recursive: true });
  const files: Record<string, { type: string; base64: string }> = {};
  for (const [path, asset] of await buildWebAssets()) files[path] = { type: asset.type, base64: Buffer.from(asset.body).toString("base64") };
  await writeFile(
    join(dir, "web-assets.ts"),
    `import { registerEmbeddedWebAssets } from ${JSON.stringify(join(ROOT, "lib", "web", "assets.ts"))};\nregisterEmbeddedWebAssets(${JSON.stringify(files)});\n`,
  );
  const entry = join(dir, "entry.ts");
  await writeFile(entry, `import "./web-assets.ts";\nimport ${JSON.stringify(join(ROOT, "bin", "roost.ts"))};\n`);
  return entry;
}

if (import.meta.main) {
  const target = process.argv.find((a) => a.startsWith("--target="))?.slice("--target=".length);
  const outfile = await buildBinary({ target });
  const size = (await stat(outfile)).size;
  console.log(`built ${outfile} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
}
