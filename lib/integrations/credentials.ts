// An integration's credentials, sealed at rest with the instance's secret box and opened only to
// talk to its forge (lib/forges/<forge>/index.ts); nothing returns them.
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Integration } from "./store.ts";

const PURPOSE = "integration-credentials";

export async function sealCredentials(secrets: SecretBox, credentials: object): Promise<string> {
  return secrets.seal(JSON.stringify(credentials), PURPOSE);
}

/** The credentials as the integration's forge sealed them (its own shape, e.g. GithubCredentials). */
export async function openCredentials<T extends object>(secrets: SecretBox, integration: Integration): Promise<T> {
  return JSON.parse(await secrets.open(integration.credentials_sealed, PURPOSE)) as T;
}
