// plainLogBatch (lib/runners/protocol-wire.ts) takes a log batch without zod when it plainly fits
// LogAppendRequest: what it answers must be what the schema makes of the same body, and whatever
// the schema refuses it must leave to the schema (null), so that the refusal is worded the same.
import { expect, test } from "bun:test";
import { LogAppendRequest, plainLogBatch } from "../../../lib/runners/protocol-wire.ts";

const fits: unknown[] = [
  { first_line: 0, lines: [] },
  { first_line: 7, lines: [{ text: "hello" }] },
  { first_line: 0, lines: [{ step: "build", stream: "stderr", ts: 1_800_000_000, text: "" }, { text: "x".repeat(65_536) }] },
  { first_line: 2, lines: [{ step: "s".repeat(100), stream: "system", text: "é ✓ \u0000" }] },
  { first_line: Number.MAX_SAFE_INTEGER, lines: Array.from({ length: 10_000 }, (_, i) => ({ text: `line ${i}` })) },
];

const refused: unknown[] = [
  null,
  [],
  "batch",
  { lines: [] },
  { first_line: -1, lines: [] },
  { first_line: 1.5, lines: [] },
  { first_line: "0", lines: [] },
  { first_line: 0 },
  { first_line: 0, lines: {} },
  { first_line: 0, lines: [], extra: true },
  { first_line: 0, lines: Array.from({ length: 10_001 }, () => ({ text: "" })) },
  { first_line: 0, lines: [null] },
  { first_line: 0, lines: [[]] },
  { first_line: 0, lines: [{}] },
  { first_line: 0, lines: [{ text: 1 }] },
  { first_line: 0, lines: [{ text: "x".repeat(65_537) }] },
  { first_line: 0, lines: [{ text: "", step: null }] },
  { first_line: 0, lines: [{ text: "", step: "s".repeat(101) }] },
  { first_line: 0, lines: [{ text: "", stream: "stdin" }] },
  { first_line: 0, lines: [{ text: "", ts: 1.5 }] },
  { first_line: 0, lines: [{ text: "", ts: null }] },
  { first_line: 0, lines: [{ text: "", colour: "red" }] },
  { first_line: 0, lines: [{ text: "ok" }, { text: "ok", extra: 1 }] },
];

test("a batch that fits is taken as the schema takes it", () => {
  for (const body of fits) {
    const plain = plainLogBatch(structuredClone(body));
    expect(plain).not.toBeNull();
    expect(plain).toEqual(LogAppendRequest.parse(structuredClone(body)));
  }
});

test("whatever the schema refuses is left to the schema", () => {
  for (const body of refused) {
    expect(LogAppendRequest.safeParse(structuredClone(body)).success).toBe(false);
    expect(plainLogBatch(structuredClone(body))).toBeNull();
  }
});
