// The runner's dependency cache (runner/job/cache.ts): which entry a build restores, and eviction.
// Restoring and saving through a real runner are in tests/e2e/runner-toolchain.test.ts.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chooseEntry, evictCaches, listEntries, type CacheEntry } from "../../runner/job/cache.ts";

const entry = (key: string, branch: string, created_at: number, last_used_at = created_at, bytes = 100): CacheEntry => ({ key, branch, created_at, last_used_at, bytes });

describe("choosing the entry to restore", () => {
  const entries = [entry("k1", "main", 10), entry("k2", "main", 20), entry("k3", "feature", 15), entry("k4", "pull_request:refs/pull/7/head", 30)];

  test.each([
    ["the exact key of the build's branch", "k3", "feature", { key: "k3", match: "exact key" }],
    ["the exact key of the default branch", "k1", "feature", { key: "k1", match: "exact key" }],
    ["else the newest of the branch", "kX", "feature", { key: "k3", match: "newest of branch feature" }],
    ["else the newest of the default branch", "kX", "other", { key: "k2", match: "newest of the default branch main" }],
  ])("%s", (_name, key, branch, want) => {
    const found = chooseEntry(entries, key, branch, "main");
    expect({ key: found?.entry.key, match: found?.match }).toEqual(want);
  });

  test("another branch's or a pull request's entry is never restored, even with the same key", () => {
    expect(chooseEntry(entries, "k4", "main", "main")?.entry.key).toBe("k2");
    expect(chooseEntry(entries, "k3", "main", "main")?.entry.key).toBe("k2");
    expect(chooseEntry([entry("k3", "feature", 1)], "k3", "other", "main")).toBeNull();
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
