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
// request is matched on its target branch (the caller passes that branch). A variable's
// protected_refs use the same patterns for branches and name tags as refs/tags/… (matchRefPatterns).
import { PatternText, problemCheck } from "../schemas/patterns.ts";

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
  return lastMatch(
    patterns.map((pattern) => ({ pattern, glob: pattern })),
    "branch",
    branch,
    patterns,
  );
}

/** What a build is of, for protected_refs: a branch or a tag, by its short name. */
export interface BuildRef {
  kind: "branch" | "tag";
  name: string;
}

const REF_PREFIXES = { branch: "refs/heads/", tag: "refs/tags/" } as const;

/**
 * A variable's protected_refs (docs/secrets.md "Protected refs"): a plain pattern names branches,
 * exactly as a branch filter does, so protecting `master` does not protect a tag someone names
 * `master`. Tags are protected only when named as tags, by their full ref name as git spells it
 * (https://git-scm.com/book/en/v2/Git-Internals-Git-References) and GitHub's rulesets name them
 * (`refs/tags/v*`); `refs/heads/…` names branches the same way. `!` negates either, and the last
 * pattern that matches decides, as in branch filters.
 */
export function matchRefPatterns(patterns: string[], ref: BuildRef): BranchMatch {
  const mine: Array<{ pattern: string; glob: string }> = [];
  for (const pattern of patterns) {
    const negative = pattern.startsWith("!");
    const body = negative ? pattern.slice(1) : pattern;
    const kind = body.startsWith(REF_PREFIXES.tag) ? "tag" : "branch";
    if (kind !== ref.kind) continue;
    const rest = body.startsWith(REF_PREFIXES[kind]) ? body.slice(REF_PREFIXES[kind].length) : body;
    mine.push({ pattern, glob: negative ? `!${rest}` : rest });
  }
  return lastMatch(mine, ref.kind, ref.name, patterns);
}

/** Why a protected_refs pattern cannot match anything, or null. */
export function refPatternProblem(pattern: string): string | null {
  const body = pattern.startsWith("!") ? pattern.slice(1) : pattern;
  if (body === REF_PREFIXES.tag || body === REF_PREFIXES.branch) return `names no ${body === REF_PREFIXES.tag ? "tag" : "branch"} after ${body}`;
  if (body.startsWith("refs/") && !body.startsWith(REF_PREFIXES.tag) && !body.startsWith(REF_PREFIXES.branch))
    return "a full ref name starts with refs/heads/ (branches) or refs/tags/ (tags); a plain pattern names branches";
  return null;
}

/** One protected_refs pattern as the API takes it: it must be able to match something. */
export const RefPattern = PatternText.superRefine(problemCheck(refPatternProblem));

function lastMatch(entries: Array<{ pattern: string; glob: string }>, noun: string, name: string, shown: string[]): BranchMatch {
  let matched = false;
  let decidedBy: string | null = null;
  for (const { pattern, glob } of entries) {
    const negative = glob.startsWith("!");
    if (compiled(negative ? glob.slice(1) : glob).match(name)) {
      matched = !negative;
      decidedBy = pattern;
    }
  }
  const list = `[${shown.join(", ")}]`;
  if (matched) return { matched, reason: `${noun} ${name} matches ${decidedBy} in ${list}` };
  if (decidedBy) return { matched, reason: `${noun} ${name} is excluded by ${decidedBy} in ${list}` };
  return { matched, reason: `${noun} ${name} not in ${list}` };
}
