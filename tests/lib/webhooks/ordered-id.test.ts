// The ids of a push's delivery and builds (lib/webhooks/ordered-id.ts): the shape every Roost id
// has (docs/api.md "Conventions": 20 base62 characters), in the order they were made.
import { expect, test } from "bun:test";
import { timeOrderedId } from "../../../lib/webhooks/ordered-id.ts";

test("an id is 20 base62 characters, led by its time, then random", () => {
  const ids = Array.from({ length: 1000 }, () => timeOrderedId(1_800_000_000_123));
  for (const id of ids) expect(id).toMatch(/^[0-9A-Za-z]{20}$/);
  expect(new Set(ids.map((id) => id.slice(0, 7))).size).toBe(1);
  expect(new Set(ids).size).toBe(1000);
});

test("ids made later sort after, as SQLite compares text (BINARY) and across a carry of every digit", () => {
  const times = [0, 1, 61, 62, 63, 3843, 3844, 1_800_000_000_000, 1_800_000_000_001, 62 ** 7 - 1];
  const ids = times.map((ms) => timeOrderedId(ms));
  expect([...ids].sort()).toEqual(ids);
  for (let i = 1; i < ids.length; i++) expect(ids[i - 1]! < ids[i]!).toBe(true);
});
