// One neutral shape for what a delivery (or a poll that saw a ref move) means to Roost, produced by
// lib/forges/<forge>/parse.ts and lib/forges/git/poll.ts from verified payloads and consumed by lib/webhooks/triggers.ts.
import { z } from "zod";
import { readableIssue } from "../http/validation-messages.ts";
import type { ForgeName } from "./registry.ts";
import { BRANCH_NAME_CHARS } from "../schemas/patterns.ts";
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

/** `text` cut to `max` characters (CHANGELOG_FIELD_CHARS unless told), ending in "…" when cut (never inside a surrogate pair). */
export function clipped(text: string, max = CHANGELOG_FIELD_CHARS): string {
  if (text.length <= max) return text;
  const cut = /[\uD800-\uDBFF]/.test(text[max - 2]!) ? max - 2 : max - 1;
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

/** A delivery's ref, and its repository's id and full name, keep at most this many characters; longer, it builds nothing (boundedEvent). */
export const REF_CHARS = 1_024;

/** A commit id keeps at most this many characters (a SHA-256 one has 64); longer, the delivery builds nothing (boundedEvent). */
export const COMMIT_ID_CHARS = 64;

/**
 * `event` with the limits every delivery has (docs/webhooks.md "Limits"), applied once to what any
 * forge's parse returns (lib/webhooks/receive.ts), since a payload's strings have no length limit:
 * - what names what is built (the branch or tag, the ref, the commit, the repository) is never cut,
 *   which would build another branch: over its limit (BRANCH_NAME_CHARS as POST /builds takes a
 *   branch, REF_CHARS, COMMIT_ID_CHARS), the delivery is ignored with the reason, and the record
 *   keeps the names cut;
 * - text only shown (the actor, the event and action names, reasons) is cut at
 *   CHANGELOG_FIELD_CHARS, as the changelog's subjects and authors are.
 */
export function boundedEvent(event: TriggerEvent): TriggerEvent {
  const { repository } = event;
  const tooLong =
    (event.branch !== null && event.branch.length > BRANCH_NAME_CHARS && `the branch name is ${event.branch.length} characters, over ${BRANCH_NAME_CHARS}`) ||
    (event.tag !== null && event.tag.length > BRANCH_NAME_CHARS && `the tag name is ${event.tag.length} characters, over ${BRANCH_NAME_CHARS}`) ||
    (event.ref.length > REF_CHARS && `the ref is ${event.ref.length} characters, over ${REF_CHARS}`) ||
    (event.commitSha !== null &&
      event.commitSha.length > COMMIT_ID_CHARS &&
      `the commit id is ${event.commitSha.length} characters, over ${COMMIT_ID_CHARS}`) ||
    ((repository.externalId?.length ?? 0) > REF_CHARS && `the repository id is ${repository.externalId!.length} characters, over ${REF_CHARS}`) ||
    ((repository.fullName?.length ?? 0) > REF_CHARS && `the repository name is ${repository.fullName!.length} characters, over ${REF_CHARS}`);
  const shown = {
    ...event,
    event: clipped(event.event),
    action: clipped(event.action),
    actor: clipped(event.actor),
    identityConflict: event.identityConflict === null ? null : clipped(event.identityConflict),
    ignoredReason: event.ignoredReason === null ? null : clipped(event.ignoredReason),
  };
  if (!tooLong) return shown;
  const cut = (text: string | null) => (text === null ? null : clipped(text, REF_CHARS));
  return {
    ...shown,
    kind: null,
    ignoredReason: `${tooLong}: not built`,
    branch: cut(event.branch),
    tag: cut(event.tag),
    ref: clipped(event.ref, REF_CHARS),
    commitSha: cut(event.commitSha),
    repository: { externalId: cut(repository.externalId), fullName: cut(repository.fullName) },
    changelog: "",
  };
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
