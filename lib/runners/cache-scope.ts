// Which dependency caches a build may read and write (docs/runners.md "Caches"), shared by the
// runner's own disk (runner/job/cache.ts) and the daemon's shared caches (lib/caches/store.ts).
// A build writes its own scope (its branch; a tag; a pull request's own ref, never the branch
// name a fork chose) and reads it and the default branch's, as GitHub scopes caches; a tag build
// also reads other tags'. No build reads another's pull-request entries: a pull request cannot
// plant a cache that a trusted build restores. Git refuses ':' in a ref name
// (https://git-scm.com/docs/git-check-ref-format), so no branch is named like a tag's or a pull
// request's scope.

export interface ScopedBuild {
  trigger_event: string;
  trigger_ref: string;
  branch: string;
}

/** The build's scope: its branch, tag:<name> for a tag, or for a pull request its own ref. */
export function cacheScope(build: ScopedBuild): string {
  if (build.trigger_event === "pull_request") return `pull_request:${build.trigger_ref}`;
  if (build.trigger_event === "tag") return `tag:${build.branch}`;
  return build.branch;
}

/** How near an entry's scope is to a build's: 0 its own, 1 the default branch, 2 another tag (a tag build); null when it may not read it. */
export function scopeNearness(entryScope: string, scope: string, defaultBranch: string): number | null {
  if (entryScope === scope) return 0;
  if (defaultBranch && entryScope === defaultBranch) return 1;
  if (scope.startsWith("tag:") && entryScope.startsWith("tag:")) return 2;
  return null;
}
