// The sentences a validation problem is reported with, written for the person who filled in the
// form or the file ("name is required", "must be one of android, ios or macos") instead of zod's
// defaults ("Invalid input: expected string, received undefined"). Passed as the per-parse error
// map (`schema.safeParse(value, { error: readableIssue })`), so a schema's own message, where one
// is written, still wins: zod asks a schema's message first, then the per-parse map
// (https://zod.dev/error-customization, "Error precedence").
import type { z } from "zod";

type RawIssue = z.core.$ZodRawIssue;

const TYPE_NAMES: Record<string, string> = {
  string: "text",
  number: "a number",
  int: "a whole number",
  bigint: "a whole number",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  date: "a date",
  null: "null",
  undefined: "absent",
};

/** What a value is, as a person would name it: "text", "a number", "a list", "null". */
function kindOf(input: unknown): string {
  if (input === null) return "null";
  if (Array.isArray(input)) return "a list";
  if (typeof input === "number") return Number.isInteger(input) ? "a number" : "a number with a fraction";
  return TYPE_NAMES[typeof input] ?? typeof input;
}

/** "a, b or c". */
function joinOr(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

/** "android, ios or macos" (strings that read as words stay bare; others are quoted). */
function choices(values: readonly unknown[]): string {
  return joinOr(values.map((v) => (typeof v === "string" && /^[\w./*-]+$/.test(v) ? v : JSON.stringify(v))));
}

/** The field a missing value belongs to: the last name on its path ("env.0.key" → "key"). */
function fieldName(path: readonly PropertyKey[] | undefined): string | null {
  const names = (path ?? []).filter((p): p is string => typeof p === "string");
  return names[names.length - 1] ?? null;
}

const plural = (n: number | bigint, one: string, many: string) => `${n} ${Number(n) === 1 ? one : many}`;

function sized(origin: string, bound: number | bigint, inclusive: boolean | undefined, direction: "least" | "most"): string {
  const n = inclusive === false ? (direction === "least" ? Number(bound) + 1 : Number(bound) - 1) : bound;
  if (origin === "string")
    return direction === "least" && Number(n) === 1 ? "must not be empty" : `must be at ${direction} ${plural(n, "character", "characters")} long`;
  if (origin === "array" || origin === "set")
    return direction === "least" && Number(n) === 1 ? "must not be empty" : `must have at ${direction} ${plural(n, "entry", "entries")}`;
  if (origin === "number" || origin === "int" || origin === "bigint") {
    if (inclusive === false) return `must be ${direction === "least" ? "more" : "less"} than ${bound}`;
    return `must be at ${direction} ${bound}`;
  }
  return `must be at ${direction} ${bound}`;
}

const FORMATS: Record<string, string> = {
  email: "must be a valid e-mail address",
  url: "must be a URL",
  uuid: "must be a UUID",
  datetime: "must be a date and time (ISO 8601)",
  date: "must be a date (YYYY-MM-DD)",
  ipv4: "must be an IPv4 address",
  ipv6: "must be an IPv6 address",
  cidrv4: "must be an IPv4 range (CIDR)",
  cidrv6: "must be an IPv6 range (CIDR)",
  base64: "must be base64",
  jwt: "must be a JSON Web Token",
};

/** The sentence for one issue; it never names zod's internals. */
export function readableIssue(issue: RawIssue): string {
  switch (issue.code) {
    case "invalid_type": {
      const expected = TYPE_NAMES[issue.expected] ?? issue.expected;
      if (issue.input === undefined) return `${fieldName(issue.path) ?? "a value"} is required`;
      return `must be ${expected}, not ${kindOf(issue.input)}`;
    }
    case "too_small":
      return sized(issue.origin, issue.minimum, issue.inclusive, "least");
    case "too_big":
      return sized(issue.origin, issue.maximum, issue.inclusive, "most");
    case "invalid_format": {
      const f = issue as typeof issue & { prefix?: string; suffix?: string; includes?: string };
      if (issue.format === "starts_with") return `must start with "${f.prefix}"`;
      if (issue.format === "ends_with") return `must end with "${f.suffix}"`;
      if (issue.format === "includes") return `must contain "${f.includes}"`;
      return FORMATS[issue.format] ?? "is not in the expected format";
    }
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return `unknown ${issue.keys.length === 1 ? "field" : "fields"} ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${choices(issue.values)}` : `must be one of ${choices(issue.values)}`;
    case "invalid_union": {
      // Every alternative wanted another type: name them ("must be text or a number, not an object").
      const expected = issue.errors.map((branch) =>
        branch.length === 1 && branch[0]!.code === "invalid_type" && branch[0]!.path.length === 0 ? branch[0]!.expected : null,
      );
      if (issue.input === undefined) return `${fieldName(issue.path) ?? "a value"} is required`;
      if (expected.length > 0 && expected.every((e) => e !== null))
        return `must be ${joinOr([...new Set(expected.map((e) => TYPE_NAMES[e!] ?? e!))])}, not ${kindOf(issue.input)}`;
      return "is not any of the accepted forms";
    }
    case "invalid_key":
      return "has a key that is not valid";
    case "invalid_element":
      return "has an entry that is not valid";
    default:
      return "is not valid";
  }
}
