// The build state machine (lib/builds/state-machine.ts): every transition from every status.
import { describe, expect, test } from "bun:test";
import { BUILD_STATUSES, nextStatus, type BuildStatus, type BuildTransition } from "../../../lib/builds/state-machine.ts";

const expected: Record<BuildStatus, Partial<Record<BuildTransition, BuildStatus>>> = {
  queued: { start: "running", fail: "failed", cancel: "canceled" },
  running: { succeed: "succeeded", fail: "failed", cancel: "canceled", release: "queued" },
  succeeded: {},
  failed: {},
  canceled: {},
};

describe("nextStatus", () => {
  for (const from of BUILD_STATUSES) {
    for (const t of ["start", "succeed", "fail", "cancel", "release"] as const) {
      const to = expected[from][t] ?? null;
      test(`${from} --${t}--> ${to ?? "refused"}`, () => expect(nextStatus(from, t)).toBe(to));
    }
  }
});
