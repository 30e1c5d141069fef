// An integration's credentials, sealed at rest with the instance's secret box and opened only to
// talk to its forge (lib/forges/<forge>/index.ts); nothing returns them.
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Integration } from "./store.ts";

const PURPOSE = "integration-credentials";

export async function sealCredentials(secrets: SecretBox, credentials: object): Promise<string> {
  return secrets.seal(JSON.stringify(credentials), PURPOSE);
}

/** How many integrations' opened credentials a box keeps (as many as its own cache of opened values). */
const OPENED_LIMIT = 256;

/**
 * Opened credentials by integration id, per secret box, with the sealed value they came from:
 * every webhook delivery (its signature) and every commit status (its token) opens them, and the
 * sealed text of a GitHub App's private key is a few kilobytes to look up and parse each time. A
 * changed sealed value (new credentials) is opened again; the objects are frozen, shared by callers.
 */
const openedByBox = new WeakMap<SecretBox, Map<string, { sealed: string; credentials: object }>>();

/** The credentials as the integration's forge sealed them (its own shape, e.g. GithubCredentials). */
export async function openCredentials<T extends object>(secrets: SecretBox, integration: Integration): Promise<T> {
  let opened = openedByBox.get(secrets);
  if (!opened) openedByBox.set(secrets, (opened = new Map()));
  const known = opened.get(integration.id);
  if (known && known.sealed === integration.credentials_sealed) return known.credentials as T;
  const credentials = Object.freeze(JSON.parse(await secrets.open(integration.credentials_sealed, PURPOSE)) as T);
  if (opened.size >= OPENED_LIMIT) opened.delete(opened.keys().next().value!);
  opened.set(integration.id, { sealed: integration.credentials_sealed, credentials });
  return credentials;
}
