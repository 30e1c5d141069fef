// The runner's dependency cache (runner/job/cache.ts): which entry a build restores, and eviction.
// Restoring and saving through a real runner are in tests/e2e/runner-toolchain.test.ts.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cacheScope, chooseEntry, evictCaches, findEntries, listEntries, type CacheEntry, type CacheWant, type FoundEntry } from "../../runner/job/cache.ts";

const PATHS = ["$PUB_CACHE", "$GRADLE_USER_HOME/caches"];
const entry = (key: string, branch: string, created_at: number, last_used_at = created_at, bytes = 100): CacheEntry => ({
  key,
  branch,
  created_at,
  last_used_at,
  bytes,
});
const found = (pipeline_id: string, key: string, branch: string, created_at: number, project_id = "proj", paths = PATHS): FoundEntry => ({
  ...entry(key, branch, created_at),
  pipeline_id,
  project_id,
  paths,
});
const want = (scope: string, key: string, pipelineId = "ci"): CacheWant => ({ pipelineId, projectId: "proj", scope, defaultBranch: "main", key, paths: PATHS });
const choose = (entries: FoundEntry[], w: CacheWant) => {
  const chosen = chooseEntry(entries, w);
  return chosen && { pipeline: chosen.entry.pipeline_id, key: chosen.entry.key, match: chosen.match };
};

describe("choosing the entry to restore", () => {
  const entries = [
    found("ci", "k1", "main", 10),
    found("ci", "k2", "main", 20),
    found("ci", "k3", "feature", 15),
    found("ci", "k4", "pull_request:refs/pull/7/head", 30),
  ];

  test.each([
    ["the exact key of the build's branch", "k3", "feature", { pipeline: "ci", key: "k3", match: "exact key" }],
    ["the exact key of the default branch", "k1", "feature", { pipeline: "ci", key: "k1", match: "exact key" }],
    ["else the newest of the branch", "kX", "feature", { pipeline: "ci", key: "k3", match: "newest of branch feature" }],
    ["else the newest of the default branch", "kX", "other", { pipeline: "ci", key: "k2", match: "newest of the default branch main" }],
  ])("%s", (_name, key, branch, expected) => {
    expect(choose(entries, want(branch, key))).toEqual(expected);
  });

  test("another branch's or a pull request's entry is never restored, even with the same key", () => {
    expect(choose(entries, want("main", "k4"))?.key).toBe("k2");
    expect(choose(entries, want("main", "k3"))?.key).toBe("k2");
    expect(choose([found("ci", "k3", "feature", 1)], want("other", "k3"))).toBeNull();
  });
});

describe("a tag's build (a release pipeline that runs only on tags)", () => {
  // The project's CI pipeline builds main and pull requests; its release pipeline only tags.
  const ci = [
    found("ci", "k-old", "main", 10),
    found("ci", "k-main", "main", 20),
    found("ci", "k-pr", "pull_request:refs/pull/7/head", 40),
    found("ci", "k-feature", "feature", 30),
  ];
  const tagWant = (key: string) => want(cacheScope({ trigger_event: "tag", trigger_ref: "refs/tags/v1.1.0", branch: "v1.1.0" }), key, "release");

  test("a tag is its own scope, apart from a branch of the same name", () => {
    expect(tagWant("k")).toMatchObject({ scope: "tag:v1.1.0" });
  });

  test.each([
    [
      "the exact key saved by the project's other pipeline on the default branch",
      [...ci],
      "k-old",
      { pipeline: "ci", key: "k-old", match: "exact key, from another pipeline of this project" },
    ],
    [
      "else the newest of the default branch, from the project's other pipeline",
      [...ci],
      "k-new",
      { pipeline: "ci", key: "k-main", match: "newest of the default branch main, from another pipeline of this project" },
    ],
    [
      "the exact key of an earlier tag of its own pipeline first",
      [...ci, found("release", "k-old", "tag:v1.0.0", 5)],
      "k-old",
      { pipeline: "release", key: "k-old", match: "exact key" },
    ],
    [
      "else the newest of its own pipeline's tags",
      [...ci, found("release", "k-rel", "tag:v1.0.0", 5)],
      "k-new",
      { pipeline: "release", key: "k-rel", match: "newest of the tags" },
    ],
  ])("restores %s", (_name, entries, key, expected) => {
    expect(choose(entries as FoundEntry[], tagWant(key))).toEqual(expected);
  });

  test("never a pull request's entry, another branch's, another project's, or another pipeline's with other cache paths", () => {
    expect(choose(ci, tagWant("k-pr"))?.key).toBe("k-main");
    expect(choose(ci, tagWant("k-feature"))?.key).toBe("k-main");
    expect(choose([found("ci", "k-pr", "pull_request:refs/pull/7/head", 40)], tagWant("k-pr"))).toBeNull();
    expect(choose([found("elsewhere", "k-old", "main", 50, "other-project")], tagWant("k-old"))).toBeNull();
    expect(choose([found("ci", "k-x", "main", 50, "proj", ["ios/Pods"])], tagWant("k-new"))).toBeNull();
    // Entries saved before project ids were recorded are read only by their own pipeline.
    expect(choose([{ ...entry("k-old", "main", 10), pipeline_id: "ci" }], tagWant("k-old"))).toBeNull();
  });

  test("found on disk: the entries of every pipeline of the runner, with the pipeline they belong to", () => {
    const root = mkdtempSync(join(tmpdir(), "roost-caches-"));
    try {
      for (const e of [...ci, found("release", "k-rel", "tag:v1.0.0", 5)]) {
        const { pipeline_id, ...stored } = e;
        const dir = join(root, pipeline_id, `${createHash("sha256").update(e.branch).digest("hex").slice(0, 8)}-${e.key}`);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, "entry.json"), JSON.stringify(stored));
      }
      expect(choose(findEntries(root), tagWant("k-main"))).toEqual({
        pipeline: "ci",
        key: "k-main",
        match: "exact key, from another pipeline of this project",
      });
      expect(findEntries(join(root, "missing"))).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("eviction", () => {
  test("least recently used entries go first, across pipelines, until all fit", () => {
    const root = mkdtempSync(join(tmpdir(), "roost-caches-"));
    try {
      // An entry's directory is named by its scope's hash and its key (runner/job/cache.ts).
      const place = (pipeline: string, e: CacheEntry) => {
        const dir = join(root, pipeline, `${createHash("sha256").update(e.branch).digest("hex").slice(0, 8)}-${e.key}`);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, "entry.json"), JSON.stringify(e));
        return dir;
      };
      const old = place("p1", entry("old", "main", 1, 5, 400));
      const used = place("p2", entry("used", "main", 2, 50, 400));
      const fresh = place("p1", entry("fresh", "main", 40, 40, 400));
      expect(evictCaches(root, 1000)).toEqual(["old"]);
      expect([existsSync(old), existsSync(used), existsSync(fresh)]).toEqual([false, true, true]);
      expect(evictCaches(root, 1000)).toEqual([]);
      expect(evictCaches(root, 400)).toEqual(["fresh"]);
      expect(listEntries(join(root, "p2")).map((e) => e.key)).toEqual(["used"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
