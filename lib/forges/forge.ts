// A forge is a source host Roost builds from: GitHub, GitLab, Gitea (and Forgejo), Bitbucket
// Cloud, or a plain git remote. Each is one folder under lib/forges/ whose index.ts exports one
// `Forge`, registered once in lib/forges/registry.ts. Everything that differs between hosts goes
// through this interface: the integration create body, the webhook receivers
// (lib/webhooks/receive.ts), the catalogue sync, branch heads, the pipeline file at a commit, the
// claim's clone credentials and the commit status reporter (Woodpecker's server/forge/forge.go is
// the model). A forge's name is what integrations.provider, repositories.provider and
// webhook_deliveries.host hold, and what the API calls `provider` and `host`.
import { z } from "zod";
import { DisplayName } from "../schemas/shared.ts";
import type { AppContext } from "../http/context.ts";
import type { Config } from "../daemon/config.ts";
import type { SqlCondition } from "../db/client.ts";
import type { Integration } from "../integrations/store.ts";
import type { RemoteRepository, Repository } from "../integrations/repositories.ts";
import type { BuildStatus } from "../builds/state-machine.ts";
import type { TriggerEvent } from "./event.ts";

/**
 * What talking to a forge takes from the app: its secret key, its configuration and its clock;
 * `signal`, when given, stops every request made with these deps (a send bounded as a whole, as a
 * check run's is by its claim: lib/test-results/check-runs.ts).
 */
export type ForgeDeps = Pick<AppContext, "secrets" | "config" | "clock"> & { signal?: AbortSignal };

/** What a webhook receiver reads besides: the database, to find the repository and the secrets. */
export type WebhookDeps = ForgeDeps & Pick<AppContext, "db">;

/** A repository as a forge's API names it: its id there and its owner/name path. */
export type ForgeRepository = Pick<Repository, "external_id" | "full_name">;

/** An https user name and password a runner clones with. */
export interface CloneCredentials {
  username: string;
  password: string;
}

/** The repair for repeated verification failures of a forge whose hooks are signed with the integration's webhook secret. */
export const WEBHOOK_SECRET_REPAIR = "Set the hook's secret to the webhook secret stored in the integration (or re-create the integration).";

/** An API URL in a create body: http(s), without a trailing slash. */
export const ForgeUrl = z
  .url({ protocol: /^https?$/ })
  .max(500)
  .transform((u) => u.replace(/\/+$/, ""));

/** What every create body has: the forge it is for and the integration's name. */
export interface ConnectBody {
  provider: string;
  name: string;
}

/** A forge's create body: `provider` (its name), `name`, and its own fields, nothing else. */
export function connectBody<const N extends string, S extends z.ZodRawShape>(forge: N, shape: S) {
  return z.object({ provider: z.literal(forge), name: DisplayName, ...shape }).strict();
}

/** An integration as a valid create body describes it, before anything is contacted. */
export interface Connection {
  /** The body field that names the forge's address ("api_url", or "url" for a plain git remote), for refusals. */
  field: string;
  /** The host name Roost will contact, checked against the link-local policy; null for a path on this machine. */
  hostname: string | null;
  /** Why the address is refused before anything is contacted, if it is. */
  refused?: string;
  api_url: string;
  web_url: string;
  app_id: string | null;
  installation_id: string | null;
  /** Sealed at rest (lib/integrations/credentials.ts), opened only to talk to the forge. */
  credentials: object;
}

/** An integration reached at an API URL, whose host name the link-local policy checks; the web URL is the API URL unless given. */
export function apiConnection(api_url: string, rest: { web_url?: string; app_id?: string; installation_id?: string; credentials: object }): Connection {
  return {
    field: "api_url",
    hostname: new URL(api_url).hostname,
    api_url,
    web_url: rest.web_url ?? api_url,
    app_id: rest.app_id ?? null,
    installation_id: rest.installation_id ?? null,
    credentials: rest.credentials,
  };
}

/** An API client as the forges with a REST API have one (lib/forges/<forge>/api.ts). */
export interface ForgeApiClient {
  listRepositories(): Promise<RemoteRepository[]>;
  getBranchHead(repository: string, branch: string): Promise<string>;
  getFileRaw(repository: string, path: string, ref: string): Promise<string | null>;
  /** A build's status on a commit, in the host's own words for the states. */
  reportStatus(repository: string, status: CommitStatus): Promise<void>;
}

/** The repository list, branch heads, files and commit statuses through such a client, which names a repository by `key` (GitLab: its id; the others: owner/name). */
export function apiOperations(
  clientFor: (deps: ForgeDeps, integration: Integration) => Promise<ForgeApiClient>,
  key: keyof ForgeRepository,
): Pick<Forge, "listRepositories" | "branchHead" | "readFile" | "reportStatus"> {
  return {
    listRepositories: async (deps, integration) => (await clientFor(deps, integration)).listRepositories(),
    branchHead: async (deps, integration, repository, branch) => (await clientFor(deps, integration)).getBranchHead(repository[key], branch),
    readFile: async (deps, integration, repository, path, sha) => (await clientFor(deps, integration)).getFileRaw(repository[key], path, sha),
    reportStatus: async (deps, integration, repository, status) => (await clientFor(deps, integration)).reportStatus(repository[key], status),
  };
}

/** A build's status as a forge shows it on the commit, one context per pipeline. */
export interface CommitStatus {
  status: BuildStatus;
  sha: string;
  /** The build in Roost. */
  url: string;
  description: string;
  /** roost/<pipeline> */
  context: string;
}

/** A delivery as the receiver read it, before anything in it is trusted. */
export interface IncomingDelivery {
  headers: Headers;
  bytes: Uint8Array;
  /** The body as text, for the delivery log. */
  text: string;
  /** The decoded body; undefined when it could not be decoded (`decoded` false). */
  payload: unknown;
  decoded: boolean;
  /** The forge's event name and delivery id, for the delivery log. */
  event: string;
  deliveryId: string;
  /** The signature or token the sender proves itself with; null when the header is missing. */
  credential: string | null;
}

/** Who a verified delivery comes from. */
export interface Sender {
  /** The catalogue entry the credential is for; null when the forge routes after parsing (GitHub). */
  repository: Repository | null;
  /** The project whose token or secret verified the delivery, when the credential is a project's. */
  projectId: string | null;
  /** The integrations whose webhook secret verified the body. */
  integrations: Integration[];
  /**
   * The catalogue entries of the repository id the body names, read beside the verification (one
   * request to a remote database instead of two in a row); route uses them for that id only.
   */
  claimed?: { externalId: string; repositories: Repository[] };
  /**
   * Set when the sender was verified from what this daemon last read of the catalogue (verify's
   * `asLastRead`): the condition under which the delivery may be written, the catalogue unchanged
   * since (lib/integrations/as-last-read.ts).
   */
  asRead?: SqlCondition;
}

/** A delivery refused: why, and what its unverified body claims, only to explain the record. */
export interface Refusal {
  refused: string;
  claimed: { externalId: string | null; fullName: string | null };
  /** The catalogue entry the claim names, if any: repeated refusals for it raise an incident. */
  repository: Repository | null;
}

/** Where a verified, parsed delivery goes: one catalogue entry, or none with the reason. */
export interface Route {
  repository: Repository | null;
  unroutedReason?: string;
}

/** How a forge's webhook deliveries are read (docs/webhooks.md), in the receiver's order: verify → parse → route. */
export interface ForgeWebhook {
  /** The receiver's operation in the API document (POST /v1/webhooks/<forge>, operationId <forge>_webhook). */
  summary: string;
  /** The headers it reads and the bodies it takes. */
  description: string;
  /**
   * What proves the sender: a signature over the body or a token; the header that carries it (for
   * sentences: "X-Hub-Signature-256 is missing"); the 401 answers when it is missing, or does not verify.
   */
  credential: { kind: "signature" | "token"; header: string; missing: string; invalid: string };
  /** What the body must be, for the 400 answer: "a GitHub webhook payload". */
  payloadName: string;
  /** The 400 answer to a body that cannot be decoded, when it says more than "not JSON". */
  notDecoded?: string;
  /** What an operator does when deliveries for a repository keep failing verification. */
  repairAction: string;
  /** The event name, delivery id (at most 100 characters) and credential from the request's headers. */
  readHeaders(headers: Headers): { event: string; deliveryId: string; credential: string | null };
  /**
   * The body as the forge encodes it (UTF-8 JSON unless this says otherwise), from its text (the
   * bytes decoded once, U+FFFD for bytes that are not UTF-8); throws when it cannot be read.
   */
  decode?(text: string, contentType: string | null): unknown;
  /**
   * Checks the credential before anything in the body is acted on; each secret is compared in
   * constant time. `asLastRead` (where verifiesAsLastRead): from what this daemon last read of the
   * integrations, the sender then carrying the guard of its write (Sender.asRead).
   */
  verify(deps: WebhookDeps, delivery: IncomingDelivery, asLastRead?: boolean): Promise<{ sender: Sender } | Refusal>;
  /** Whether verify can take `asLastRead` (lib/integrations/as-last-read.ts). */
  verifiesAsLastRead?: boolean;
  /** The verified body as one neutral event; throws InvalidPayload when it is not what the forge sends. */
  parse(delivery: IncomingDelivery, sender: Sender): TriggerEvent;
  /** The catalogue entry the event is for; without this, the sender's. */
  route?(deps: WebhookDeps, delivery: IncomingDelivery, sender: Sender, event: TriggerEvent): Promise<Route | Refusal>;
  /** The delivery's identities: one already acted on makes a retry a duplicate. Without this, `<forge>:delivery:<delivery id>`. */
  dedupeKeys?(delivery: IncomingDelivery, repository: Repository | null, event: TriggerEvent): string[];
  /**
   * Whether an identical signed body is a replay: true only where the forge's bodies of distinct
   * events always differ (they carry before/after or a time). Otherwise the delivery's identities
   * alone dedupe, so two real events with the same bytes both build.
   */
  dedupeByBody: boolean;
}

/** A file attached to a release: its name there, its size and SHA-256, and its bytes (opened when sent, once per upload). */
export interface ReleaseAsset {
  name: string;
  size: number;
  sha256: string;
  bytes(): Promise<ReadableStream<Uint8Array> | Blob>;
}

/** A release of a tag as a host_release publisher asks for it (docs/publishing.md "Host releases"). */
export interface HostRelease {
  tag: string;
  /** The commit the tag is created at when the host does not have it yet. */
  commit_sha: string;
  name: string;
  notes: string;
  draft: boolean;
  prerelease: boolean;
  assets: ReleaseAsset[];
}

/** What the host has after publishRelease. */
export interface HostReleaseAnswer {
  /** The host's id of the release (GitHub's number; GitLab names a release by its tag). */
  id: string;
  /** The release's page. */
  url: string;
  /** False when the release existed already (a retry, a promotion) and was updated. */
  created: boolean;
  /** Asset names sent now, and those the host had already with the same bytes. */
  uploaded: string[];
  kept: string[];
}

/**
 * Creates the release of a tag, or brings an existing one up to date, so that a retry never makes
 * a second release nor sends an asset the host already has; throws ForgeApiError. `log` writes a
 * line of the publish's log (method, path, status: never a body or a credential).
 */
export type PublishRelease = (
  deps: ForgeDeps,
  integration: Integration,
  repository: ForgeRepository,
  release: HostRelease,
  log: (line: string) => void,
) => Promise<HostReleaseAnswer>;

export interface Forge<N extends string = string> {
  /** integrations.provider, repositories.provider, webhook_deliveries.host. */
  name: N;
  /** This forge's body of POST /v1/integrations, told apart by `provider`. */
  connectBody: z.ZodType<ConnectBody>;
  /** The integration a valid body describes. */
  connect(body: ConnectBody, config: Config): Connection;
  /** The repositories the integration sees, for its catalogue. */
  listRepositories(deps: ForgeDeps, integration: Integration): Promise<RemoteRepository[]>;
  /** The head commit of a branch; throws ForgeApiError. */
  branchHead(deps: ForgeDeps, integration: Integration, repository: ForgeRepository, branch: string): Promise<string>;
  /** A file's text at a commit, or null when there is no such file there; `ref` is the ref the commit was pushed to, when known. */
  readFile(deps: ForgeDeps, integration: Integration, repository: ForgeRepository, path: string, sha: string, ref: string | null): Promise<string | null>;
  /** Short-lived https credentials to clone the repository, or null when the runner uses its own. */
  cloneCredentials(deps: ForgeDeps, integration: Integration, repository: ForgeRepository): Promise<CloneCredentials | null>;
  /**
   * A link to a line of a file at a commit, from the repository's web URL, with `{path}` and
   * `{line}` left for the web app to fill in; null for a forge without a web view.
   */
  fileLink: ((repositoryUrl: string, sha: string) => string) | null;
  /** Shows a build's status on its commit; null for a forge without commit statuses. */
  reportStatus: ((deps: ForgeDeps, integration: Integration, repository: ForgeRepository, status: CommitStatus) => Promise<void>) | null;
  /** Publishes a release of a tag with assets (a host_release publisher); null for a forge Roost makes no releases on. */
  publishRelease: PublishRelease | null;
  webhook: ForgeWebhook;
}
