// lib/ holds the shared mechanisms; the endpoints (handlers/), the programs' entries (bin/,
// runner/) and the tools (scripts/) build on it, never the other way round (Roost issue 11). A
// lib/ file that imports one of them drags a program into every other program that uses lib/.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const FORBIDDEN = ["handlers", "scripts", "bin", "runner"];

/** Every module specifier in a source file: static, type-only, re-exports, side-effect and dynamic imports. */
function specifiers(source: string): string[] {
  const pattern = /\b(?:from|import)\s*\(?\s*["']([^"']+)["']|\brequire\s*\(\s*["']([^"']+)["']/g;
  return [...source.matchAll(pattern)].map((m) => (m[1] ?? m[2])!);
}

/** The top-level folder a relative specifier lands in, seen from the repository root. */
function topFolder(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  return relative(ROOT, resolve(dirname(file), specifier)).split("/")[0] ?? null;
}

describe("layout", () => {
  test("the scanner sees every kind of import", () => {
    const file = join(ROOT, "lib/example.ts");
    const source = `import { a } from "../handlers/a.ts";\nimport type { B } from '../runner/b.ts';\nexport * from "../bin/c.ts";\nimport "../scripts/d.ts";\nconst e = await import("../handlers/e.ts");\nimport { f } from "./f.ts";`;
    expect(specifiers(source).map((s) => topFolder(file, s))).toEqual(["handlers", "runner", "bin", "scripts", "handlers", "lib"]);
  });

  test("no file under lib/ imports from handlers/, scripts/, bin/ or runner/", () => {
    const offending: string[] = [];
    for (const path of new Bun.Glob("lib/**/*.{ts,tsx,js,mjs}").scanSync({ cwd: ROOT })) {
      const file = join(ROOT, path);
      for (const specifier of specifiers(readFileSync(file, "utf8"))) {
        const folder = topFolder(file, specifier);
        if (folder && FORBIDDEN.includes(folder)) offending.push(`${path} imports ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
