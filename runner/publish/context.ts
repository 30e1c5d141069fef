// What a store client is given for one publish (run-publish.ts makes it): the publisher's
// configuration, the files it sends (downloaded and checked), its release notes, the secrets it
// named (written 0600 for this publish only), a masked log, and where the stores are.
import type { DeploymentArtifact, StoreAnswer } from "../../lib/publishing/wire.ts";
import type { Publisher } from "../../lib/publishing/publishers.ts";
import type { ClaimedPublish } from "../../lib/publishing/wire.ts";
import type { PublishEndpoints } from "./endpoints.ts";

export interface LocalArtifact extends DeploymentArtifact {
  /** Where the checked bytes are on this runner, for this publish only. */
  file: string;
}

export interface PublishSecretFile {
  key: string;
  /** The secret as text (a JSON key, a PEM). */
  text: string;
  /** Its file, 0600, removed when the publish ends. */
  path: string;
}

export interface PublishContext {
  readonly claimed: ClaimedPublish;
  readonly publisher: Publisher;
  readonly artifacts: LocalArtifact[];
  /** Per language; already read from the notes file when there is one. */
  readonly notes: Record<string, string>;
  readonly endpoints: PublishEndpoints;
  /** The private directory of this publish (0700), removed when it ends. */
  readonly dir: string;
  /** Aborted when the publish must stop (the runner stops, the deployment ended on the daemon's side). */
  readonly signal: AbortSignal;
  secret(key: string): PublishSecretFile;
  /** One line in the build's log, under the publish's step, with every secret masked. */
  log(text: string): void;
  /** Masks a value learned during the publish (an access token) in every later line. */
  mask(value: string): void;
}

/** A store client: publishes and answers what the store now has, or throws PublishFailure. */
export type StoreClient = (ctx: PublishContext) => Promise<StoreAnswer>;

/** The publish failed, with a sentence for the deployment and the build's log (the store's own words included). */
export class PublishFailure extends Error {}
