// The neutral event every forge's delivery becomes (lib/forges/event.ts).
import { describe, expect, test } from "bun:test";
import { requestsSkipCi } from "../../../lib/forges/event.ts";

describe("[skip ci]", () => {
  test.each([
    ["fix typo [skip ci]", true],
    ["[CI SKIP] docs", true],
    ["wip [skip-ci]", true],
    ["skip ci without brackets", false],
    ["[skip cd]", false],
  ])("%p → %p", (message, expected) => expect(requestsSkipCi(message)).toBe(expected));
});
