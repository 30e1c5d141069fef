// What nothing uses does not stay: every export of lib/ and handlers/ is used somewhere (another
// file, or its own file), and RoostEvent lists only events something publishes.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

function tracked(): string[] {
  const git = Bun.spawnSync(["git", "ls-files", "-z"], { cwd: ROOT, stdout: "pipe" });
  return git.stdout
    .toString()
    .split("\0")
    .filter((p) => /\.(ts|tsx)$/.test(p) && existsSync(join(ROOT, p)));
}

const files = new Map(tracked().map((p) => [p, readFileSync(join(ROOT, p), "utf8")]));
const mentions = (name: string, except?: string) => [...files].filter(([p, t]) => p !== except && new RegExp(`\\b${name}\\b`).test(t)).length;

describe("layout", () => {
  test("every export in lib/ and handlers/ is used", () => {
    const unused: string[] = [];
    for (const [path, source] of files) {
      if (!/^(lib|handlers)\//.test(path)) continue;
      for (const m of source.matchAll(/^export (?:async )?(?:function\*? |const |let |class |interface |type |enum )(\w+)/gm)) {
        const name = m[1]!;
        if (path.startsWith("handlers/") && name === "endpoint") continue;
        const own = source.match(new RegExp(`\\b${name}\\b`, "g"))!.length;
        if (own === 1 && mentions(name, path) === 0) unused.push(`${path}: ${name}`);
      }
    }
    expect(unused).toEqual([]);
  });

  test("every event type is published", () => {
    const events = readFileSync(join(ROOT, "lib/daemon/events.ts"), "utf8");
    const types = [...events.matchAll(/type: "([\w.]+)"/g)].map((m) => m[1]!);
    expect(types.filter((t) => ![...files].some(([p, s]) => p !== "lib/daemon/events.ts" && s.includes(`publish({ type: "${t}"`)))).toEqual([]);
  });
});
