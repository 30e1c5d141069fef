// Branch filters for pipeline triggers, with GitHub Actions' filter semantics (docs/api.md
// "Branch patterns"):
//   *   any characters except "/"          main, release-*
//   **  any characters, "/" included       release/**, **
//   ?   one character except "/"           v?
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

const cache = new Map<string, RegExp>();

export function globToRegExp(glob: string): RegExp {
  let re = cache.get(glob);
  if (re) return re;
  let out = "^";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        // "**/" also matches nothing, so "release/**/rc" matches "release/rc".
        if (glob[i + 2] === "/") {
          out += "(?:.*/)?";
          i += 2;
        } else {
          out += ".*";
          i += 1;
        }
      } else out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else out += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  re = new RegExp(out + "$");
  if (cache.size > 1000) cache.clear();
  cache.set(glob, re);
  return re;
}

export function matchBranchPatterns(patterns: string[], branch: string): BranchMatch {
  let matched = false;
  let decidedBy: string | null = null;
  for (const pattern of patterns) {
    const negative = pattern.startsWith("!");
    const glob = negative ? pattern.slice(1) : pattern;
    if (globToRegExp(glob).test(branch)) {
      matched = !negative;
      decidedBy = pattern;
    }
  }
  const list = `[${patterns.join(", ")}]`;
  if (matched) return { matched, reason: `branch ${branch} matches ${decidedBy} in ${list}` };
  if (decidedBy) return { matched, reason: `branch ${branch} is excluded by ${decidedBy} in ${list}` };
  return { matched, reason: `branch ${branch} not in ${list}` };
}
