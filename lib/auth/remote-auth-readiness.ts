// Whether the chosen remote auth mode has what it needs before the instance may become ready.
// Returns a sentence saying what is missing, or null when nothing is.
import type { Executor } from "../db/client.ts";
import type { Instance } from "../setup/instance.ts";
import { runtimeMode } from "../setup/instance.ts";
import { getOidcSettings, getTrustedProxySettings } from "./sign-in-settings-store.ts";

export async function remoteAuthReadiness(db: Executor, instance: Instance): Promise<string | null> {
  if (runtimeMode(instance) === "local") return null;
  if (instance.remote_auth_mode === null) return "Choose a remote auth mode with POST /v1/setup/preferences first.";
  if (instance.remote_auth_mode === "oidc" && !(await getOidcSettings(db))) return "Configure the identity provider with PUT /v1/setup/oidc first.";
  if (instance.remote_auth_mode === "trusted_proxy" && !(await getTrustedProxySettings(db))) {
    return "Configure the trusted proxy with PUT /v1/setup/trusted-proxy first.";
  }
  return null;
}
