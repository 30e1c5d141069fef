// Branch filters for pipeline triggers, with GitHub Actions' filter semantics (docs/api.md
// "Branch patterns"):
//   *   any characters except "/"          main, release-*
//   **  any characters, "/" included       release/**, **
//   ?   one character except "/"           v?
//   [ ] one character of a set or range     v[0-9]*
//   { } one of several alternatives         {main,develop}
//   !   at the start: a negative pattern   !release/old-*
// Patterns are evaluated in order; the last one that matches decides, so a positive after a
// negative re-includes ("release/**", "!release/**-alpha", "release/1.0-alpha"). A branch that
// no positive pattern matches does not match. Tags never go through branch filters, and a pull
// request is matched on its target branch (the caller passes that branch).

export interface BranchMatch {
  matched: boolean;
  /** A sentence for the delivery log, e.g. "branch feature/x not in [main, release/*]". */
  reason: string;
}

const cache = new Map<string, Bun.Glob>();

/** Bun's built-in glob matcher: `*` stops at "/", `**` crosses it, `[0-9]` and `{a,b}` work as in a shell. */
function compiled(glob: string): Bun.Glob {
  let g = cache.get(glob);
  if (!g) {
    if (cache.size > 1000) cache.clear();
    cache.set(glob, (g = new Bun.Glob(glob)));
  }
  return g;
}

export function matchBranchPatterns(patterns: string[], branch: string): BranchMatch {
  let matched = false;
  let decidedBy: string | null = null;
  for (const pattern of patterns) {
    const negative = pattern.startsWith("!");
    const glob = negative ? pattern.slice(1) : pattern;
    if (compiled(glob).match(branch)) {
      matched = !negative;
      decidedBy = pattern;
    }
  }
  const list = `[${patterns.join(", ")}]`;
  if (matched) return { matched, reason: `branch ${branch} matches ${decidedBy} in ${list}` };
  if (decidedBy) return { matched, reason: `branch ${branch} is excluded by ${decidedBy} in ${list}` };
  return { matched, reason: `branch ${branch} not in ${list}` };
}
