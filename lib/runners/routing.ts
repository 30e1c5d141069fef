// Which runner may take which build (docs/runners.md "Routing"): ios and macos builds need a
// macOS runner (and Xcode); a pipeline's execution_config.runner_labels must all be among the
// runner's labels; the Flutter version is not a routing rule: a runner installs a version it lacks (runner/job/flutter.ts).
import type { Runner } from "../db/runners.ts";
import { allLabels } from "../db/runners.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";

/** Null when the runner can take the build, else why not (a sentence for runner_policy_block_reason). */
export function whyRunnerCannotTake(runner: Runner, snapshot: ConfigSnapshot): string | null {
  const platforms = snapshot.execution_config.platforms;
  const os = runner.capabilities.os ?? "";
  const apple = platforms.filter((p) => p === "ios" || p === "macos");
  if (apple.length && os !== "macos") return `${apple.join(" and ")} builds need a macOS runner`;
  if (apple.length && !runner.capabilities.xcode) return `${apple.join(" and ")} builds need Xcode on the runner`;
  const wanted = snapshot.execution_config.runner_labels ?? [];
  const has = new Set(allLabels(runner));
  const missing = wanted.filter((l) => !has.has(l));
  if (missing.length) return `no runner label ${missing.join(", ")}`;
  return null;
}

/** Why no live runner can take the build, or null when one can. */
export function whyNobodyCanTake(runners: Runner[], snapshot: ConfigSnapshot): string | null {
  if (runners.length === 0) return "no runner is connected";
  const reasons = runners.map((r) => whyRunnerCannotTake(r, snapshot));
  if (reasons.some((r) => r === null)) return null;
  return `no connected runner can take it: ${[...new Set(reasons)].join("; ")}`;
}
