// OpenID Connect sign-in as a Relying Party (docs/external-access.md).
//
// Which library does what:
// - arctic (OAuth2Client): the authorization URL with PKCE S256 and the code exchange at the token
//   endpoint (client_secret_basic). It does not verify ID tokens.
// - jose: the ID token's signature against the issuer's JWKS with an algorithm allow-list, and its
//   iss/aud/exp/iat claims (OIDC Core §3.1.3.7). No JWT is parsed by hand here.
// - @oslojs/crypto and @oslojs/encoding: SHA-256 of state and browser binding, base64url.
import { z } from "zod";
import { CodeChallengeMethod, OAuth2Client, OAuth2RequestError, generateCodeVerifier, type OAuth2Tokens } from "arctic";
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from "jose";
import { sha256 } from "@oslojs/crypto/sha2";
import { encodeBase64urlNoPadding, encodeHexLowerCase } from "@oslojs/encoding";
import { fail } from "../errors.ts";
import { isLoopbackHostHeader } from "../net.ts";
import { constantTimeEqualStrings } from "./secrets.ts";

/** Asymmetric algorithms accepted by default; `none` never, HS* only when an operator lists them. */
export const DEFAULT_ID_TOKEN_ALGS = ["RS256", "PS256", "ES256", "EdDSA"];
const ALLOWED_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519", "HS256", "HS384", "HS512"] as const;
/** Clock skew tolerated on exp/iat, and the oldest iat accepted. */
const CLOCK_SKEW_SECONDS = 60;
const MAX_ID_TOKEN_AGE_SECONDS = 600;
const DISCOVERY_TTL_MS = 10 * 60 * 1000;
const FETCH_TIMEOUT_MS = 5000;

/** https, or http to a loopback host (a provider on the same machine, and the test suite). */
const ProviderUrl = z
  .url()
  .refine((u) => {
    // zod runs this refinement even when .url() has already refused the value, so parse safely.
    const url = URL.parse(u);
    return url !== null && (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHostHeader(url.host)));
  }, "must be an https URL (http only for a loopback host)");

export const OidcSettingsBody = z
  .object({
    issuer: ProviderUrl.describe("the issuer identifier, exactly as the provider's discovery document states it"),
    client_id: z.string().min(1).max(500),
    client_secret: z.string().min(1).max(2000).describe("stored encrypted; never returned"),
    scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)).max(20).optional().describe("default openid email profile; openid is always sent"),
    redirect_uris: z.array(z.url()).min(1).max(20).describe("allow-list of frontend callback URLs; the first is the standard callback"),
    id_token_algs: z.array(z.enum(ALLOWED_ALGS)).min(1).optional().describe("default RS256 PS256 ES256 EdDSA; HS* only if listed"),
  })
  .strict();

export const PublicOidcSettings = z.object({
  issuer: z.string(),
  client_id: z.string(),
  client_secret_set: z.boolean(),
  scopes: z.array(z.string()),
  redirect_uris: z.array(z.string()),
  id_token_algs: z.array(z.string()),
  updated_at: z.number().int(),
});

export function normalizeScopes(scopes: string[] | undefined): string[] {
  const list = scopes ?? ["openid", "email", "profile"];
  return ["openid", ...list.filter((s) => s !== "openid")];
}

// --- discovery ---------------------------------------------------------------------------------

export interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint: string | null;
}

const DiscoveryDocument = z.object({
  issuer: z.string(),
  authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  jwks_uri: z.url(),
  userinfo_endpoint: z.url().optional(),
});

// Process-local caches: discovery documents (10 minutes) and jose's JWKS sets (jose refetches on
// an unknown kid, with its own cooldown). Failures are never cached.
const discoveryCache = new Map<string, { discovery: Discovery; until: number }>();
const jwksCache = new Map<string, JWTVerifyGetKey>();

/** The provider's discovery document (OIDC Discovery §4); 502 oidc_discovery_error when unusable. */
export async function discover(issuer: string): Promise<Discovery> {
  const cached = discoveryCache.get(issuer);
  if (cached && cached.until > Date.now()) return cached.discovery;
  const url = issuer.replace(/\/$/, "") + "/.well-known/openid-configuration";
  let document: z.infer<typeof DiscoveryDocument>;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "error" });
    if (!response.ok) throw new Error(`status ${response.status}`);
    document = DiscoveryDocument.parse(await response.json());
  } catch {
    fail("oidc_discovery_error", "The identity provider's discovery document could not be fetched or is not valid.");
  }
  // OIDC Discovery §4.3: the issuer in the document must equal the configured one exactly.
  if (document.issuer !== issuer) fail("oidc_discovery_error", "The identity provider's discovery document names another issuer.");
  const discovery = { ...document, userinfo_endpoint: document.userinfo_endpoint ?? null };
  discoveryCache.set(issuer, { discovery, until: Date.now() + DISCOVERY_TTL_MS });
  return discovery;
}

/** Forgets cached discovery documents and key sets (tests, whose providers come and go on reused ports). */
export function clearOidcCaches(): void {
  discoveryCache.clear();
  jwksCache.clear();
}

function jwksFor(uri: string): JWTVerifyGetKey {
  let set = jwksCache.get(uri);
  if (!set) {
    set = createRemoteJWKSet(new URL(uri), { timeoutDuration: FETCH_TIMEOUT_MS });
    jwksCache.set(uri, set);
  }
  return set;
}

// --- start ---------------------------------------------------------------------------------------

/** 256 random bits, base64url: states, nonces and browser bindings. */
export function randomToken(): string {
  return encodeBase64urlNoPadding(crypto.getRandomValues(new Uint8Array(32)));
}

export function hashToken(value: string): string {
  return encodeHexLowerCase(sha256(new TextEncoder().encode(value)));
}

/** The cookie binding a pending authorization to the browser that started it (RFC 9700 §2.1.1). */
export const BINDING_COOKIE = "__Host-roost_oidc";

export function bindingCookie(value: string, maxAgeSeconds: number): string {
  return `${BINDING_COOKIE}=${value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}`;
}

export function readBindingCookie(request: Request): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === BINDING_COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The claims request (OIDC Core §5.5): conformant providers leave e-mail out of the ID token unless asked. */
const CLAIMS_REQUEST = JSON.stringify({ id_token: { email: { essential: true }, email_verified: { essential: true } } });

export interface StartedAuthorization {
  authorization_url: string;
  state: string;
  nonce: string;
  code_verifier: string;
}

export function buildAuthorizationUrl(discovery: Discovery, clientId: string, redirectUri: string, scopes: string[]): StartedAuthorization {
  const state = randomToken();
  const nonce = randomToken();
  const codeVerifier = generateCodeVerifier();
  const client = new OAuth2Client(clientId, null, redirectUri);
  const url = client.createAuthorizationURLWithPKCE(discovery.authorization_endpoint, state, CodeChallengeMethod.S256, codeVerifier, scopes);
  url.searchParams.set("nonce", nonce);
  url.searchParams.set("claims", CLAIMS_REQUEST);
  return { authorization_url: url.toString(), state, nonce, code_verifier: codeVerifier };
}

// --- callback ------------------------------------------------------------------------------------

/** Exchanges the code (with the PKCE verifier) for tokens; 502 token_exchange_error on any failure. */
export async function exchangeCode(
  discovery: Discovery,
  client: { client_id: string; client_secret: string; redirect_uri: string },
  code: string,
  codeVerifier: string,
): Promise<OAuth2Tokens> {
  const oauth = new OAuth2Client(client.client_id, client.client_secret, client.redirect_uri);
  try {
    return await oauth.validateAuthorizationCode(discovery.token_endpoint, code, codeVerifier);
  } catch (error) {
    const reason = error instanceof OAuth2RequestError ? `: ${error.code}` : "";
    fail("token_exchange_error", `The identity provider refused the authorization code${reason}.`);
  }
}

export function idTokenOf(tokens: OAuth2Tokens): string {
  const data = tokens.data as Record<string, unknown>;
  if (typeof data.id_token !== "string" || data.id_token === "") fail("missing_id_token", "The identity provider returned no ID token.");
  return data.id_token;
}

export interface VerifiedIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: boolean | null;
}

/** OIDC Core §3.1.3.7, steps 2–11; 502 id_token_verification_error on any failure. */
export async function verifyIdToken(
  idToken: string,
  discovery: Discovery,
  settings: { issuer: string; client_id: string; client_secret: string; id_token_algs: string[] },
  expectedNonce: string,
  nowSeconds: number,
): Promise<VerifiedIdentity> {
  const jwks = jwksFor(discovery.jwks_uri);
  const secretKey = new TextEncoder().encode(settings.client_secret);
  // HS* verify with the client secret, and only when the operator listed them (step 8).
  const key: JWTVerifyGetKey = (header, token) => (header.alg?.startsWith("HS") ? secretKey : jwks(header, token));
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, key, {
      algorithms: settings.id_token_algs, // step 7: allow-list; jose never accepts "none" here
      issuer: settings.issuer, // step 2: exact match
      audience: settings.client_id, // step 3
      clockTolerance: CLOCK_SKEW_SECONDS, // step 9
      maxTokenAge: MAX_ID_TOKEN_AGE_SECONDS, // step 10
      currentDate: new Date(nowSeconds * 1000),
      requiredClaims: ["sub", "iat", "exp", "nonce"],
    }));
  } catch (error) {
    const reason = error instanceof joseErrors.JOSEError ? ` (${error.code})` : "";
    fail("id_token_verification_error", `The ID token failed verification${reason}.`);
  }
  // Steps 4–5: an authorized party, when present, must be us.
  if (payload.azp !== undefined && payload.azp !== settings.client_id) fail("id_token_verification_error", "The ID token was issued to another client (azp).");
  // Step 11: the nonce we sent, compared in constant time.
  if (typeof payload.nonce !== "string" || !constantTimeEqualStrings(payload.nonce, expectedNonce)) {
    fail("id_token_verification_error", "The ID token's nonce does not match this sign-in.");
  }
  return {
    issuer: settings.issuer,
    subject: String(payload.sub),
    email: typeof payload.email === "string" ? payload.email : null,
    email_verified: typeof payload.email_verified === "boolean" ? payload.email_verified : null,
  };
}

const UserInfo = z.object({ sub: z.string(), email: z.string().optional(), email_verified: z.boolean().optional() });

/** UserInfo (OIDC Core §5.3) when the ID token carries no e-mail; its sub must equal the ID token's (§5.3.2). */
export async function fillEmailFromUserInfo(identity: VerifiedIdentity, discovery: Discovery, tokens: OAuth2Tokens): Promise<VerifiedIdentity> {
  if (identity.email !== null || discovery.userinfo_endpoint === null) return identity;
  const data = tokens.data as Record<string, unknown>;
  if (typeof data.access_token !== "string") return identity;
  let info: z.infer<typeof UserInfo>;
  try {
    const response = await fetch(discovery.userinfo_endpoint, {
      headers: { authorization: `Bearer ${data.access_token}`, accept: "application/json" },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (!response.ok) return identity;
    info = UserInfo.parse(await response.json());
  } catch {
    return identity;
  }
  if (info.sub !== identity.subject) fail("id_token_verification_error", "The UserInfo response names another subject than the ID token.");
  return { ...identity, email: info.email ?? null, email_verified: info.email_verified ?? null };
}
