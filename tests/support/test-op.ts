// A TEST STAND-IN for an OpenID Provider, not a real one: it issues whatever ID token a test asks
// for (wrong nonce, audience or issuer, expired, alg:none, HS256 with the client secret, an unknown
// key, no or unverified e-mail, another subject), which a real provider never would,
// so the relying party's refusals can be tested. It serves discovery, JWKS, /token and /userinfo over
// loopback HTTP, signs with jose, checks PKCE S256 and client_secret_basic, and counts /token calls.
import { SignJWT, exportJWK, type JWK } from "jose";
import type { KeyObject } from "node:crypto";
import { sha256Bytes } from "../../lib/crypto/hash.ts";
import { encodeBase64urlNoPadding } from "@oslojs/encoding";
import { borrowRsaKey, returnRsaKeys, type TestRsaKey } from "./test-keys.ts";

export interface IdTokenScenario {
  sub?: string;
  email?: string | null;
  email_verified?: boolean | null;
  nonce?: string;
  aud?: string | string[];
  iss?: string;
  azp?: string;
  /** Seconds added to the issue time (negative: in the past). */
  iatOffset?: number;
  /** Lifetime in seconds from iat (default 300). */
  lifetime?: number;
  alg?: "RS256" | "HS256" | "none";
  /** Sign with a key the JWKS does not hold, under the published kid. */
  unknownKey?: boolean;
  /** Answer the token request without an id_token. */
  omitIdToken?: boolean;
  /** Answer the token request with invalid_grant. */
  tokenError?: boolean;
  /** What /userinfo answers (default: sub and the e-mail of this scenario). */
  userinfo?: Record<string, unknown>;
}

export interface TestOp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Calls to /token so far. */
  tokenCalls: number;
  /** Calls to /jwks so far. */
  jwksCalls: number;
  /** Replaces the signing key under the same kid, as a provider that rotates carelessly would. */
  rotateKey(): Promise<void>;
  /** The authorization step: reads the URL Roost built and returns the code a browser would carry back. */
  authorize(authorizationUrl: string, scenario?: IdTokenScenario): { code: string; state: string; nonce: string; params: URLSearchParams };
  /** Makes discovery fail (500) until set back. */
  discoveryBroken: boolean;
  stop(): void;
}

export async function startTestOp(options: { clientId?: string; clientSecret?: string; nowSeconds?: () => number } = {}): Promise<TestOp> {
  const clientId = options.clientId ?? "roost-test-client";
  const clientSecret = options.clientSecret ?? "test-client-secret-0123456789";
  const now = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  // Keys from the process's pool (test-keys.ts); the stranger key is never the published one.
  const held: TestRsaKey[] = [borrowRsaKey(), borrowRsaKey()];
  let { publicKey, privateKey } = held[0]!;
  const stranger = held[1]!;
  const published = async (key: CryptoKey | KeyObject): Promise<JWK> => ({ ...(await exportJWK(key)), kid: "test-op-key", alg: "RS256", use: "sig" });
  let jwk = await published(publicKey);
  const codes = new Map<string, { nonce: string; challenge: string; redirectUri: string; scenario: IdTokenScenario }>();
  const accessTokens = new Map<string, IdTokenScenario>();

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request): Promise<Response> {
      const url = new URL(request.url);
      if (url.pathname === "/.well-known/openid-configuration") {
        if (op.discoveryBroken) return new Response("broken", { status: 500 });
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          userinfo_endpoint: `${issuer}/userinfo`,
          response_types_supported: ["code"],
          subject_types_supported: ["public"],
          id_token_signing_alg_values_supported: ["RS256"],
        });
      }
      if (url.pathname === "/jwks") {
        op.jwksCalls++;
        return Response.json({ keys: [jwk] });
      }
      if (url.pathname === "/token" && request.method === "POST") {
        op.tokenCalls++;
        const form = new URLSearchParams(await request.text());
        if (!clientAuthenticated(request.headers.get("authorization") ?? "")) return Response.json({ error: "invalid_client" }, { status: 401 });
        const grant = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        if (!grant || grant.redirectUri !== form.get("redirect_uri")) return Response.json({ error: "invalid_grant" }, { status: 400 });
        const verifier = form.get("code_verifier") ?? "";
        if (encodeBase64urlNoPadding(sha256Bytes(verifier)) !== grant.challenge)
          return Response.json({ error: "invalid_grant", error_description: "PKCE" }, { status: 400 });
        const s = grant.scenario;
        if (s.tokenError) return Response.json({ error: "invalid_grant" }, { status: 400 });
        const accessToken = crypto.randomUUID();
        accessTokens.set(accessToken, s);
        const body: Record<string, unknown> = { access_token: accessToken, token_type: "Bearer", expires_in: 300 };
        if (!s.omitIdToken) body.id_token = await idToken(s, grant.nonce);
        return Response.json(body);
      }
      if (url.pathname === "/userinfo") {
        const s = accessTokens.get((request.headers.get("authorization") ?? "").replace(/^Bearer /, ""));
        if (!s) return new Response(null, { status: 401 });
        const email = s.email === undefined ? "ada@example.test" : s.email;
        return Response.json(s.userinfo ?? { sub: s.sub ?? "sub-ada", ...(email === null ? {} : { email, email_verified: s.email_verified ?? true }) });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const issuer: string = `http://127.0.0.1:${server.port}`;

  /** client_secret_basic: both halves form-urlencoded before base64 (RFC 6749 §2.3.1). */
  function clientAuthenticated(header: string): boolean {
    if (!header.startsWith("Basic ")) return false;
    const decoded = atob(header.slice(6));
    const colon = decoded.indexOf(":");
    const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, " "));
    return colon > 0 && formDecode(decoded.slice(0, colon)) === clientId && formDecode(decoded.slice(colon + 1)) === clientSecret;
  }

  async function idToken(s: IdTokenScenario, nonce: string): Promise<string> {
    const iat = now() + (s.iatOffset ?? 0);
    const claims: Record<string, unknown> = { nonce: s.nonce ?? nonce };
    const email = s.email === undefined ? "ada@example.test" : s.email;
    if (email !== null) claims.email = email;
    const verified = s.email_verified === undefined ? true : s.email_verified;
    if (email !== null && verified !== null) claims.email_verified = verified;
    if (s.azp) claims.azp = s.azp;
    const payload = { ...claims, sub: s.sub ?? "sub-ada", iss: s.iss ?? issuer, aud: s.aud ?? clientId, iat, exp: iat + (s.lifetime ?? 300) };
    const alg = s.alg ?? "RS256";
    if (alg === "none") {
      const enc = (o: object) => encodeBase64urlNoPadding(new TextEncoder().encode(JSON.stringify(o)));
      return `${enc({ alg: "none", typ: "JWT" })}.${enc(payload)}.`;
    }
    const jwt = new SignJWT(payload).setProtectedHeader({ alg, kid: "test-op-key", typ: "JWT" });
    if (alg === "HS256") return jwt.sign(new TextEncoder().encode(clientSecret));
    return jwt.sign(s.unknownKey ? stranger.privateKey : privateKey);
  }

  const op: TestOp = {
    issuer,
    clientId,
    clientSecret,
    tokenCalls: 0,
    jwksCalls: 0,
    discoveryBroken: false,
    async rotateKey() {
      const replacement = borrowRsaKey();
      held.push(replacement);
      ({ publicKey, privateKey } = replacement);
      jwk = await published(publicKey);
    },
    authorize(authorizationUrl, scenario = {}) {
      const params = new URL(authorizationUrl).searchParams;
      if (params.get("code_challenge_method") !== "S256") throw new Error("the test OP requires PKCE S256");
      const code = crypto.randomUUID();
      codes.set(code, {
        nonce: params.get("nonce") ?? "",
        challenge: params.get("code_challenge") ?? "",
        redirectUri: params.get("redirect_uri") ?? "",
        scenario,
      });
      return { code, state: params.get("state") ?? "", nonce: params.get("nonce") ?? "", params };
    },
    stop() {
      server.stop(true);
      returnRsaKeys(...held);
    },
  };
  return op;
}
