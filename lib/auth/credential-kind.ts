// What a refused request presented, named from the credential's typed prefix alone
// (lib/auth/secrets.ts), so a 401 can say "a runner token cannot call user endpoints" without
// looking the credential up: the answer is the same whether the token is valid, revoked or made up.
import type { SecretKind } from "./secrets.ts";

const NAMES: Record<SecretKind, string> = {
  sess: "a user session token (roost_sess_…)",
  pat: "an API token (roost_pat_…)",
  setup: "a setup token (roost_setup_…)",
  rcv: "a recovery capability (roost_rcv_…)",
  rt: "a runner token (roost_rt_…)",
  st: "a stream token (roost_st_…)",
  whk: "a webhook token (roost_whk_…)",
};

const KIND_PREFIX = /^roost_([a-z]+)_/;

/** The kind a credential's prefix claims, or null for a string that is not shaped like a Roost credential. */
export function credentialKind(token: string): SecretKind | null {
  const match = KIND_PREFIX.exec(token);
  return match && match[1]! in NAMES ? (match[1] as SecretKind) : null;
}

/** "a runner token (roost_rt_…)", or what an unrecognised string is. */
export function describeCredential(token: string): string {
  const kind = credentialKind(token);
  return kind ? NAMES[kind] : "a bearer value that is not a Roost credential (those start with roost_)";
}

/**
 * The WWW-Authenticate challenge of a bearer-protected resource (RFC 6750 section 3): without an
 * error attribute when no credential was sent (section 3.1 says a server SHOULD NOT include one),
 * otherwise error="invalid_token" and the refusal's sentence as error_description, reduced to the
 * characters the RFC allows there (printable ASCII except " and \).
 */
export function bearerChallenge(description?: string): string {
  if (description === undefined) return 'Bearer realm="roost"';
  const safe = description.replace(/…/g, "...").replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "'");
  return `Bearer realm="roost", error="invalid_token", error_description="${safe}"`;
}
