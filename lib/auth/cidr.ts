// CIDR matching for the trusted-proxy allow-list: IPv4, IPv6 and the IPv4-mapped IPv6 form
// (::ffff:a.b.c.d counts as a.b.c.d, in the list and in the peer address alike).
import { isIP } from "node:net";

export interface Cidr {
  family: 4 | 6;
  /** The network address as a number (32 or 128 bits). */
  network: bigint;
  prefix: number;
}

function ipv4ToBigInt(text: string): bigint {
  return text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function ipv6ToBigInt(text: string): bigint {
  let t = text;
  const tail: string[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(t);
  if (dotted) {
    const v4 = ipv4ToBigInt(dotted[1]!);
    tail.push(((v4 >> 16n) & 0xffffn).toString(16), (v4 & 0xffffn).toString(16));
    t = t.slice(0, -dotted[1]!.length) + tail.join(":");
  }
  const [head, rest] = t.split("::") as [string, string | undefined];
  const headGroups = head ? head.split(":") : [];
  const restGroups = rest === undefined ? [] : rest ? rest.split(":") : [];
  const zeros = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(zeros).fill("0"), ...restGroups];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}


/** An address as family and number, with ::ffff:a.b.c.d unwrapped to IPv4; null when not an IP address. */
export function parseAddress(text: string): { family: 4 | 6; value: bigint } | null {
  let t = text.trim().toLowerCase();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  const family = isIP(t);
  if (family === 4) return { family: 4, value: ipv4ToBigInt(t) };
  if (family !== 6) return null;
  const value = ipv6ToBigInt(t.replace(/%.*$/, ""));
  if (value >> 32n === 0xffffn) return { family: 4, value: value & 0xffffffffn };
  return { family: 6, value };
}

export function parseCidr(text: string): Cidr | null {
  const [address, prefixText, extra] = text.trim().split("/");
  if (extra !== undefined || address === undefined) return null;
  const parsed = parseAddress(address);
  if (!parsed) return null;
  const max = parsed.family === 4 ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) return null;
    prefix = Number(prefixText);
    // A mapped prefix (::ffff:10.0.0.0/104) is the IPv4 prefix plus 96.
    if (parsed.family === 4 && address.includes(":")) prefix -= 96;
    if (prefix < 0 || prefix > max) return null;
  }
  const bits = BigInt(max - prefix);
  return { family: parsed.family, network: (parsed.value >> bits) << bits, prefix };
}

export function cidrContains(cidr: Cidr, address: string | null): boolean {
  if (!address) return false;
  const a = parseAddress(address);
  if (!a || a.family !== cidr.family) return false;
  const bits = BigInt((cidr.family === 4 ? 32 : 128) - cidr.prefix);
  return (a.value >> bits) << bits === cidr.network;
}

/**
 * Loopback ranges, and ranges wider than a /24 (IPv4) or /64 (IPv6), hold many possible callers
 * (any local process; a whole network), so a shared secret is mandatory for them:
 * the peer address alone does not prove the request came through the proxy.
 */
export function needsSharedSecret(cidr: Cidr): boolean {
  const loopback = cidr.family === 4 ? cidr.network >> 24n === 127n || cidr.prefix < 8 : (cidr.network === 1n && cidr.prefix === 128) || cidr.prefix === 0;
  return loopback || (cidr.family === 4 ? cidr.prefix < 24 : cidr.prefix < 64);
}

