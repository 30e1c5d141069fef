// A fresh `git clone` with nothing beside it must build, test and read on its own: no tracked file
// may point at a directory next to the checkout or at documents that are not in the repository,
// and every webhook payload the tests replay must be a file under tests/fixtures/webhooks.
// The forbidden strings are assembled from pieces so that this file does not match itself.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const SHARED = "shared";
const FORBIDDEN = [
  `../${SHARED}`,
  `${SHARED}/research`,
  `${SHARED}/fixtures`,
  `${SHARED}/spec`,
  ["DECISIONS", "md"].join("."),
  ["STYLE", "md"].join("."),
  ["interface", "md"].join("."),
];

function trackedFiles(): string[] {
  const git = Bun.spawnSync(["git", "ls-files", "-z"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (git.exitCode !== 0) throw new Error(`git ls-files failed in ${ROOT}: ${git.stderr.toString()}`);
  return git.stdout
    .toString()
    .split("\0")
    .filter((p) => p !== "" && existsSync(join(ROOT, p)));
}

function text(path: string): string | null {
  const bytes = readFileSync(join(ROOT, path));
  return bytes.includes(0) ? null : bytes.toString("utf8");
}

const inside = (absolute: string) => absolute === ROOT || absolute.startsWith(ROOT + sep);

describe("the repository stands alone", () => {
  test("no tracked file refers to a path outside the repository or to documents it does not contain", () => {
    const offenders: string[] = [];
    for (const path of trackedFiles()) {
      const content = text(path);
      if (content === null) continue;
      content.split("\n").forEach((line, i) => {
        for (const needle of FORBIDDEN) if (line.includes(needle)) offenders.push(`${path}:${i + 1}: ${needle}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  test("no script or test resolves a path from its own directory to outside the repository", () => {
    const offenders: string[] = [];
    const call = /\b(?:resolve|join)\(\s*import\.meta\.dir\s*,\s*(["'`])([^"'`$]*)\1\s*\)/g;
    for (const path of trackedFiles().filter((p) => /\.(ts|mts|js|mjs)$/.test(p))) {
      for (const match of text(path)?.matchAll(call) ?? []) {
        const target = resolve(ROOT, dirname(path), match[2]!);
        if (!inside(target)) offenders.push(`${path}: ${match[0]} → ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

describe("webhook fixtures", () => {
  const FIXTURES = join(ROOT, "tests/fixtures/webhooks");
  const FORGES = ["github", "gitlab", "gitea", "bitbucket"];
  const READERS = [
    "tests/handlers/webhooks.test.ts",
    "tests/lib/forges/parse-fixtures.test.ts",
    ...FORGES.map((forge) => `tests/lib/forges/${forge}/parse.test.ts`),
  ];

  test("the webhook tests read their payloads from tests/fixtures/webhooks", () => {
    for (const reader of READERS) {
      const source = readFileSync(join(ROOT, reader), "utf8");
      const dir = source.match(/FIXTURES = resolve\(import\.meta\.dir, "([^"]+)"\)/);
      expect(dir?.[1] && resolve(ROOT, dirname(reader), dir[1])).toBe(FIXTURES);
    }
  });

  test("every payload the webhook tests name exists there, for the host that names it", () => {
    const missing: string[] = [];
    let named = 0;
    for (const reader of READERS) {
      const source = readFileSync(join(ROOT, reader), "utf8");
      // fixture("github", "push.json"), load("gitlab", "x.json"), join(FIXTURES, "github", "x.json")
      for (const [, host, file] of source.matchAll(/"(github|gitlab|gitea|bitbucket)",\s*"([\w.-]+\.json)"/g)) {
        named++;
        if (!existsSync(join(FIXTURES, host!, file!))) missing.push(`${reader}: ${host}/${file}`);
      }
      // Table rows name only the file; the host is whichever directory holds it.
      for (const [, file] of source.matchAll(/"([\w-]+\.json)"/g)) {
        named++;
        if (!FORGES.some((host) => existsSync(join(FIXTURES, host, file!)))) missing.push(`${reader}: ${file}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
    expect(named).toBeGreaterThan(30);
  });

  test("each fixture directory says where every payload in it comes from", () => {
    for (const host of FORGES) {
      const sources = readFileSync(join(FIXTURES, host, "SOURCES.md"), "utf8");
      const payloads = readdirSync(join(FIXTURES, host)).filter((f) => f.endsWith(".json"));
      expect(payloads.length).toBeGreaterThan(5);
      expect(payloads.filter((f) => !sources.includes("`" + f + "`")).map((f) => relative(ROOT, join(FIXTURES, host, f)))).toEqual([]);
    }
  });
});
