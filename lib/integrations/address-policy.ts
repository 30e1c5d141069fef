// Which addresses an integration's api_url may reach. An admin can point api_url anywhere, so
// without a rule Roost would fetch cloud metadata services for them (instance credentials live at
// http://169.254.169.254/ on AWS, Azure, GCP and others; fd00:ec2::254 on AWS over IPv6;
// metadata.google.internal on GCP) and anything else on the link-local network. Those are
// refused unless ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL=true. Private networks (10/8, 172.16/12,
// 192.168/16, fc00::/7) and loopback stay allowed: self-hosted GitLab lives there.
//
// The check runs on the literal host when an integration is created and again on every address
// the name resolves to right before each request, so a name that later resolves elsewhere is
// caught too. (fetch resolves the name once more itself; a DNS answer that changes between the
// two lookups is not covered: a proxy that pins addresses, such as an egress firewall rule for
// 169.254.0.0/16, is the complete defence, see docs/api.md.)
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { AddressSet, parseAddress } from "../net.ts";

/** Names of metadata services that are not written as an address. */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata"]);

const LINK_LOCAL_V4 = "a link-local address (169.254.0.0/16, where cloud metadata services answer)";

/**
 * Refused ranges and why. 169.254.0.0/16 is RFC 3927 link-local, where the metadata services
 * listen; it is also refused inside IPv6: IPv4-compatible ::a.b.c.d (RFC 4291 section 2.5.5.1)
 * and NAT64 64:ff9b::a.b.c.d (RFC 6052). The IPv4-mapped form ::ffff:a.b.c.d is the IPv4 address
 * itself (lib/net.ts). fe80::/10 is IPv6 link-local (RFC 4291); fd00:ec2::254 is AWS's metadata.
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
 * Refuses `hostname` when it is, or resolves to, a refused address (callers skip this when the
 * app allows link-local). Returns the reason, or null when every address is allowed. A name that
 * does not resolve is left to fetch, which then fails as the host being unreachable.
 */
export async function hostRefusal(hostname: string): Promise<string | null> {
  const literal = refusedHostReason(hostname);
  if (literal) return literal;
  const bare = hostname.replace(/^\[|\]$/g, "");
  if (isIP(bare) !== 0) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(bare, { all: true, verbatim: true });
  } catch {
    return null;
  }
  for (const { address } of addresses) {
    const reason = refusedAddressReason(address);
    if (reason) return `a name that resolves to ${reason}`;
  }
  return null;
}
