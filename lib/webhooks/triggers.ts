// Which pipelines a verified delivery starts, and why each does or does not (docs/webhooks.md
// "What builds"): the decision is explained per pipeline for the delivery log.
import type { TriggerEvent } from "../forges/event.ts";
import { requestsSkipCi } from "../forges/event.ts";
import type { Pipeline } from "../pipelines/store.ts";
import { matchBranchPatterns } from "../pipelines/branch-patterns.ts";

export interface PipelineDecision {
  pipeline_id: string;
  pipeline_name: string;
  build: boolean;
  reason: string;
  build_id?: string;
  build_number?: number;
  /** The pipeline file this pipeline reads was invalid or unreadable at the commit (reason says why). */
  file_problem?: true;
}

/** The reason a whole delivery builds nothing, before looking at pipelines; null when pipelines decide. */
export function deliveryLevelReason(event: TriggerEvent): string | null {
  if (event.kind === null) return event.ignoredReason ?? "the event brings no new commit";
  if (event.identityConflict) return `ambiguous repository identity: ${event.identityConflict}`;
  if (requestsSkipCi(event.message)) return `[skip ci] in the ${event.kind === "pull_request" ? "pull request title" : "head commit message"}`;
  return null;
}

export function decideForPipeline(event: TriggerEvent, pipeline: Pipeline): PipelineDecision {
  const d = (build: boolean, reason: string): PipelineDecision => ({ pipeline_id: pipeline.id, pipeline_name: pipeline.name, build, reason });
  const kind = event.kind!;
  if (!pipeline.enabled) return d(false, "pipeline is disabled");
  if (!pipeline.trigger_config.events.includes(kind)) return d(false, `event ${kind} not in [${pipeline.trigger_config.events.join(", ")}]`);
  // Tags match the tag event, never branch patterns.
  if (kind === "tag") return d(true, `tag ${event.tag} matches event tag`);
  const match = matchBranchPatterns(pipeline.trigger_config.branches, event.branch ?? "");
  if (!match.matched) return d(false, kind === "pull_request" ? `target ${match.reason}` : match.reason);
  return d(true, kind === "pull_request" ? `pull request #${event.prNumber} into ${event.branch}: ${match.reason}` : match.reason);
}

/** cancel_previous groups: a branch for pushes, the pull request for pull requests, none for tags. */
export function concurrencyKeyOf(event: TriggerEvent): string | null {
  if (event.kind === "push") return `branch:${event.branch}`;
  if (event.kind === "pull_request") return `pr:${event.prNumber}`;
  return null;
}
