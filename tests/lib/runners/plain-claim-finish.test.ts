// plainClaim and plainFinish (lib/runners/protocol-wire.ts) take a runner's claim and finish
// without zod when they plainly fit ClaimRequest and FinishRequest, as plainLogBatch takes a log
// batch: what they answer must be what the schema makes of the same body, and whatever the schema
// refuses they must leave to the schema (null), so that the refusal is worded the same.
import { expect, test } from "bun:test";
import { ClaimRequest, FinishRequest, plainClaim, plainFinish } from "../../../lib/runners/protocol-wire.ts";

const sdk = { requested: "3.24.5", version: "3.24.5", source: "path", revision: null };
const executor = {
  kind: "container",
  engine: "podman 4.3.1",
  image: "ghcr.io/cirruslabs/flutter:3.24.5",
  image_digest: "ghcr.io/cirruslabs/flutter@sha256:" + "a".repeat(64),
  network: "none",
  limits: { cpus: 2.5, memory_mb: 4096, pids: null, disk_mb: null },
  error: null,
};

const cases = [
  {
    name: "claim",
    schema: ClaimRequest,
    plain: plainClaim,
    fits: [
      { claim_id: crypto.randomUUID(), wait_seconds: 0 },
      { claim_id: "12345678" },
      { claim_id: "c".repeat(64), wait_seconds: 30, accepts: ["build", "publish"] },
      { claim_id: crypto.randomUUID(), accepts: ["publish"] },
    ],
    refused: [
      null,
      [],
      "claim",
      {},
      { claim_id: "1234567" },
      { claim_id: "c".repeat(65) },
      { claim_id: 12345678 },
      { claim_id: crypto.randomUUID(), wait_seconds: 31 },
      { claim_id: crypto.randomUUID(), wait_seconds: -1 },
      { claim_id: crypto.randomUUID(), wait_seconds: 1.5 },
      { claim_id: crypto.randomUUID(), wait_seconds: "5" },
      { claim_id: crypto.randomUUID(), wait_seconds: null },
      { claim_id: crypto.randomUUID(), accepts: [] },
      { claim_id: crypto.randomUUID(), accepts: ["build", "publish", "build"] },
      { claim_id: crypto.randomUUID(), accepts: ["deploy"] },
      { claim_id: crypto.randomUUID(), accepts: "build" },
      { claim_id: crypto.randomUUID(), extra: true },
    ],
  },
  {
    name: "finish",
    schema: FinishRequest,
    plain: plainFinish,
    fits: [
      { status: "succeeded", exit_code: 0, line_count: 0 },
      { status: "failed", exit_code: -1, line_count: 12, failure_reason: "x".repeat(500) },
      { status: "canceled", exit_code: 143, line_count: 3, flutter_sdk: sdk, executor },
      {
        status: "succeeded",
        exit_code: 0,
        line_count: 1,
        executor: { ...executor, kind: "host", engine: null, image: null, image_digest: null, network: null, limits: null },
      },
      {
        status: "failed",
        exit_code: 1,
        line_count: 1,
        flutter_sdk: { ...sdk, source: "installed", revision: "f".repeat(40) },
        executor: { ...executor, error: "no engine" },
      },
    ],
    refused: [
      null,
      [],
      {},
      { status: "done", exit_code: 0, line_count: 0 },
      { status: "succeeded", exit_code: 0.5, line_count: 0 },
      { status: "succeeded", exit_code: "0", line_count: 0 },
      { status: "succeeded", exit_code: 0 },
      { status: "succeeded", exit_code: 0, line_count: -1 },
      { status: "succeeded", exit_code: 0, line_count: 0, failure_reason: "x".repeat(501) },
      { status: "succeeded", exit_code: 0, line_count: 0, failure_reason: null },
      { status: "succeeded", exit_code: 0, line_count: 0, extra: 1 },
      { status: "succeeded", exit_code: 0, line_count: 0, flutter_sdk: null },
      { status: "succeeded", exit_code: 0, line_count: 0, flutter_sdk: { ...sdk, source: "brew" } },
      { status: "succeeded", exit_code: 0, line_count: 0, flutter_sdk: { ...sdk, requested: "x".repeat(41) } },
      { status: "succeeded", exit_code: 0, line_count: 0, flutter_sdk: { ...sdk, extra: 1 } },
      { status: "succeeded", exit_code: 0, line_count: 0, flutter_sdk: { requested: "3", version: "3", source: "path" } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, kind: "vm" } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, network: "host" } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, image_digest: "x".repeat(401) } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, limits: { ...executor.limits, memory_mb: 1.5 } } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, limits: { cpus: 1 } } },
      { status: "succeeded", exit_code: 0, line_count: 0, executor: { ...executor, error: undefined } },
    ],
  },
];

for (const { name, schema, plain, fits, refused } of cases) {
  test(`a ${name} that fits is taken as the schema takes it`, () => {
    for (const body of fits) {
      const taken = plain(structuredClone(body));
      expect(taken).not.toBeNull();
      expect(taken).toEqual(schema.parse(structuredClone(body)) as never);
    }
  });

  test(`whatever the schema refuses of a ${name} is left to the schema, unchanged`, () => {
    for (const body of refused) {
      expect(schema.safeParse(structuredClone(body)).success).toBe(false);
      const given = structuredClone(body);
      expect(plain(given)).toBeNull();
      expect(given).toEqual(structuredClone(body));
    }
  });
}
