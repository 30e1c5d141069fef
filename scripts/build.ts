// `npm run build`: compiles the whole daemon (CLI, handlers, migrations, the management socket
// companion and libSQL's native addon) into one executable, dist/roost.
//
// Why the plugin: libsql's loader picks its native addon at run time with
// require(`@libsql/${target}`), which the bundler cannot follow, so a compiled binary fails with
// "Cannot find module '@libsql/linux-x64-gnu'" as soon as it runs without node_modules. The
// plugin rewrites that one line into a static require of the build target's `index.node`, which
// `bun build --compile` then embeds in the executable and loads from memory.
import type { BunPlugin } from "bun";
import { chmod, mkdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

/** The libSQL addon package for a Bun compile target (bun-linux-x64 → @libsql/linux-x64-gnu). */
export function libsqlAddonFor(target: string): string {
  const m = /^bun-(linux|darwin|windows)-(x64|arm64)(?:-(musl|baseline|modern))*$/.exec(target);
  if (!m) throw new Error(`unsupported build target ${target}`);
  const [, os, arch] = m;
  if (os === "linux") return `@libsql/linux-${arch}-${target.includes("musl") ? "musl" : "gnu"}`;
  if (os === "darwin") return `@libsql/darwin-${arch}`;
  return `@libsql/win32-${arch}-msvc`;
}

export function embedLibsqlAddon(addonPackage: string): BunPlugin {
  return {
    name: "embed-libsql-native-addon",
    setup(build) {
      build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async (args) => {
        const source = await Bun.file(args.path).text();
        const dynamic = "return require(`@libsql/${target}`);";
        if (!source.includes(dynamic)) throw new Error("libsql's native loader changed; update scripts/build.ts");
        return { contents: source.replace(dynamic, `return require(${JSON.stringify(`${addonPackage}/index.node`)});`), loader: "js" };
      });
    },
  };
}

export async function buildBinary(options: { target?: string; outfile?: string } = {}): Promise<string> {
  const target = options.target ?? `bun-${process.platform}-${process.arch}`;
  const outfile = options.outfile ?? join(ROOT, "dist", "roost");
  const addon = libsqlAddonFor(target);
  if (!(await stat(join(ROOT, "node_modules", addon, "index.node")).catch(() => null))) {
    throw new Error(`${addon} is not installed; run npm ci on a ${target.slice(4)} machine or install it with --os/--cpu`);
  }
  await mkdir(join(ROOT, "dist"), { recursive: true });
  const result = await Bun.build({
    entrypoints: [join(ROOT, "bin", "roost.ts")],
    compile: { target: target as "bun-linux-x64", outfile },
    minify: true,
    sourcemap: "linked",
    plugins: [embedLibsqlAddon(addon)],
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
