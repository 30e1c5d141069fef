// OpenID Connect sign-in as a Relying Party (spec §4, §7; docs/external-access.md).
//
// Which library does what:
// - oauth4webapi (OpenID Certified, by the author of jose and oidc-provider): discovery, the PKCE
//   S256 challenge, state and nonce values, the code exchange at the token endpoint
//   (client_secret_basic), the ID token's claims and its signature against the issuer's JWKS
//   (OIDC Core §3.1.3.7), and UserInfo (§5.3). No JWT is parsed by hand here.
// - jose: only HS* ID tokens, verified with the client secret (oauth4webapi verifies digital
//   signatures only), and only when the operator listed them.
// - @oslojs/encoding: base64url.
import { z } from "zod";
import * as oauth from "oauth4webapi";
import { compactVerify, decodeProtectedHeader } from "jose";
import { encodeBase64urlNoPadding } from "@oslojs/encoding";
import type { Clock } from "../http/context.ts";
import { fail } from "../http/errors.ts";
import { isLoopbackHostHeader } from "../net/addresses.ts";
import type { Discovery, OidcCache } from "./oidc-cache.ts";

/** Asymmetric algorithms accepted by default; `none` never, HS* only when an operator lists them. */
export const DEFAULT_ID_TOKEN_ALGS = ["RS256", "PS256", "ES256", "EdDSA"];
const ALLOWED_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519", "HS256", "HS384", "HS512"] as const;
/** Clock skew tolerated on exp/iat, and the oldest iat accepted. */
const CLOCK_SKEW_SECONDS = 60;
const MAX_ID_TOKEN_AGE_SECONDS = 600;
const DISCOVERY_TTL_SECONDS = 10 * 60;
/** How long a request to the identity provider (discovery, JWKS, the token endpoint) may take. */
export const FETCH_TIMEOUT_MS = 5000;
/** At most one JWKS refetch forced by a failed signature per issuer in this many seconds. */
export const JWKS_REFETCH_COOLDOWN_SECONDS = 30;

/** https, or http to a loopback host (a provider on the same machine, and the test suite). */
const ProviderUrl = z.url().refine((u) => {
  // zod runs this refinement even when .url() has already refused the value, so parse safely.
  const url = URL.parse(u);
  return url !== null && (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHostHeader(url.host)));
}, "must be an https URL (http only for a loopback host)");

export const OidcSettingsBody = z
  .object({
    issuer: ProviderUrl.describe("the issuer identifier, exactly as the provider's discovery document states it"),
    client_id: z.string().min(1).max(500),
    client_secret: z.string().min(1).max(2000).describe("stored encrypted; never returned"),
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/))
      .max(20)
      .optional()
      .describe("default openid email profile; openid is always sent"),
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

// --- discovery and caches (the cache itself: ./oidc-cache.ts) ------------------------------------

/** The oauth4webapi request options: a timeout, and plain http only for a loopback issuer (ProviderUrl). */
function requestOptions(issuer: string): { signal: AbortSignal; [oauth.allowInsecureRequests]: boolean } {
  return { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), [oauth.allowInsecureRequests]: new URL(issuer).protocol === "http:" };
}

/** The provider's discovery document (OIDC Discovery §4); 502 oidc_discovery_error when unusable. */
export async function discover(ctx: { oidc: OidcCache; clock: Clock }, issuer: string): Promise<Discovery> {
  const now = ctx.clock.now();
  const cached = ctx.oidc.discovery.get(issuer);
  if (cached && cached.until > now) return cached.discovery;
  let metadata: oauth.AuthorizationServer;
  try {
    const expected = new URL(issuer);
    metadata = await oauth.processDiscoveryResponse(expected, await oauth.discoveryRequest(expected, requestOptions(issuer)));
  } catch (error) {
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) otherIssuer();
    fail("oidc_discovery_error");
  }
  // OIDC Discovery §4.3: the issuer in the document must equal the configured one exactly
  // (oauth4webapi compares them as URLs, which forgives a trailing slash).
  if (metadata.issuer !== issuer) otherIssuer();
  const { authorization_endpoint, token_endpoint, jwks_uri } = metadata;
  if (!isUrl(authorization_endpoint) || !isUrl(token_endpoint) || !isUrl(jwks_uri)) {
    fail("oidc_discovery_error");
  }
  const discovery: Discovery = { ...metadata, authorization_endpoint, token_endpoint, jwks_uri };
  ctx.oidc.discovery.set(issuer, { discovery, until: now + DISCOVERY_TTL_SECONDS });
  return discovery;
}

function otherIssuer(): never {
  fail("oidc_discovery_error", "The identity provider's discovery document names another issuer.");
}

function isUrl(value: unknown): value is string {
  return typeof value === "string" && URL.canParse(value);
}

// --- start ---------------------------------------------------------------------------------------

/** 256 random bits, base64url: browser bindings. */
export function randomToken(): string {
  return encodeBase64urlNoPadding(crypto.getRandomValues(new Uint8Array(32)));
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

/** The authorization request (OIDC Core §3.1.2.1) with PKCE S256 (RFC 7636), a state and a nonce of 256 random bits each. */
export async function buildAuthorizationUrl(discovery: Discovery, clientId: string, redirectUri: string, scopes: string[]): Promise<StartedAuthorization> {
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const url = new URL(discovery.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", clientId);
  url.searchParams.set("redirect_uri", redirectUri);
  url.searchParams.set("scope", scopes.join(" "));
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set("code_challenge_method", "S256");
  url.searchParams.set("nonce", nonce);
  url.searchParams.set("claims", CLAIMS_REQUEST);
  return { authorization_url: url.toString(), state, nonce, code_verifier: codeVerifier };
}

// --- callback ------------------------------------------------------------------------------------

export interface OidcClientSettings {
  client_id: string;
  client_secret: string;
  id_token_algs: string[];
}

/**
 * Exchanges the code (with the PKCE verifier) at the token endpoint; 502 token_exchange_error when
 * the provider refuses or cannot be reached, 502 missing_id_token when it answers without an ID
 * token. Returns the token response for verifyIdToken.
 */
export async function exchangeCode(
  discovery: Discovery,
  client: { client_id: string; client_secret: string; redirect_uri: string },
  callback: { code: string; state: string },
  codeVerifier: string,
): Promise<Response> {
  const oauthClient: oauth.Client = { client_id: client.client_id };
  // The frontend posts code and state, not the `iss` response parameter. RFC 9207 defends a
  // client that talks to several providers against mix-up; Roost talks to exactly one, and the
  // ID token's iss is checked against it below. The state was matched by the caller.
  const parameters = oauth.validateAuthResponse(
    { ...discovery, authorization_response_iss_parameter_supported: false },
    oauthClient,
    new URLSearchParams(callback),
    callback.state,
  );
  let response: Response;
  try {
    response = await oauth.authorizationCodeGrantRequest(
      discovery,
      oauthClient,
      oauth.ClientSecretBasic(client.client_secret),
      parameters,
      client.redirect_uri,
      codeVerifier,
      requestOptions(discovery.issuer),
    );
  } catch {
    fail("token_exchange_error");
  }
  if (response.status !== 200) {
    let reason = "";
    try {
      await oauth.processAuthorizationCodeResponse(discovery, oauthClient, response);
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) reason = `: ${error.error}`;
    }
    fail("token_exchange_error", `The identity provider refused the authorization code${reason}.`);
  }
  const body: unknown = await response
    .clone()
    .json()
    .catch(() => null);
  if (typeof body !== "object" || body === null) fail("token_exchange_error");
  const idToken = (body as Record<string, unknown>).id_token;
  if (typeof idToken !== "string" || idToken === "") fail("missing_id_token", "The identity provider returned no ID token.");
  return response;
}

export interface VerifiedIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  email_verified: boolean | null;
}

const UNTRUSTED_AUDIENCE = "The ID token names an audience this client does not trust (aud).";
const AZP_MISMATCH = "The ID token was issued to another client (azp).";

/**
 * OIDC Core §3.1.3.7, steps 2–11, on the token response from exchangeCode; 502
 * id_token_verification_error on any failure. Returns the identity and the access token for UserInfo.
 */
export async function verifyIdToken(
  ctx: { oidc: OidcCache },
  discovery: Discovery,
  settings: OidcClientSettings,
  tokenResponse: Response,
  expectedNonce: string,
  nowSeconds: number,
): Promise<{ identity: VerifiedIdentity; access_token: string }> {
  // Step 7: the operator's algorithm allow-list, not what the provider advertises ("none" is never in it).
  const as: Discovery = { ...discovery, id_token_signing_alg_values_supported: settings.id_token_algs };
  const client: oauth.Client = {
    client_id: settings.client_id,
    // oauth4webapi reads the wall clock; this shifts it to the instance's clock (tests set their own).
    [oauth.clockSkew]: nowSeconds - Math.floor(Date.now() / 1000),
    [oauth.clockTolerance]: CLOCK_SKEW_SECONDS,
  };
  let result: oauth.TokenEndpointResponse;
  try {
    // Steps 2–5, 9 and 11: iss, aud, azp when several audiences, exp, the nonce we sent.
    result = await oauth.processAuthorizationCodeResponse(as, client, tokenResponse, { expectedNonce, requireIdToken: true });
  } catch (error) {
    fail("id_token_verification_error", idTokenFailure(error));
  }
  const claims = oauth.getValidatedIdTokenClaims(result)!;
  // Step 3: "MUST be rejected if ... it contains additional audiences not trusted by the Client".
  // Roost trusts only itself, so every audience must be its client id, with or without an azp.
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (audiences.some((audience) => audience !== settings.client_id)) fail("id_token_verification_error", UNTRUSTED_AUDIENCE);
  // Step 5: "If an azp (authorized party) Claim is present, the Client SHOULD verify that its
  // client_id is the Claim Value". oauth4webapi checks azp only beside several audiences; a token
  // issued to another client and addressed to us alone is not ours to accept either.
  if (claims.azp !== undefined && claims.azp !== settings.client_id) fail("id_token_verification_error", AZP_MISMATCH);
  // Step 10: iat neither in the future nor too old, with the same skew.
  if (claims.iat > nowSeconds + CLOCK_SKEW_SECONDS) fail("id_token_verification_error", "The ID token was issued in the future (iat).");
  if (nowSeconds - claims.iat - CLOCK_SKEW_SECONDS > MAX_ID_TOKEN_AGE_SECONDS) fail("id_token_verification_error", "The ID token is too old (iat).");
  // Step 6: the signature. Roost received the token straight from the token endpoint, but checks it
  // anyway, so a compromised or misconfigured transport cannot forge an identity.
  await verifySignature(ctx.oidc, as, tokenResponse, result.id_token!, settings.client_secret, nowSeconds);
  return {
    identity: {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof claims.email === "string" ? claims.email : null,
      email_verified: typeof claims.email_verified === "boolean" ? claims.email_verified : null,
    },
    access_token: result.access_token,
  };
}

/** Our own message for each claim oauth4webapi refuses, so a body never depends on its wording. */
function idTokenFailure(error: unknown): string {
  if (error instanceof oauth.OperationProcessingError) {
    const claim = (error.cause as { claim?: unknown } | undefined)?.claim;
    if (claim === "aud") return UNTRUSTED_AUDIENCE;
    if (claim === "azp") return AZP_MISMATCH;
    if (claim === "iss") return "The ID token was issued by another issuer (iss).";
    if (claim === "exp") return "The ID token has expired (exp).";
    if (claim === "nonce") return "The ID token's nonce does not match this sign-in.";
    if (/"alg"/.test(error.message)) return "The ID token is signed with an algorithm this instance does not accept (alg).";
  }
  return "The ID token failed verification.";
}

const BAD_SIGNATURE = "The ID token's signature does not verify with the identity provider's keys.";

/**
 * HS* with the client secret; anything else against the issuer's JWKS. A provider may replace its
 * key under the same kid (oauth4webapi refetches by itself only for an unknown kid), so a failure
 * with a cached key set refetches it once and retries, at most once per
 * JWKS_REFETCH_COOLDOWN_SECONDS per issuer, so that a flood of bad tokens cannot hammer the provider.
 */
async function verifySignature(
  cache: OidcCache,
  as: Discovery,
  tokenResponse: Response,
  idToken: string,
  clientSecret: string,
  nowSeconds: number,
): Promise<void> {
  const { alg } = decodeProtectedHeader(idToken); // already checked against the allow-list
  if (alg?.startsWith("HS")) {
    try {
      await compactVerify(idToken, new TextEncoder().encode(clientSecret), { algorithms: [alg] });
      return;
    } catch {
      fail("id_token_verification_error", BAD_SIGNATURE);
    }
  }
  let keys = cache.keys.get(as.issuer);
  if (!keys || keys.jwks_uri !== as.jwks_uri) {
    keys = { jwks_uri: as.jwks_uri, jwks: {}, forced_refetch_at: null };
    cache.keys.set(as.issuer, keys);
  }
  const entry = keys;
  // A fresh metadata object per attempt: oauth4webapi keeps its own key cache per object, so this
  // one (entry.jwks) is the only one that lasts.
  const attempt = () => oauth.validateApplicationLevelSignature({ ...as }, tokenResponse, { ...requestOptions(as.issuer), [oauth.jwksCache]: entry.jwks });
  const fetchedAt = entry.jwks.uat;
  try {
    await attempt();
    return;
  } catch {
    // A key set fetched during this attempt is already current: nothing to retry.
    const fromCache = fetchedAt !== undefined && entry.jwks.uat === fetchedAt;
    const cooling = entry.forced_refetch_at !== null && nowSeconds - entry.forced_refetch_at < JWKS_REFETCH_COOLDOWN_SECONDS;
    if (!fromCache || cooling) fail("id_token_verification_error", BAD_SIGNATURE);
  }
  entry.forced_refetch_at = nowSeconds;
  entry.jwks = {};
  try {
    await attempt();
  } catch {
    fail("id_token_verification_error", BAD_SIGNATURE);
  }
}

/** UserInfo (OIDC Core §5.3) when the ID token carries no e-mail; its sub must equal the ID token's (§5.3.2). */
export async function fillEmailFromUserInfo(
  identity: VerifiedIdentity,
  discovery: Discovery,
  clientId: string,
  accessToken: string,
): Promise<VerifiedIdentity> {
  if (identity.email !== null || discovery.userinfo_endpoint === undefined) return identity;
  const client: oauth.Client = { client_id: clientId };
  let info: oauth.UserInfoResponse;
  try {
    const response = await oauth.userInfoRequest(discovery, client, accessToken, requestOptions(discovery.issuer));
    info = await oauth.processUserInfoResponse(discovery, client, identity.subject, response);
  } catch (error) {
    if (error instanceof oauth.OperationProcessingError && error.code === oauth.JSON_ATTRIBUTE_COMPARISON) {
      fail("id_token_verification_error", "The UserInfo response names another subject than the ID token.");
    }
    return identity;
  }
  return {
    ...identity,
    email: typeof info.email === "string" ? info.email : null,
    email_verified: typeof info.email_verified === "boolean" ? info.email_verified : null,
  };
}
