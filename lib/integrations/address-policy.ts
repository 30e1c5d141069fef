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

/** Names of metadata services that are not written as an address. */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata.goog", "metadata"]);

let allowLinkLocal = false;

/** Set once from the configuration (ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL) when the app is created. */
export function setLinkLocalAllowed(allowed: boolean): void {
  allowLinkLocal = allowed;
}

export function linkLocalAllowed(): boolean {
  return allowLinkLocal;
}

/** The four bytes of an IPv4 address, also when written IPv4-mapped or IPv4-compatible in IPv6. */
function ipv4Bytes(address: string): number[] | null {
  const a = address.toLowerCase().replace(/^\[|\]$/g, "");
  const dotted = /^(?:::ffff:|::)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (dotted) return dotted.slice(1, 5).map(Number);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
  }
  return null;
}

/** The eight 16-bit groups of an IPv6 address, or null. */
function ipv6Groups(address: string): number[] | null {
  const a = address.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (isIP(a) !== 6) return null;
  let text = a;
  const v4 = ipv4Bytes(a);
  if (v4 && a.includes(".")) text = a.replace(/\d+\.\d+\.\d+\.\d+$/, `${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`);
  const [head, tail] = text.includes("::") ? text.split("::") : [text, null];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const missing = 8 - left.length - right.length;
  const groups = [...left, ...Array(tail === null ? 0 : missing).fill("0"), ...right].map((g) => parseInt(g, 16));
  return groups.length === 8 ? groups : null;
}

/**
 * Why an address is refused, or null: 169.254.0.0/16 (RFC 3927 link-local, where the metadata
 * services listen), fe80::/10 (RFC 4291 link-local) and AWS's IPv6 metadata address fd00:ec2::254.
 */
export function refusedAddressReason(address: string): string | null {
  const v4 = ipv4Bytes(address);
  if (v4) return v4[0] === 169 && v4[1] === 254 ? "a link-local address (169.254.0.0/16, where cloud metadata services answer)" : null;
  const v6 = ipv6Groups(address);
  if (!v6) return null;
  // IPv4 inside IPv6: ::a.b.c.d (compatible), ::ffff:a.b.c.d (mapped), 64:ff9b::a.b.c.d (NAT64, RFC 6052).
  const zeros = v6.slice(0, 5).every((g) => g === 0) && (v6[5] === 0 || v6[5] === 0xffff);
  const nat64 = v6[0] === 0x64 && v6[1] === 0xff9b && v6.slice(2, 6).every((g) => g === 0);
  if (zeros || nat64) return v6[6]! >> 8 === 169 && (v6[6]! & 0xff) === 254 ? "a link-local address (169.254.0.0/16, where cloud metadata services answer)" : null;
  if ((v6[0]! & 0xffc0) === 0xfe80) return "a link-local address (fe80::/10)";
  if (v6.join(":") === [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254].join(":")) return "a cloud metadata address (fd00:ec2::254)";
  return null;
}

/** Why a URL's literal host is refused, or null. Names other than the metadata names pass here. */
export function refusedHostReason(hostname: string): string | null {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  if (METADATA_NAMES.has(name)) return "a cloud metadata service name";
  return refusedAddressReason(name);
}

/**
 * Refuses `hostname` (unless link-local is allowed) when it is, or resolves to, a refused
 * address. Returns the reason, or null when every address is allowed. A name that does not
 * resolve is left to fetch, which then fails as the host being unreachable.
 */
export async function hostRefusal(hostname: string): Promise<string | null> {
  if (allowLinkLocal) return null;
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
