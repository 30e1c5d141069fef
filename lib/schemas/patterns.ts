// The patterns people write into pipelines, publishers and variables, validated alike. Only zod:
// the runner reads pipeline configurations too (tests/lib/layout.test.ts keeps it out of the daemon's layers).
import { z } from "zod";

/**
 * A branch or tag name keeps at most this many characters wherever Roost takes one: the API's
 * branch fields (BranchName) and a delivery's branch or tag (boundedEvent in lib/forges/event.ts).
 * Git sets no limit (https://git-scm.com/docs/git-check-ref-format); a longer name is refused, never cut.
 */
export const BRANCH_NAME_CHARS = 255;

/** A pattern people write (a branch or ref pattern, a glob): trimmed, 1–255 characters, no control characters. */
export const PatternText = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

/** A glob over paths relative to the checkout (test reports, a publisher's artifacts): never absolute, never climbing out. */
export const CheckoutGlob = PatternText.refine((p) => !p.startsWith("/") && !p.split("/").includes(".."), "must be relative to the checkout");

/** A superRefine that reports the problem `problemOf` finds in a value (null: none), in its words. */
export function problemCheck(problemOf: (value: string) => string | null): (value: string, ctx: z.RefinementCtx) => void {
  return (value, ctx) => {
    const problem = problemOf(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  };
}
