// `npm run build`: compiles the whole daemon (CLI, handlers, migrations, the management socket
// companion) into one executable, dist/roost. A local database goes through Bun's built-in SQLite,
// so there is no native addon to embed; @libsql/client is loaded only for a remote database URL
// (its pure-JavaScript web client) or the tests' ROOST_DB_DRIVER=libsql.
import { chmod, mkdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

export async function buildBinary(options: { target?: string; outfile?: string } = {}): Promise<string> {
  const target = options.target ?? `bun-${process.platform}-${process.arch}`;
  const outfile = options.outfile ?? join(ROOT, "dist", "roost");
  await mkdir(join(ROOT, "dist"), { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(ROOT, "bin", "roost.ts")],
    compile: { target: target as "bun-linux-x64", outfile },
    minify: true,
    sourcemap: "linked",
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("build failed");
  }
  await chmod(outfile, 0o755);
  return outfile;
}

if (import.meta.main) {
  const target = process.argv.find((a) => a.startsWith("--target="))?.slice("--target=".length);
  const outfile = await buildBinary({ target });
  const size = (await stat(outfile)).size;
  console.log(`built ${outfile} (${(size / 1024 / 1024).toFixed(1)} MiB)`);
}
