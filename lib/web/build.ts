// Builds the web app (docs/web-app.md) from web/ with Bun's bundler: one minified ES module with
// content-hashed names and its stylesheet, and index.html naming them. Used in memory by the
// daemon run from a checkout (lib/web/assets.ts), by scripts/build.ts to embed the files in the
// compiled binary, and by `npm run web` (scripts/build-web.ts), which prints the sizes against the
// budget (the app's JavaScript under 100 KB gzipped).
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import type { WebAssets } from "./assets.ts";

const ROOT = resolve(import.meta.dir, "../..");
const WEB = join(ROOT, "web");

/** The JavaScript budget in gzipped bytes (issue: "under 100 KB gzipped for the whole app"). */
export const JS_BUDGET_GZIP_BYTES = 100 * 1024;

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  html: "text/html; charset=utf-8",
};

export async function buildWebAssets(): Promise<WebAssets> {
  const result = await Bun.build({
    entrypoints: [join(WEB, "main.tsx")],
    target: "browser",
    format: "esm",
    minify: true,
    naming: { entry: "assets/[name]-[hash].[ext]", asset: "assets/[name]-[hash].[ext]", chunk: "assets/[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new AggregateError(result.logs, "the web app does not build");
  const assets: WebAssets = new Map();
  const tags: string[] = [];
  for (const output of result.outputs) {
    const path = "/" + output.path.replace(/^\.\//, "");
    const ext = path.slice(path.lastIndexOf(".") + 1);
    if (ext === "map") continue;
    assets.set(path, { body: new Uint8Array(await output.arrayBuffer()), type: TYPES[ext] ?? "application/octet-stream", immutable: true });
    if (ext === "js" && output.kind === "entry-point") tags.push(`<script type="module" src="${path}"></script>`);
    if (ext === "css") tags.push(`<link rel="stylesheet" href="${path}">`);
  }
  const template = await Bun.file(join(WEB, "index.html")).text();
  const html = template.replace("<!-- assets -->", tags.join("\n    "));
  assets.set("/index.html", { body: new TextEncoder().encode(html), type: TYPES.html!, immutable: false });
  return assets;
}

/** Bytes and gzipped bytes of the app's JavaScript, CSS and HTML. */
export function measure(assets: WebAssets): { js: number; jsGzip: number; css: number; cssGzip: number; total: number; totalGzip: number } {
  const sum = { js: 0, jsGzip: 0, css: 0, cssGzip: 0, total: 0, totalGzip: 0 };
  for (const [path, asset] of assets) {
    const gz = gzipSync(asset.body, { level: 9 }).byteLength;
    if (path.endsWith(".js")) (sum.js += asset.body.byteLength), (sum.jsGzip += gz);
    if (path.endsWith(".css")) (sum.css += asset.body.byteLength), (sum.cssGzip += gz);
    sum.total += asset.body.byteLength;
    sum.totalGzip += gz;
  }
  return sum;
}
