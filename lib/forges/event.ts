// One neutral shape for what a delivery (or a poll that saw a ref move) means to Roost, produced by
// lib/forges/<forge>/parse.ts and lib/forges/git/poll.ts from verified payloads and consumed by lib/webhooks/triggers.ts.
import { z } from "zod";
import { readableIssue } from "../http/validation-messages.ts";
import type { ForgeName } from "./registry.ts";
export type TriggerKind = "push" | "pull_request" | "tag";

export interface TriggerEvent {
  forge: ForgeName;
  /** The forge's event name (X-GitHub-Event / object_kind) and action, for the delivery log. */
  event: string;
  action: string;
  /** What this delivery can trigger; null when it proves no new revision (ignoredReason says why). */
  kind: TriggerKind | null;
  ignoredReason: string | null;
  /** The repository as the payload names it (its id at the forge). */
  repository: { externalId: string | null; fullName: string | null };
  /** Set when ids inside the payload disagree about which repository this is. */
  identityConflict: string | null;
  /** push: the branch; pull_request: the TARGET branch; tag: null. */
  branch: string | null;
  tag: string | null;
  ref: string;
  commitSha: string | null;
  actor: string;
  changelog: string;
  prNumber: number | null;
  /** A pull request whose head is another repository: its build never receives secrets (lib/variables/variables.ts). */
  fromFork?: boolean;
  /** Head commit message (push/tag) or title (pull request), for [skip ci]. */
  message: string;
  /**
   * A branch push whose payload lists every commit from the branch's previous head to the pushed
   * one, with the paths each added, modified or removed (pushedPathsOf in the forge's parse.ts):
   * a file at any other path is the same at `commitSha` as at `before`. Absent when the list may
   * be incomplete or the push rewrote history.
   */
  pushed?: PushedPaths;
}

/** The previous head of a pushed branch, and every path the pushed commits touched. */
export interface PushedPaths {
  before: string;
  paths: ReadonlySet<string>;
}

/** `[skip ci]` / `[ci skip]` (and `-` forms), case-insensitive, as GitHub, GitLab and Woodpecker honour it. */
export function requestsSkipCi(message: string): boolean {
  return /\[(skip[ -]ci|ci[ -]skip)\]/i.test(message);
}

/**
 * A changelog line's subject and author keep at most this many characters each. A payload's commit
 * message has no length limit (a generated commit's may be megabytes on one line), and a build
 * keeps its changelog: a libSQL server refuses a value over about 4 MB, so such a push could not
 * be built there, and every list of builds would carry it.
 */
export const CHANGELOG_FIELD_CHARS = 1_000;

/** `text` cut to CHANGELOG_FIELD_CHARS, ending in "…" when cut (never inside a surrogate pair). */
function clipped(text: string): string {
  if (text.length <= CHANGELOG_FIELD_CHARS) return text;
  const cut = /[\uD800-\uDBFF]/.test(text[CHANGELOG_FIELD_CHARS - 2]!) ? CHANGELOG_FIELD_CHARS - 2 : CHANGELOG_FIELD_CHARS - 1;
  return `${text.slice(0, cut)}…`;
}

/** One line per commit: "abc1234 subject (author)", newest last, at most 50 lines, each subject and author clipped (CHANGELOG_FIELD_CHARS). */
export function changelogOf(commits: { id?: string; message?: string; author?: { name?: string } }[]): string {
  const lines = commits.slice(-50).map((c) => changelogLine(c.id ?? "", c.message ?? "", c.author?.name));
  return lines.join("\n");
}

/** "abc1234 subject (author)": the commit's first 7 characters, its message's first line, clipped. */
export function changelogLine(id: string, message: string, author?: string): string {
  const end = message.indexOf("\n");
  const subject = end < 0 ? message : message.slice(0, end);
  return `${id.slice(0, 7)} ${clipped(subject)}${author ? ` (${clipped(author)})` : ""}`;
}

export function ignored(base: Omit<TriggerEvent, "kind" | "ignoredReason">, reason: string): TriggerEvent {
  return { ...base, kind: null, ignoredReason: reason };
}

/** One way a payload differs from what the forge sends, e.g. {path: "body.commits.0", message: "must be an object, not null"}. */
export interface PayloadIssue {
  path: string;
  message: string;
}

/** A verified payload that is not what the forge sends: the receiver answers 400 invalid_payload. */
export class InvalidPayload extends Error {
  constructor(readonly issues: PayloadIssue[]) {
    super(`${issues[0]?.path ?? "body"}: ${issues[0]?.message ?? "invalid"}`);
  }
}

/**
 * Checks the fields Roost reads against `schema`; unknown fields pass untouched (the forges add
 * fields over time). Throws InvalidPayload with one issue per problem.
 */
export function checkPayload<S extends z.ZodType>(schema: S, payload: unknown): z.output<S> {
  const result = schema.safeParse(payload, { error: readableIssue });
  if (result.success) return result.data;
  throw new InvalidPayload(result.error.issues.map((issue) => ({ path: ["body", ...issue.path.map(String)].join("."), message: issue.message })));
}

/** Numeric ids at the forge; some payloads (and older GitLab versions) send them as strings. */
export const NumericId = z.union([z.number().int(), z.string().regex(/^\d{1,20}$/)]);

/** A commit as GitHub, GitLab and Gitea list it in push payloads. */
export const PayloadCommit = z.looseObject({
  id: z.string(),
  message: z.string().optional(),
  author: z.looseObject({ name: z.string().nullish() }).nullish(),
});
