// `npm run web`: builds the web app (lib/web/build.ts) and prints its size against the budget;
// exits 1 when the JavaScript is over it.
import { JS_BUDGET_GZIP_BYTES, buildWebAssets, measure } from "../lib/web/build.ts";

if (import.meta.main) {
  const sizes = measure(await buildWebAssets());
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  console.log(
    `web app: JavaScript ${kb(sizes.js)} (${kb(sizes.jsGzip)} gzipped, budget ${kb(JS_BUDGET_GZIP_BYTES)}), CSS ${kb(sizes.css)} (${kb(sizes.cssGzip)} gzipped), all files ${kb(sizes.totalGzip)} gzipped`,
  );
  if (sizes.jsGzip > JS_BUDGET_GZIP_BYTES) {
    console.error("the web app's JavaScript is over its budget");
    process.exit(1);
  }
}
