// Dependency caches, runner-local (docs/runners.md "Caches"): the pub cache, Gradle's caches and
// wrapper, CocoaPods' cache and any paths a pipeline adds, kept per pipeline in
// <workdir>/caches/<pipeline_id>/<key>/ and keyed by the lock files, as GitLab's `cache:key:files`
// and GitHub's actions/cache key on hashFiles() of them.
//
// - Before the steps, after the checkout: the job's PUB_CACHE, GRADLE_USER_HOME and CP_HOME_DIR
//   point into a directory of its own, and the entry with the build's key is restored into it,
//   else the newest entry it may read (the fallback order of GitLab's cache:fallback_keys and
//   actions/cache restore-keys): of its own pipeline first, then of the project's other
//   pipelines (same key, or the same cache paths), so a tag-only release pipeline, which never
//   builds the default branch, starts from what the project's other pipelines saved there.
// - A build reads and writes its own scope (its branch; a tag; a pull request's own ref, never
//   the branch name a fork chose) and reads the default branch's, as GitHub scopes caches; a tag
//   build also reads other tags' (tags are trusted refs, as GitHub lets a tag's workflow read the
//   default branch's caches). No build reads another's pull-request entries: a pull request
//   cannot plant a cache that a trusted build restores.
// - After a successful build, when no entry had the exact key, one is saved. Entries are never
//   overwritten (a key names its contents), and the least recently used ones are evicted once
//   all of them together exceed ROOST_CACHE_MAX_MB.
//
// - Shared caches (docs/runners.md "Shared caches"): when the claimed job says shared_caches (the
//   daemon's object store is S3, so several hosts), a build without an exact entry on this disk
//   asks the daemon for the project's entry (same rules of scope, decided by the daemon from the
//   build) and unpacks it into this disk's caches first; a new entry it saves is also uploaded, so
//   the project's other runners restore it.
//
// Restoring and saving are log lines ([roost] cache: …), not reported steps; a cache that cannot be
// read or written is said in the log and never fails a build.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";
import { cacheScope as scopeOf } from "../../lib/runners/cache-scope.ts";
import type { CacheLookupAnswer } from "../../lib/runners/protocol-wire.ts";
import type { z } from "zod";
import { sha256OfFile } from "./artifacts.ts";

/** The archives of an entry, beside its entry.json: what a shared cache archive holds. */
const ARCHIVES = ["homes.tar", "workspace.tar"] as const;

/** The variables a cache path may start with, and their directory under the job's cache homes. */
const HOMES = ["PUB_CACHE", "GRADLE_USER_HOME", "CP_HOME_DIR"] as const;

export interface CacheEntry {
  key: string;
  /** The scope that saved it: a branch name, tag:<tag>, or pull_request:<ref>. */
  branch: string;
  created_at: number;
  last_used_at: number;
  bytes: number;
  /** The project and the cache paths of the build that saved it; absent in entries saved before, which only their own pipeline reads. */
  project_id?: string;
  paths?: string[];
}

/** An entry where it was found: its pipeline's directory name. */
export type FoundEntry = CacheEntry & { pipeline_id: string };

/** What a build may restore: its pipeline and project, scope, default branch, key and cache paths. */
export interface CacheWant {
  pipelineId: string;
  projectId: string;
  scope: string;
  defaultBranch: string;
  key: string;
  paths: string[];
}

export function cacheHomes(run: Pick<JobRun, "options" | "id">): string {
  return join(run.options.workDir, "homes", run.id);
}

function pipelineDir(run: JobRun): string {
  return join(run.options.workDir, "caches", run.job.build.pipeline_id);
}

/** Where one configured path lives on disk: [the archive it goes in, its root, the path below it]. */
function locate(spec: string): ["homes" | "workspace", string] {
  const home = HOMES.find((h) => spec === `$${h}` || spec.startsWith(`$${h}/`));
  return home ? ["homes", home + spec.slice(home.length + 1)] : ["workspace", spec];
}

/** What an entry must share with the build to be restored without its key: the cache paths and the platform (actions/cache's "version"). */
function versionOf(run: JobRun): string {
  return JSON.stringify({ paths: run.config.cache.paths, os: process.platform, arch: process.arch });
}

export function cacheVersion(run: JobRun): string {
  return createHash("sha256").update(versionOf(run)).digest("hex").slice(0, 32);
}

/** The key: the cache paths, the platform, and the path and contents of every file the key_files patterns match. */
export async function cacheKey(run: JobRun): Promise<string> {
  const hash = createHash("sha256").update(versionOf(run));
  const files = new Set<string>();
  for (const pattern of run.config.cache.key_files) {
    for await (const path of new Bun.Glob(pattern).scan({ cwd: run.workspace, onlyFiles: true })) files.add(path);
  }
  for (const path of [...files].sort()) hash.update(`\0${path}\0`).update(readFileSync(join(run.workspace, path)));
  return hash.digest("hex").slice(0, 32);
}

export function listEntries(dir: string): CacheEntry[] {
  if (!existsSync(dir)) return [];
  const entries: CacheEntry[] = [];
  for (const name of readdirSync(dir)) {
    try {
      entries.push(JSON.parse(readFileSync(join(dir, name, "entry.json"), "utf8")) as CacheEntry);
    } catch {
      // an entry being written (no entry.json yet) or a stray file
    }
  }
  return entries;
}

/** The build's scope: its branch, tag:<name> for a tag, or for a pull request its own ref (lib/runners/cache-scope.ts). */
export const cacheScope = scopeOf;

/** An entry's directory name: its scope and its key. */
function entryName(scope: string, key: string): string {
  return `${createHash("sha256").update(scope).digest("hex").slice(0, 8)}-${key}`;
}

/**
 * How near an entry is to the build, lower first; null when the build may not read it. Its own
 * pipeline before the project's other pipelines; within each, its own scope, then the default
 * branch, then (a tag build) other tags. Another pipeline's entry is read only with the same key
 * or the same cache paths, and never a pull request's.
 */
function nearness(e: FoundEntry, want: CacheWant): number | null {
  const own = e.pipeline_id === want.pipelineId;
  if (!own && (e.project_id !== want.projectId || e.branch.startsWith("pull_request:"))) return null;
  if (!own && e.key !== want.key && JSON.stringify(e.paths) !== JSON.stringify(want.paths)) return null;
  const scope =
    e.branch === want.scope
      ? 0
      : want.defaultBranch && e.branch === want.defaultBranch
        ? 1
        : want.scope.startsWith("tag:") && e.branch.startsWith("tag:")
          ? 2
          : null;
  return scope === null ? null : (own ? 0 : 3) + scope;
}

/** The entry to restore: the nearest with the exact key, else the nearest newest one (nearness above). */
export function chooseEntry(entries: FoundEntry[], want: CacheWant): { entry: FoundEntry; match: string } | null {
  const readable = entries
    .map((entry) => ({ entry, rank: nearness(entry, want) }))
    .filter((c): c is { entry: FoundEntry; rank: number } => c.rank !== null)
    .sort((a, b) => a.rank - b.rank || b.entry.created_at - a.entry.created_at);
  const exact = readable.find((c) => c.entry.key === want.key);
  const chosen = exact ?? readable[0];
  if (!chosen) return null;
  const e = chosen.entry;
  const where = e.pipeline_id === want.pipelineId ? "" : ", from another pipeline of this project";
  return { entry: e, match: `${describeMatch(Boolean(exact), e.branch, want)}${where}` };
}

function describeMatch(exact: boolean, scope: string, want: CacheWant): string {
  if (exact) return "exact key";
  return scope === want.scope
    ? `newest of ${describeScope(scope)}`
    : scope === want.defaultBranch
      ? `newest of the default branch ${scope}`
      : `newest of the tags`;
}

function describeScope(scope: string): string {
  return scope.startsWith("tag:") ? `tag ${scope.slice(4)}` : scope.startsWith("pull_request:") ? `pull request ${scope.slice(13)}` : `branch ${scope}`;
}

/** Every entry the build might restore: its pipeline's, and the other pipelines' on this runner (chooseEntry decides). */
export function findEntries(cachesRoot: string): FoundEntry[] {
  if (!existsSync(cachesRoot)) return [];
  return readdirSync(cachesRoot).flatMap((pipeline) => listEntries(join(cachesRoot, pipeline)).map((e) => ({ ...e, pipeline_id: pipeline })));
}

/** Points the job's cache variables at its own directories and restores the best entry into them. */
export async function restoreCache(run: JobRun): Promise<void> {
  if (!run.config.cache.enabled || run.status !== "succeeded" || run.canceled) return;
  const homes = cacheHomes(run);
  for (const home of HOMES) {
    mkdirSync(join(homes, home), { recursive: true });
    run.env[home] = run.executor.inside(join(homes, home));
  }
  try {
    run.cacheKey = await cacheKey(run);
    const t0 = performance.now();
    const build = run.job.build;
    const scope = cacheScope(build);
    const want: CacheWant = {
      pipelineId: build.pipeline_id,
      projectId: build.project_id,
      scope,
      defaultBranch: build.default_branch,
      key: run.cacheKey,
      paths: run.config.cache.paths,
    };
    let found = chooseEntry(findEntries(join(run.options.workDir, "caches")), want);
    if (run.job.shared_caches && !found?.match.startsWith("exact key")) {
      try {
        found = (await fetchShared(run, want, found === null)) ?? found;
      } catch (error) {
        // This disk's own entry, if any, is still worth restoring.
        run.system("", `[roost] cache: the shared cache was not read: ${(error as Error).message}`);
      }
    }
    if (!found) {
      run.system(
        "",
        `[roost] cache: no cache for key ${run.cacheKey.slice(0, 12)}, ${describeScope(scope)} or the default branch yet; it is saved after a successful build`,
      );
      return;
    }
    const dir = join(run.options.workDir, "caches", found.entry.pipeline_id, entryName(found.entry.branch, found.entry.key));
    for (const [archive, target] of [
      ["homes.tar", homes],
      ["workspace.tar", run.workspace],
    ] as const) {
      if (existsSync(join(dir, archive))) await tar(["-xf", join(dir, archive), "--no-same-owner", "-C", target]);
    }
    const { pipeline_id: _pipeline, ...entry } = found.entry;
    writeFileSync(join(dir, "entry.json"), JSON.stringify({ ...entry, last_used_at: Math.floor(Date.now() / 1000) }));
    if (found.match.startsWith("exact key")) run.cacheHit = true;
    run.system(
      "",
      `[roost] cache: restored ${found.entry.key.slice(0, 12)} of ${found.entry.branch} (${found.match}, ${mib(found.entry.bytes)}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  } catch (error) {
    run.system("", `[roost] cache: not restored: ${(error as Error).message}`);
  }
}

/** After a successful build with no exact hit: saves the cache paths as a new entry, then evicts beyond the bound. */
export async function saveCache(run: JobRun): Promise<void> {
  if (!run.config.cache.enabled || run.status !== "succeeded" || run.canceled || run.cacheHit || !run.cacheKey) return;
  const t0 = performance.now();
  const scope = cacheScope(run.job.build);
  const dir = join(pipelineDir(run), entryName(scope, run.cacheKey));
  const partial = `${dir}.saving-${run.id}`;
  try {
    mkdirSync(partial, { recursive: true });
    const members = { homes: [] as string[], workspace: [] as string[] };
    for (const spec of run.config.cache.paths) {
      const [archive, path] = locate(spec);
      const root = archive === "homes" ? cacheHomes(run) : run.workspace;
      const full = join(root, path);
      if (!existsSync(full)) continue;
      // Only what is inside its root: a link the build made (ios -> /root) never puts a host file in a cache.
      const real = realpathSync(full);
      const realRoot = realpathSync(root);
      if (real !== join(realRoot, path)) {
        run.system(
          "",
          `[roost] cache: ${spec} not saved: it leads outside ${archive === "homes" ? "the job's cache directory" : "the workspace"} through a link`,
        );
        continue;
      }
      // An empty directory (CocoaPods' on Linux) is not worth an entry.
      if (!(statSync(full).isDirectory() && readdirSync(full).length === 0)) members[archive].push(path);
    }
    if (members.homes.length + members.workspace.length === 0) {
      run.system("", "[roost] cache: nothing to save (none of the cache paths exists)");
      return;
    }
    if (members.homes.length) await tar(["-cf", join(partial, "homes.tar"), "-C", cacheHomes(run), ...members.homes]);
    if (members.workspace.length) await tar(["-cf", join(partial, "workspace.tar"), "-C", run.workspace, ...members.workspace]);
    const bytes = readdirSync(partial).reduce((n, f) => n + statSync(join(partial, f)).size, 0);
    const now = Math.floor(Date.now() / 1000);
    const entry: CacheEntry = {
      key: run.cacheKey,
      branch: scope,
      created_at: now,
      last_used_at: now,
      bytes,
      project_id: run.job.build.project_id,
      paths: run.config.cache.paths,
    };
    writeFileSync(join(partial, "entry.json"), JSON.stringify(entry));
    if (existsSync(dir)) return; // another job saved this key meanwhile: its contents are the same
    renameSync(partial, dir);
    run.system(
      "",
      `[roost] cache: saved ${run.cacheKey.slice(0, 12)} (${mib(bytes)}: ${[...members.homes.map((m) => `$${m}`), ...members.workspace].join(", ")}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    if (run.job.shared_caches) await shareEntry(run, dir);
    const evicted = evictCaches(join(run.options.workDir, "caches"), run.options.cacheMaxBytes);
    if (evicted.length)
      run.system(
        "",
        `[roost] cache: evicted ${evicted.length} least recently used entr${evicted.length > 1 ? "ies" : "y"} to stay within ${mib(run.options.cacheMaxBytes)}`,
      );
  } catch (error) {
    run.system("", `[roost] cache: not saved: ${(error as Error).message}`);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
}

/** Deletes the least recently used entries of every pipeline until all of them fit in maxBytes; returns the deleted keys. */
export function evictCaches(root: string, maxBytes: number): string[] {
  if (!existsSync(root)) return [];
  const all = readdirSync(root).flatMap((pipeline) =>
    listEntries(join(root, pipeline)).map((e) => ({ ...e, dir: join(root, pipeline, entryName(e.branch, e.key)) })),
  );
  let total = all.reduce((n, e) => n + e.bytes, 0);
  const evicted: string[] = [];
  for (const e of all.sort((a, b) => a.last_used_at - b.last_used_at || a.created_at - b.created_at)) {
    if (total <= maxBytes) break;
    rmSync(e.dir, { recursive: true, force: true });
    total -= e.bytes;
    evicted.push(e.key);
  }
  return evicted;
}

type SharedCache = NonNullable<z.output<typeof CacheLookupAnswer>["cache"]>;

/**
 * The project's shared entry for this build, unpacked into this runner's caches as an entry of
 * the build's pipeline, or null (none, or only a fallback while this disk has one). Its entry.json
 * is written here from what the daemon says (the scope it recorded, not anything in the archive),
 * so an archive cannot pass itself off as another scope's on this disk.
 */
async function fetchShared(run: JobRun, want: CacheWant, takeFallback: boolean): Promise<{ entry: FoundEntry; match: string } | null> {
  const answer = await run.api.findCache(run.id, want.key, cacheVersion(run));
  if (!answer.ok) {
    run.system("", `[roost] cache: the shared cache was not read: ${answer.status} ${answer.code}: ${answer.message}`);
    return null;
  }
  const cache = answer.body.cache;
  if (!cache || (!cache.exact && !takeFallback)) return null;
  const dir = join(pipelineDir(run), entryName(cache.scope, cache.key));
  const entry: CacheEntry = {
    key: cache.key,
    branch: cache.scope,
    created_at: cache.created_at,
    last_used_at: Math.floor(Date.now() / 1000),
    bytes: cache.size,
    project_id: want.projectId,
    paths: want.paths,
  };
  if (!existsSync(dir)) {
    const partial = `${dir}.fetching-${run.id}`;
    try {
      mkdirSync(partial, { recursive: true });
      await downloadShared(run, cache, join(partial, "shared.tar"));
      await tar(["-xf", join(partial, "shared.tar"), "--no-same-owner", "-C", partial]);
      for (const name of readdirSync(partial)) {
        // Only the two archives, as regular files (a link named homes.tar would lead elsewhere).
        if (!(ARCHIVES as readonly string[]).includes(name) || !statSync(join(partial, name), { throwIfNoEntry: false })?.isFile())
          rmSync(join(partial, name), { recursive: true, force: true });
      }
      writeFileSync(join(partial, "entry.json"), JSON.stringify(entry));
      if (!existsSync(dir)) renameSync(partial, dir);
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  return { entry: { ...entry, pipeline_id: run.job.build.pipeline_id }, match: `${describeMatch(cache.exact, cache.scope, want)}, from the shared cache` };
}

/** Streams one shared cache archive to `file`, refused unless its SHA-256 is the one the daemon recorded. */
async function downloadShared(run: JobRun, cache: SharedCache, file: string): Promise<void> {
  const { url, headers } = run.api.cacheRequest(run.id, cache.id);
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(30 * 60_000) });
  if (!response.ok || !response.body) throw new Error(`Roost answered ${response.status} for the shared archive: ${(await response.text()).slice(0, 200)}`);
  const hash = createHash("sha256");
  const out = Bun.file(file).writer();
  for await (const chunk of response.body) {
    hash.update(chunk);
    out.write(chunk);
  }
  await out.end();
  const sha = hash.digest("hex");
  if (sha !== cache.sha256) throw new Error(`the shared archive's SHA-256 is ${sha}, not the recorded ${cache.sha256}`);
}

/** Uploads a new entry's archives for the project's other runners; refusals are said in the log. */
async function shareEntry(run: JobRun, dir: string): Promise<void> {
  const archive = `${dir}.sharing-${run.id}.tar`;
  try {
    await tar(["-cf", archive, "-C", dir, ...ARCHIVES.filter((a) => existsSync(join(dir, a)))]);
    const file = Bun.file(archive);
    const answer = await run.api.uploadCache(run.id, run.cacheKey!, cacheVersion(run), await sha256OfFile(file), file.size, () => file.stream());
    if (answer.ok) run.system("", `[roost] cache: shared ${run.cacheKey!.slice(0, 12)} with the project's runners (${mib(file.size)})`);
    // cache_exists: another build saved it, or this upload did and its answer was lost (a retry through a load balancer).
    else if (answer.code === "cache_exists") run.system("", `[roost] cache: ${run.cacheKey!.slice(0, 12)} is already shared with the project's runners`);
    else run.system("", `[roost] cache: not shared: ${answer.status} ${answer.code}: ${answer.message}`);
  } catch (error) {
    run.system("", `[roost] cache: not shared: ${(error as Error).message}`);
  } finally {
    rmSync(archive, { force: true });
  }
}

export function removeCacheHomes(run: Pick<JobRun, "options" | "id">): void {
  rmSync(cacheHomes(run), { recursive: true, force: true });
}

async function tar(args: string[]): Promise<void> {
  const p = Bun.spawn(["tar", ...args], { stdout: "ignore", stderr: "pipe" });
  const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`tar ${args[0]} exited with ${code}: ${err.trim().split("\n")[0]}`);
}

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
