// Which runner may take which build (docs/runners.md "Routing"): ios and macos builds need a
// macOS runner (and Xcode); a pipeline's execution_config.runner_labels must all be among the
// runner's labels; the Flutter version is not a routing rule: a runner installs a version it lacks (runner/job/flutter.ts).
//
// What routing reads of a build is its route: the Apple platforms and the labels it needs. Each
// build stores its route as JSON (builds.runner_route, schema.sql migration 21), so the claim asks
// each distinct route of the queue once instead of each queued build (lib/runners/jobs.ts).
import type { Runner } from "./store.ts";
import { allLabels } from "./store.ts";
import type { ConfigSnapshot } from "../pipelines/config.ts";

export interface Route {
  /** The build's ios and macos platforms, in its order. */
  apple: string[];
  labels: string[];
}

export function routeOf(snapshot: ConfigSnapshot): Route {
  return { apple: snapshot.execution_config.platforms.filter((p) => p === "ios" || p === "macos"), labels: snapshot.execution_config.runner_labels ?? [] };
}

/** The stored form: the same route is the same text, so the queue groups builds by it. */
export function routeKey(route: Route): string {
  return JSON.stringify({ apple: route.apple, labels: route.labels });
}

/** A stored route; one that does not parse asks for a label no runner has, so nothing takes it by mistake. */
export function parseRouteKey(key: string): Route {
  try {
    const value = JSON.parse(key) as Partial<Route>;
    if (Array.isArray(value.apple) && Array.isArray(value.labels)) return { apple: value.apple.map(String), labels: value.labels.map(String) };
  } catch {
    // below
  }
  return { apple: [], labels: [`(unreadable route ${key})`] };
}

/** Null when the runner can take builds of this route, else why not (a sentence for runner_policy_block_reason). */
export function whyRunnerCannotTakeRoute(runner: Runner, route: Route): string | null {
  const os = runner.capabilities.os ?? "";
  if (route.apple.length && os !== "macos") return `${route.apple.join(" and ")} builds need a macOS runner`;
  if (route.apple.length && !runner.capabilities.xcode) return `${route.apple.join(" and ")} builds need Xcode on the runner`;
  const has = new Set(allLabels(runner));
  const missing = route.labels.filter((l) => !has.has(l));
  if (missing.length) return `no runner label ${missing.join(", ")}`;
  return null;
}

/** Null when the runner can take the build, else why not. */
export function whyRunnerCannotTake(runner: Runner, snapshot: ConfigSnapshot): string | null {
  return whyRunnerCannotTakeRoute(runner, routeOf(snapshot));
}

/** Why no live runner can take the build, or null when one can. */
export function whyNobodyCanTake(runners: Runner[], snapshot: ConfigSnapshot): string | null {
  if (runners.length === 0) return "no runner is connected";
  const reasons = runners.map((r) => whyRunnerCannotTake(r, snapshot));
  if (reasons.some((r) => r === null)) return null;
  return `no connected runner can take it: ${[...new Set(reasons)].join("; ")}`;
}
