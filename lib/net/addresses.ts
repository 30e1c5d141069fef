// IP addresses: the one place that parses and normalises them, and CIDR membership through
// node:net's BlockList. Trust is decided from the socket's peer address only, never from Host,
// X-Forwarded-For or Forwarded: any client can send those (RFC 7239 §8.1).
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";

export interface Address {
  family: 4 | 6;
  /** Canonical text: lower case, IPv6 compressed (RFC 5952), IPv4-mapped IPv6 unwrapped to IPv4. */
  address: string;
}

export interface Cidr extends Address {
  prefix: number;
}

/**
 * An address in any spelling, or null when it is not one: brackets and an IPv6 zone (%eth0) are
 * dropped, and the IPv4-mapped form (::ffff:a.b.c.d, also written ::ffff:a0b:c0d; RFC 4291
 * section 2.5.5.2) counts as the IPv4 address it carries.
 */
export function parseAddress(text: string): Address | null {
  let t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  t = t.replace(/%[^%]*$/, "");
  const family = isIP(t);
  if (family === 4) return { family: 4, address: t };
  if (family !== 6) return null;
  // The WHATWG URL parser writes IPv6 in its canonical form (dotted tails become hex groups).
  const canonical = URL.parse(`http://[${t}]/`)?.hostname.slice(1, -1);
  if (!canonical) return null;
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return { family: 6, address: canonical };
  const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return { family: 4, address: [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join(".") };
}

/** An address or CIDR (10.0.0.0/8, 2001:db8::/32, ::ffff:10.0.0.0/104 as 10.0.0.0/8); null when invalid. */
export function parseCidr(text: string): Cidr | null {
  const [addressText, prefixText, extra] = text.trim().split("/");
  if (extra !== undefined || addressText === undefined) return null;
  const parsed = parseAddress(addressText);
  if (!parsed) return null;
  const max = parsed.family === 4 ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) return null;
    prefix = Number(prefixText);
    // A mapped prefix (::ffff:10.0.0.0/104) is the IPv4 prefix plus 96.
    if (parsed.family === 4 && addressText.includes(":")) prefix -= 96;
    if (prefix < 0 || prefix > max) return null;
  }
  return { ...parsed, prefix };
}

/**
 * A set of CIDRs. BlockList alone matches across families (::/0 would contain 10.0.0.1 as
 * ::ffff:10.0.0.1), so addresses are normalised first and each family has its own list.
 */
export class AddressSet {
  private readonly lists = { 4: new BlockList(), 6: new BlockList() };

  constructor(cidrs: Iterable<Cidr>) {
    for (const c of cidrs) this.lists[c.family].addSubnet(c.address, c.prefix, c.family === 4 ? "ipv4" : "ipv6");
  }

  static of(...cidrs: string[]): AddressSet {
    return new AddressSet(
      cidrs.map((text) => {
        const cidr = parseCidr(text);
        if (!cidr) throw new Error(`not a CIDR: ${text}`);
        return cidr;
      }),
    );
  }

  has(address: string | Address | null): boolean {
    const a = typeof address === "string" ? parseAddress(address) : address;
    return a !== null && this.lists[a.family].check(a.address, a.family === 4 ? "ipv4" : "ipv6");
  }
}

const LOOPBACK = AddressSet.of("127.0.0.0/8", "::1/128");

export function isLoopbackAddress(address: string | null): boolean {
  return address !== null && LOOPBACK.has(address);
}

/**
 * Loopback ranges, and ranges wider than a /24 (IPv4) or /64 (IPv6), hold many possible callers
 * (any local process; a whole network), so a trusted proxy's shared secret is mandatory for them:
 * the peer address alone does not prove the request came through the proxy.
 */
export function needsSharedSecret(cidr: Cidr): boolean {
  if (cidr.prefix < (cidr.family === 4 ? 24 : 64)) return true;
  return LOOPBACK.has(cidr) || new AddressSet([cidr]).has(cidr.family === 4 ? "127.0.0.1" : "::1");
}

/** Host header names a browser would use for this machine's loopback (DNS-rebinding defence). */
export function isLoopbackHostHeader(host: string | null): boolean {
  if (!host) return false;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:]+)(:\d{1,5})?$/.exec(host.trim());
  if (!m) return false;
  const name = m[1]!.toLowerCase();
  if (name === "localhost") return true;
  return isLoopbackAddress(name.startsWith("[") ? name.slice(1, -1) : name);
}

/** An Origin header is acceptable for loopback-only endpoints when absent or itself a loopback origin. */
export function isLoopbackOrigin(origin: string | null): boolean {
  if (origin === null) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHostHeader(url.host);
  } catch {
    return false;
  }
}

/**
 * Whether a peer address is this machine: loopback, or an address of one of this host's own
 * network interfaces (a client on this host that dials the host's LAN or public address).
 */
export function isThisHostAddress(address: string | null): boolean {
  if (!address) return false;
  const a = parseAddress(address);
  if (!a) return false;
  if (LOOPBACK.has(a)) return true;
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => parseAddress(i.address)?.address === a.address));
}
