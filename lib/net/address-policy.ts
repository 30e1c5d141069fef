// Which addresses Roost may reach at a URL someone configured: an integration's api_url (or a
// git remote) and a notification's webhook URL or SMTP host. Whoever sets such a URL could
// otherwise make Roost fetch cloud metadata services for them (instance credentials live at
// http://169.254.169.254/ on AWS, Azure, GCP and others; fd00:ec2::254 on AWS over IPv6;
// metadata.google.internal on GCP) or anything else on the link-local network. Those are
// refused unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true. Private networks (10/8, 172.16/12,
// 192.168/16, fc00::/7) and loopback stay allowed: self-hosted GitLab and chat servers live there.
//
// One policy, hostRefusal, checked twice: when the URL is saved (create and update answer 400,
// refuseSavedHost), on its literal host and on every address its name resolves to then; and
// again right before each request or delivery, so a name that later resolves elsewhere is
// caught too. (fetch resolves the name once more itself; a DNS answer that changes between the
// two lookups is not covered: a proxy that pins addresses, such as an egress firewall rule for
// 169.254.0.0/16, is the complete defence, see docs/api.md "Integrations".)
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { AddressSet, parseAddress } from "./addresses.ts";
import { fail } from "../http/errors.ts";

/** Names of metadata services that are not written as an address. */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata"]);

const LOOKUP_TIMEOUT_MS = 5000;

/**
 * The verdict on hosts that are decided by their text alone (an address, or a metadata name),
 * which never changes: a forge at an address gets one request for every commit status. A name
 * that is not decided by its text is looked up again before each request.
 */
const literalVerdicts = new Map<string, string | null>();
const MAX_LITERAL_VERDICTS = 256;

const LINK_LOCAL_V4 = "a link-local address (169.254.0.0/16, where cloud metadata services answer)";

/**
 * Refused ranges and why. 169.254.0.0/16 is RFC 3927 link-local, where the metadata services
 * listen; it is also refused inside IPv6: IPv4-compatible ::a.b.c.d (RFC 4291 section 2.5.5.1)
 * and NAT64 64:ff9b::a.b.c.d (RFC 6052). The IPv4-mapped form ::ffff:a.b.c.d is the IPv4 address
 * itself (lib/net/addresses.ts). fe80::/10 is IPv6 link-local (RFC 4291); fd00:ec2::254 is AWS's metadata.
 */
const REFUSED: Array<[AddressSet, string]> = [
  [AddressSet.of("169.254.0.0/16", "::169.254.0.0/112", "64:ff9b::169.254.0.0/112"), LINK_LOCAL_V4],
  [AddressSet.of("fe80::/10"), "a link-local address (fe80::/10)"],
  [AddressSet.of("fd00:ec2::254/128"), "a cloud metadata address (fd00:ec2::254)"],
];

/** Why an address is refused, or null (also null for anything that is not an address). */
export function refusedAddressReason(address: string): string | null {
  const parsed = parseAddress(address);
  if (!parsed) return null;
  return REFUSED.find(([set]) => set.has(parsed))?.[1] ?? null;
}

/** Why a URL's literal host is refused, or null. Names other than the metadata names pass here. */
export function refusedHostReason(hostname: string): string | null {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  if (METADATA_NAMES.has(name)) return "a cloud metadata service name";
  return refusedAddressReason(name);
}

/**
 * The address policy: why `hostname` may not be reached (it is, or resolves to, a refused
 * address), or null when every address is allowed or the app allows link-local
 * (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL). A name that does not resolve is left to the request,
 * which then fails as the host being unreachable.
 */
export async function hostRefusal(hostname: string, allowLinkLocal: boolean): Promise<string | null> {
  if (allowLinkLocal) return null;
  const known = literalVerdicts.get(hostname);
  if (known !== undefined) return known;
  const bare = hostname.replace(/^\[|\]$/g, "");
  const literal = refusedHostReason(bare);
  if (literal || isIP(bare) !== 0) {
    if (literalVerdicts.size >= MAX_LITERAL_VERDICTS) literalVerdicts.clear();
    literalVerdicts.set(hostname, literal);
    return literal;
  }
  let addresses: Array<{ address: string }>;
  let timer: Timer | undefined;
  try {
    // A resolver that does not answer must not hold a create request for its full retry cycle.
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("lookup timed out")), LOOKUP_TIMEOUT_MS)));
    addresses = await Promise.race([lookup(bare, { all: true, verbatim: true }), late]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
  for (const { address } of addresses) {
    const reason = refusedAddressReason(address);
    if (reason) return `a name that resolves to ${reason}`;
  }
  return null;
}

/** Saving a URL (or host) field whose host the policy refuses: 400 invalid_request naming the field. */
export async function refuseSavedHost(path: string, hostname: string | null, allowLinkLocal: boolean): Promise<void> {
  if (hostname === null) return;
  const reason = await hostRefusal(hostname, allowLinkLocal);
  if (!reason) return;
  const message = `must not be ${reason} unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true`;
  fail("invalid_request", `The body is not valid: ${path}: ${message}`, { details: [{ path, message }] });
}
