// An OAuth 2.0 access token for a Google service account: the JWT bearer grant of RFC 7523 §2.1
// as Google describes it for server-to-server applications
// (https://developers.google.com/identity/protocols/oauth2/service-account#httprest): a JWT signed
// RS256 with the key's private_key (iss = client_email, scope, aud = token_uri, iat, exp one hour
// later, kid = private_key_id) is exchanged at the key's token_uri for a bearer token. The token
// is masked in the log from the moment it arrives.
import { SignJWT, importPKCS8 } from "jose";
import { PublishFailure, type PublishContext } from "./context.ts";
import { storeRequest, StoreRefusal } from "./http.ts";

export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  token_uri: string;
  project_id?: string;
}

export function readServiceAccount(text: string, secretName: string): ServiceAccountKey {
  let key: Partial<ServiceAccountKey> & { type?: string };
  try {
    key = JSON.parse(text);
  } catch {
    throw new PublishFailure(
      `secret ${secretName} is not a service account's JSON key (it is not JSON); download the key from the Google Cloud console (docs/publishing.md)`,
    );
  }
  if (key.type !== "service_account" || !key.client_email || !key.private_key)
    throw new PublishFailure(`secret ${secretName} is not a service account's JSON key (it needs type "service_account", client_email and private_key)`);
  const tokenUri = key.token_uri ?? "https://oauth2.googleapis.com/token";
  const url = URL.canParse(tokenUri) ? new URL(tokenUri) : null;
  // The key names where its tokens come from; plain http only to this machine (the tests' stand-in).
  if (!url || (url.protocol !== "https:" && !(url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname))))
    throw new PublishFailure(`secret ${secretName}'s token_uri must be an https:// URL`);
  return {
    client_email: key.client_email,
    private_key: key.private_key,
    ...(key.private_key_id ? { private_key_id: key.private_key_id } : {}),
    token_uri: tokenUri,
    ...(key.project_id ? { project_id: key.project_id } : {}),
  };
}

export async function googleAccessToken(ctx: PublishContext, key: ServiceAccountKey, scope: string): Promise<string> {
  let signing;
  try {
    signing = await importPKCS8(key.private_key, "RS256");
  } catch {
    throw new PublishFailure(`the service account key of ${key.client_email} has no valid private_key (PKCS#8 PEM)`);
  }
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ scope })
    .setProtectedHeader({ alg: "RS256", typ: "JWT", ...(key.private_key_id ? { kid: key.private_key_id } : {}) })
    .setIssuer(key.client_email)
    .setAudience(key.token_uri)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(signing);
  ctx.mask(assertion);
  let answer: { access_token?: string; expires_in?: number };
  try {
    answer = await storeRequest(ctx, "google oauth", key.token_uri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
    });
  } catch (error) {
    if (error instanceof StoreRefusal && error.status > 0)
      throw new PublishFailure(
        `Google refused the service account ${key.client_email}: ${error.storeMessage}${error.reason === "invalid_grant" ? " (is the key revoked, or the runner's clock wrong?)" : ""}`,
      );
    throw error;
  }
  if (!answer.access_token) throw new PublishFailure("Google's token endpoint answered without an access token");
  ctx.mask(answer.access_token);
  ctx.log(`[google oauth] access token for ${key.client_email} (${scope.split("/").pop()}), valid ${answer.expires_in ?? 3600} s`);
  return answer.access_token;
}
