// Peer-address facts. Trust is decided from the socket's peer address only, never from Host,
// X-Forwarded-For or Forwarded: any client can send those (RFC 7239 §8.1).
import { networkInterfaces } from "node:os";

/** Strips the IPv4-mapped IPv6 form (::ffff:127.0.0.1 → 127.0.0.1). */
export function normalizeAddress(address: string): string {
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped ? mapped[1]! : lower;
}

export function isLoopbackAddress(address: string | null): boolean {
  if (!address) return false;
  const a = normalizeAddress(address);
  if (/^127\.\d+\.\d+\.\d+$/.test(a)) return true;
  return a === "::1" || a === "0:0:0:0:0:0:0:1";
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
  if (isLoopbackAddress(address)) return true;
  const a = normalizeAddress(address);
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((i) => normalizeAddress(i.address.split("%")[0]!) === a));
}
