// Trusted-proxy sign-in (docs/external-access.md). A reverse proxy that
// has authenticated the user forwards the e-mail in one header; Roost believes it only when the
// socket peer is on the allow-list (never X-Forwarded-For) and, when configured, the shared
// secret header matches. The header is honoured by POST /v1/auth/trusted-proxy/login alone.
import { z } from "zod";
import { fail } from "../http/errors.ts";
import { Email } from "../schemas/shared.ts";
import { AddressSet, needsSharedSecret, parseCidr, type Cidr } from "../net/addresses.ts";
import { hashSecret, secretMatches } from "./secrets.ts";
import type { TrustedProxySettings } from "./sign-in-settings-store.ts";

export const DEFAULT_IDENTITY_HEADER = "X-Roost-User-Email";
export const SHARED_SECRET_HEADER = "X-Roost-Trusted-Proxy-Secret";
/** Headers that carry something else; naming one as the identity header would trust it for identity. */
const RESERVED_HEADERS = new Set([
  "authorization",
  "cookie",
  "host",
  "origin",
  "content-type",
  "content-length",
  "x-forwarded-for",
  "forwarded",
  "x-real-ip",
  SHARED_SECRET_HEADER.toLowerCase(),
]);

export const TrustedProxySettingsBody = z
  .object({
    trusted_peers: z
      .array(z.string().refine((p) => parseCidr(p) !== null, "must be an IPv4/IPv6 address or CIDR"))
      .min(1)
      .max(50)
      .describe("socket peer addresses or CIDRs of the proxy (IPv4, IPv6, ::ffff: mapped)"),
    identity_header: z
      .string()
      .regex(/^[A-Za-z0-9-]{1,64}$/, "must be a header name of letters, digits and dashes")
      .refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), "must not be a header clients or proxies set for other purposes")
      .optional()
      .describe(`default ${DEFAULT_IDENTITY_HEADER}`),
    shared_secret: z
      .string()
      .min(16)
      .max(500)
      .nullable()
      .optional()
      .describe(
        `sent by the proxy in ${SHARED_SECRET_HEADER}; mandatory when a trusted peer is loopback or a range wider than /24 (IPv4) or /64 (IPv6). Omit to keep the current one, null to remove it`,
      ),
  })
  .strict();

export const PublicTrustedProxySettings = z.object({
  trusted_peers: z.array(z.string()),
  identity_header: z.string(),
  shared_secret_set: z.boolean(),
  updated_at: z.number().int(),
});

/** The settings to store: the secret kept as SHA-256 only; 400 when a broad or loopback peer has no secret. */
export function resolveTrustedProxySettings(
  body: z.output<typeof TrustedProxySettingsBody>,
  current: TrustedProxySettings | null,
): Omit<TrustedProxySettings, "updated_at"> {
  const secretHash =
    body.shared_secret === undefined ? (current?.shared_secret_hash ?? null) : body.shared_secret === null ? null : hashSecret(body.shared_secret);
  const broad = body.trusted_peers.filter((p) => needsSharedSecret(parseCidr(p)!));
  if (broad.length > 0 && secretHash === null) {
    fail("invalid_request", "A shared secret is required when a trusted peer is a loopback address or a broad range.", {
      details: [{ path: "shared_secret", message: `required for ${broad.join(", ")}` }],
    });
  }
  return { trusted_peers: body.trusted_peers, identity_header: body.identity_header ?? DEFAULT_IDENTITY_HEADER, shared_secret_hash: secretHash };
}

export function isTrustedPeer(settings: TrustedProxySettings, peer: string | null): boolean {
  return new AddressSet(settings.trusted_peers.map(parseCidr).filter((c): c is Cidr => c !== null)).has(peer);
}

/** Steps 2–4 of the login: secret, then identity; returns the forwarded e-mail. */
export function forwardedIdentity(settings: TrustedProxySettings, headers: Headers): string {
  if (settings.shared_secret_hash !== null) {
    const presented = headers.get(SHARED_SECRET_HEADER);
    if (presented === null) fail("trusted_proxy_shared_secret_missing", `The trusted proxy must send ${SHARED_SECRET_HEADER}.`);
    // Constant time over SHA-256 digests: neither content nor length leaks (prevents timing attacks).
    if (!secretMatches(presented, settings.shared_secret_hash)) fail("trusted_proxy_shared_secret_invalid", `${SHARED_SECRET_HEADER} does not match.`);
  }
  // Repeated headers arrive joined with ", ": a list is refused, never its first or last entry.
  const value = headers.get(settings.identity_header);
  if (value === null || value.trim() === "") fail("trusted_proxy_identity_missing", `The trusted proxy sent no ${settings.identity_header} header.`);
  if (value.includes(",")) fail("trusted_proxy_identity_invalid", `${settings.identity_header} must carry exactly one e-mail address.`);
  const parsed = Email.safeParse(value);
  if (!parsed.success) fail("trusted_proxy_identity_invalid", `${settings.identity_header} is not a valid e-mail address.`);
  return parsed.data;
}
