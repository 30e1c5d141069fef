// The build state machine, in one place (docs/api.md "Builds").
//
//   queued ──start──▶ running ──succeed──▶ succeeded
//     ▲◀───release───────┘ (a stopping runner hands back a job before its first step)
//     │                 │ ──fail─────▶ failed
//     │── fail ────────▶ failed          (e.g. no runner can ever take it)
//     └── cancel ──────▶ canceled ◀── cancel ── running
//
// Each transition owns its timestamps: `start` sets started_at; `succeed`, `fail` and `cancel`
// set finished_at; `release` clears started_at and the runner, as if the build had never started. Finished builds never move again; a re-run is a new build.
export const BUILD_STATUSES = ["queued", "running", "succeeded", "failed", "canceled"] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];

export const FINISHED_STATUSES: readonly BuildStatus[] = ["succeeded", "failed", "canceled"];

export type BuildTransition = "start" | "succeed" | "fail" | "cancel" | "release";

const TRANSITIONS: Record<BuildTransition, { from: readonly BuildStatus[]; to: BuildStatus }> = {
  start: { from: ["queued"], to: "running" },
  succeed: { from: ["running"], to: "succeeded" },
  fail: { from: ["queued", "running"], to: "failed" },
  cancel: { from: ["queued", "running"], to: "canceled" },
  release: { from: ["running"], to: "queued" },
};

export function nextStatus(from: BuildStatus, transition: BuildTransition): BuildStatus | null {
  const rule = TRANSITIONS[transition];
  return rule.from.includes(from) ? rule.to : null;
}

export function allowedFrom(transition: BuildTransition): readonly BuildStatus[] {
  return TRANSITIONS[transition].from;
}

export function isFinished(status: BuildStatus): boolean {
  return FINISHED_STATUSES.includes(status);
}
