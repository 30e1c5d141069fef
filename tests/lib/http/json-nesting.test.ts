// nestingExceeds (lib/http/io.ts): the depth guard every JSON body passes before JSON.parse. It
// skips strings with indexOf, so what counts as inside a string is the tricky part: escaped quotes,
// runs of backslashes, and brackets inside strings.
import { describe, expect, test } from "bun:test";
import { nestingExceeds } from "../../../lib/http/io.ts";

const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth);

describe("nestingExceeds", () => {
  test("counts arrays and objects, and allows exactly the limit", () => {
    expect(nestingExceeds(nested(3), 3)).toBe(false);
    expect(nestingExceeds(nested(4), 3)).toBe(true);
    expect(nestingExceeds('{"a":{"b":{"c":{}}}}', 3)).toBe(true);
    expect(nestingExceeds('{"a":{"b":{"c":1}}}', 3)).toBe(false);
  });

  test("siblings do not add up: depth returns when a bracket closes", () => {
    expect(nestingExceeds(`[${Array(100).fill("[1]").join(",")}]`, 2)).toBe(false);
  });

  test("brackets inside strings do not count", () => {
    expect(nestingExceeds(`["${"[{".repeat(100)}"]`, 2)).toBe(false);
    expect(nestingExceeds(`{"${"[".repeat(100)}":1}`, 2)).toBe(false);
  });

  test("an escaped quote does not end a string, an escaped backslash before a quote does", () => {
    // "a\"[[[" is one string: the brackets are text.
    expect(nestingExceeds(String.raw`["a\"[[[", 1]`, 1)).toBe(false);
    // "a\\" ends after the two backslashes: the brackets after it are structure.
    expect(nestingExceeds(String.raw`["a\\", [[[1]]]]`, 3)).toBe(true);
    expect(nestingExceeds(String.raw`["a\\\"[[[", 1]`, 1)).toBe(false);
  });

  test("a string that never closes stops the scan (JSON.parse refuses the body)", () => {
    expect(nestingExceeds(`["${"[".repeat(100)}`, 2)).toBe(false);
  });

  test("a log batch of long lines is not deep", () => {
    const line = { step: "build", stream: "stdout", text: 'x"[{'.repeat(1000) };
    expect(nestingExceeds(JSON.stringify({ first_line: 0, lines: Array(500).fill(line) }), 64)).toBe(false);
  });
});
