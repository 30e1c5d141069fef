// A credential asked again, by the id of the session or API token a request was authenticated
// with: what a long-lived stream does every few seconds (lib/auth/stream-guard.ts), and what a
// stream token's stream does with the credential that minted it. One read by primary key, no
// secret to compare (the secret was checked when the stream opened).
import type { Executor } from "../db/client.ts";
import type { Principal } from "./principal.ts";
import { findLiveSessionUser } from "./sessions.ts";
import { findLiveApiTokenCreator } from "./api-tokens.ts";
import { lowerRole } from "./roles.ts";

/** Which session or API token a principal acts through. */
export type CredentialRef = { kind: "session"; id: string } | { kind: "api_token"; id: string };

export function credentialOf(principal: Principal): CredentialRef {
  return principal.kind === "session" ? { kind: "session", id: principal.sessionId! } : { kind: "api_token", id: principal.tokenId! };
}

/**
 * The principal the credential stands for now, or null once it stopped working: a session logged
 * out, expired or ended by a change of its user's role; an API token revoked or expired; the user
 * deactivated. An API token's role is again the lower of its own and its creator's current one.
 */
export async function reauthenticate(db: Executor, credential: CredentialRef, now: number): Promise<Principal | null> {
  if (credential.kind === "session") {
    const live = await findLiveSessionUser(db, credential.id, now);
    if (!live) return null;
    return { kind: "session", user: live.user, role: live.user.role, sessionId: credential.id, tokenId: null, credentialExpiresAt: live.expires_at };
  }
  const live = await findLiveApiTokenCreator(db, credential.id, now);
  if (!live) return null;
  return {
    kind: "api_token",
    user: live.creator,
    role: lowerRole(live.role, live.creator.role),
    sessionId: null,
    tokenId: credential.id,
    credentialExpiresAt: live.expires_at,
  };
}
