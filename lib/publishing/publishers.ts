// Publishers (docs/publishing.md): what a pipeline's `publish:` list says, in roost.yaml and in
// the API's execution_config. Each publisher names the environment it publishes to (whose
// approval rules and secrets apply), a store or host, and where its credentials are: the NAME of
// one of the environment's secrets, never a credential itself (the file is readable by everyone
// who can read the repository). The runner (runner/publish/) reads the same schemas.
import { z } from "zod";
import { RefPattern } from "../pipelines/branch-patterns.ts";
import { CheckoutGlob } from "../schemas/patterns.ts";

export const PUBLISHER_TYPES = ["google_play", "firebase_app_distribution", "app_store_connect", "host_release"] as const;
export type PublisherType = (typeof PUBLISHER_TYPES)[number];

export const EnvironmentName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, "an environment name is letters, digits, '_', '.' and '-' (at most 63), starting with a letter or digit");

/** The name of one of the environment's secrets (a shell variable name, as variables have). */
export const SecretName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be the name of one of the environment's secrets (letters, digits, _)");

/** Ref patterns (docs/api.md "Branch patterns"): plain patterns name branches, refs/tags/… names tags. */
export const RefPatterns = z.array(RefPattern).max(50);

/** A BCP 47 language tag as the stores take them (en-US, de-DE, fr). */
export const Language = z.string().regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, "must be a language tag like en-US");

/**
 * Release notes, one source: `text` (one text, or one per language), `file` (a file of the
 * repository or one the build writes, which the runner uploads with the artifacts: a text file,
 * or a JSON list [{"language","text"}] as Codemagic's release_notes.json), or `from_commits`
 * (the commits of the pushes Roost built since the build last published to the same environment
 * by this publisher).
 */
export const ReleaseNotesInput = z
  .object({
    text: z.union([z.string().min(1).max(4000), z.record(Language, z.string().min(1).max(4000))]).optional(),
    file: CheckoutGlob.optional().describe(
      'a file of the repository, or one the build writes, relative to the checkout (uploaded with the artifacts): plain text, or JSON [{"language": "en-US", "text": "…"}]',
    ),
    from_commits: z
      .literal(true)
      .optional()
      .describe("the first lines of the commits pushed since the build this publisher last published to this environment"),
    language: Language.default("en-US").describe("the language of text given as one string, of a text file and of from_commits"),
  })
  .strict()
  .refine(
    (n) => [n.text !== undefined, n.file !== undefined, n.from_commits !== undefined].filter(Boolean).length === 1,
    "give exactly one of text, file and from_commits",
  );
export type ReleaseNotesInput = z.output<typeof ReleaseNotesInput>;

const common = {
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, "a publisher name is letters, digits, '_', '.' and '-' (at most 63)")
    .optional()
    .describe("how deployments and promotions name this publisher; default <type>-<environment>"),
  environment: EnvironmentName.describe("the project's environment this publishes to: its approval rules, allowed refs and secrets apply"),
  refs: RefPatterns.optional().describe(
    "publish only builds of these refs (branch patterns; refs/tags/… for tags); default: every build of the pipeline that is not a pull request",
  ),
  artifact: CheckoutGlob.optional().describe("a glob over the build's artifact paths choosing what is published; the default depends on the type"),
  notes: ReleaseNotesInput.optional(),
};

export const GooglePlayPublisher = z
  .object({
    type: z.literal("google_play"),
    ...common,
    package_name: z.string().regex(/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/, "must be an Android application id like com.example.app"),
    track: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_:.-]{0,99}$/, "a track: internal, alpha, beta, production or a custom track's name")
      .default("internal"),
    release_status: z.enum(["completed", "draft", "halted", "inProgress"]).optional().describe("default completed, or inProgress with user_fraction"),
    user_fraction: z
      .number()
      .gt(0)
      .lt(1)
      .optional()
      .describe("a staged rollout: the fraction of users who get the release (0 < f < 1); needs release_status inProgress or halted"),
    credentials: SecretName.default("GOOGLE_PLAY_SERVICE_ACCOUNT").describe(
      "the environment secret holding the service account's JSON key (a file or a value)",
    ),
  })
  .strict()
  .superRefine((p, ctx) => {
    const status = p.release_status ?? (p.user_fraction === undefined ? "completed" : "inProgress");
    if (p.user_fraction !== undefined && status !== "inProgress" && status !== "halted")
      ctx.addIssue({ code: "custom", path: ["user_fraction"], message: "a staged rollout (user_fraction) needs release_status inProgress or halted" });
    if (p.user_fraction === undefined && status === "inProgress")
      ctx.addIssue({ code: "custom", path: ["release_status"], message: "inProgress is a staged rollout: give user_fraction" });
  });

export const FirebaseAppDistributionPublisher = z
  .object({
    type: z.literal("firebase_app_distribution"),
    ...common,
    app_id: z.string().regex(/^\d+:\d+:(android|ios|web):[0-9a-f]+$/, "must be a Firebase app id like 1:1234567890:android:0a1b2c3d4e5f67890"),
    testers: z.array(z.email()).max(200).default([]),
    groups: z
      .array(z.string().regex(/^[a-z0-9-]{1,100}$/, "a group alias: lower-case letters, digits and -"))
      .max(50)
      .default([]),
    credentials: SecretName.default("FIREBASE_SERVICE_ACCOUNT").describe("the environment secret holding the service account's JSON key (a file or a value)"),
  })
  .strict();

export const AppStoreConnectPublisher = z
  .object({
    type: z.literal("app_store_connect"),
    ...common,
    app_id: z.string().regex(/^\d{6,12}$/, "the app's Apple ID: the number App Store Connect shows under App Information"),
    key_id: z.string().regex(/^[A-Z0-9]{10}$/, "the API key's Key ID (10 characters)"),
    // Apple's issuer ids are UUID-shaped without being RFC 9562 UUIDs (57246542-96fe-1a63-e053-0824d011072a).
    issuer_id: z
      .string()
      .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, "the Issuer ID shown above the team's API keys (a UUID)"),
    private_key: SecretName.default("APP_STORE_CONNECT_PRIVATE_KEY").describe("the environment secret holding the key's .p8 file (a file or a value)"),
    beta_groups: z.array(z.string().min(1).max(100)).max(20).default([]).describe("TestFlight beta groups (by name) the build is added to"),
    submit_for_review: z.boolean().default(false).describe("submit the build for beta App Review (external testing)"),
    processing_timeout_seconds: z.number().int().min(60).max(7200).default(1800).describe("how long to wait for Apple to process the uploaded build"),
  })
  .strict();

export const HostReleasePublisher = z
  .object({
    type: z
      .enum(["host_release", "github_release", "gitlab_release"])
      .describe("a release on the project's own source host (GitHub or GitLab); github_release and gitlab_release are read as host_release"),
    ...common,
    tag: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[^\p{Cc}\s]+$/u)
      .optional()
      .describe("the release's tag; default the tag the build is of (a build of a branch needs one)"),
    release_name: z.string().min(1).max(255).optional().describe("default: the tag"),
    draft: z.boolean().default(false),
    prerelease: z.boolean().default(false),
    attach: z.array(CheckoutGlob).max(20).default(["**/*"]).describe("globs over the build's artifact paths attached to the release"),
  })
  .strict();

/** One publisher as written (`github_release` and `gitlab_release` are normalized to host_release by normalizePublisher). */
export const PublisherInput = z.discriminatedUnion("type", [
  GooglePlayPublisher,
  FirebaseAppDistributionPublisher,
  AppStoreConnectPublisher,
  HostReleasePublisher,
]);
type Written = z.output<typeof PublisherInput>;
export type HostReleaseConfig = Omit<z.output<typeof HostReleasePublisher>, "type"> & { type: "host_release" };
type HostReleaseAlias = "host_release" | "github_release" | "gitlab_release";
export type Publisher = Exclude<Written, { type: HostReleaseAlias }> | HostReleaseConfig;

/** A publisher as stored and run: `github_release` and `gitlab_release` are host_release. */
export function normalizePublisher(p: Written): Publisher {
  if (p.type === "github_release" || p.type === "gitlab_release" || p.type === "host_release") return { ...p, type: "host_release" };
  return p as Exclude<Written, { type: HostReleaseAlias }>;
}
export type GooglePlayConfig = z.output<typeof GooglePlayPublisher>;
export type FirebaseConfig = z.output<typeof FirebaseAppDistributionPublisher>;
export type AppStoreConnectConfig = z.output<typeof AppStoreConnectPublisher>;

export const PublishList = z
  .array(PublisherInput)
  .max(20, "at most 20 publishers")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, i) => {
      const name = publisherName(p);
      if (seen.has(name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `two publishers are named ${name}; give one a name of its own` });
      seen.add(name);
    });
  })
  .transform((list) => list.map(normalizePublisher))
  .default([])
  .describe("publishers run after a successful build that is not a pull request (docs/publishing.md)");

export function publisherName(p: { name?: string | undefined; type: string; environment: string }): string {
  return p.name ?? `${p.type === "github_release" || p.type === "gitlab_release" ? "host_release" : p.type}-${p.environment}`;
}

/** Which artifacts a publisher sends when it names none. */
export const DEFAULT_ARTIFACT: Record<PublisherType, string> = {
  google_play: "**/*.{aab,apk}",
  firebase_app_distribution: "**/*.{apk,aab,ipa}",
  app_store_connect: "**/*.ipa",
  host_release: "**/*",
};

/** The place a publish lands, as the deployments view groups "the current version": a track, an app's testers, a tag. */
export function targetOf(p: Publisher): string {
  switch (p.type) {
    case "google_play":
      return `${p.package_name} ${p.track}`;
    case "firebase_app_distribution":
      return p.app_id;
    case "app_store_connect":
      return `${p.app_id} TestFlight`;
    case "host_release":
      return "releases";
  }
}

/** The secret names a publisher reads from its environment. */
export function credentialNames(p: Publisher): string[] {
  switch (p.type) {
    case "google_play":
    case "firebase_app_distribution":
      return [p.credentials];
    case "app_store_connect":
      return [p.private_key];
    case "host_release":
      return [];
  }
}

/**
 * What a promotion may change of a publisher (docs/publishing.md "Promotion"): where in the
 * store it lands and how, never its type, app or credentials. The result is validated as a
 * publisher again.
 */
export const PublisherOverrides = z
  .object({
    track: GooglePlayPublisher.shape.track.unwrap(),
    release_status: GooglePlayPublisher.shape.release_status.unwrap(),
    user_fraction: GooglePlayPublisher.shape.user_fraction.unwrap(),
    testers: FirebaseAppDistributionPublisher.shape.testers.unwrap(),
    groups: FirebaseAppDistributionPublisher.shape.groups.unwrap(),
    beta_groups: AppStoreConnectPublisher.shape.beta_groups.unwrap(),
    submit_for_review: AppStoreConnectPublisher.shape.submit_for_review.unwrap(),
    tag: HostReleasePublisher.shape.tag.unwrap(),
    release_name: HostReleasePublisher.shape.release_name.unwrap(),
    draft: HostReleasePublisher.shape.draft.unwrap(),
    prerelease: HostReleasePublisher.shape.prerelease.unwrap(),
    notes: ReleaseNotesInput,
  })
  .partial()
  .strict();
export type PublisherOverrides = z.output<typeof PublisherOverrides>;

/** A publisher with a promotion's environment and overrides, validated again; issues name the overridden keys. */
export function overridePublisher(
  p: Publisher,
  environment: string | undefined,
  overrides: PublisherOverrides,
): { ok: true; publisher: Publisher } | { ok: false; issues: { path: string; message: string }[] } {
  const applicable: Record<PublisherType, string[]> = {
    google_play: ["track", "release_status", "user_fraction", "notes"],
    firebase_app_distribution: ["testers", "groups", "notes"],
    app_store_connect: ["beta_groups", "submit_for_review", "notes"],
    host_release: ["tag", "release_name", "draft", "prerelease", "notes"],
  };
  const foreign = Object.keys(overrides).filter((k) => !applicable[p.type].includes(k));
  if (foreign.length) return { ok: false, issues: foreign.map((k) => ({ path: `overrides.${k}`, message: `a ${p.type} publisher has no ${k}` })) };
  // A new track's rollout is its own: a staged rollout is not carried over unless given again.
  const base: Record<string, unknown> = { ...p };
  if (p.type === "google_play" && (overrides.track !== undefined || overrides.release_status !== undefined) && overrides.user_fraction === undefined) {
    delete base.user_fraction;
    if (overrides.release_status === undefined) delete base.release_status;
  }
  const parsed = PublisherInput.safeParse({ ...base, ...(environment ? { environment } : {}), ...overrides });
  if (!parsed.success)
    return { ok: false, issues: parsed.error.issues.map((i) => ({ path: ["overrides", ...i.path.map(String)].join("."), message: i.message })) };
  return { ok: true, publisher: normalizePublisher(parsed.data) };
}
