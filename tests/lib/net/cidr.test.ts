// The trusted-proxy allow-list's address matching (lib/net/addresses.ts).
import { describe, expect, test } from "bun:test";
import { AddressSet, needsSharedSecret, parseAddress, parseCidr } from "../../../lib/net/addresses.ts";

const cidrContains = (cidr: NonNullable<ReturnType<typeof parseCidr>>, address: string | null) => new AddressSet([cidr]).has(address);

describe("CIDR matching", () => {
  const cases: [string, string, boolean][] = [
    ["10.0.0.0/8", "10.255.1.2", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["10.0.0.5", "10.0.0.5", true],
    ["10.0.0.5", "10.0.0.6", false],
    ["10.0.0.0/8", "::ffff:10.1.2.3", true],
    ["::ffff:10.0.0.0/104", "10.9.9.9", true],
    ["::ffff:127.0.0.2", "127.0.0.2", true],
    ["2001:db8::/32", "2001:db8:ffff::1", true],
    ["2001:db8::/32", "2001:db9::1", false],
    ["::1", "::1", true],
    ["::1", "127.0.0.1", false],
    ["127.0.0.1", "::1", false],
    ["0.0.0.0/0", "8.8.8.8", true],
    ["::/0", "10.0.0.1", false],
    ["fe80::1/128", "FE80:0:0:0:0:0:0:1", true],
    ["fe80::/64", "fe80::1%eth0", true],
    ["10.0.0.0/8", "::ffff:a01:203", true],
    ["::ffff:a00:0/104", "10.1.2.3", true],
    ["[2001:db8::1]", "2001:db8:0:0::1", true],
    ["::/0", "::ffff:10.0.0.1", false],
  ];
  for (const [cidr, address, expected] of cases) {
    test(`${cidr} ${expected ? "contains" : "does not contain"} ${address}`, () => {
      expect(cidrContains(parseCidr(cidr)!, address)).toBe(expected);
    });
  }

  test("invalid entries are refused", () => {
    for (const bad of ["", "10.0.0.256", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/8/8", "example.test", "::ffff:10.0.0.0/95"])
      expect([bad, parseCidr(bad)]).toEqual([bad, null]);
    expect(parseAddress("not-an-ip")).toBeNull();
    expect(cidrContains(parseCidr("10.0.0.0/8")!, null)).toBe(false);
  });

  test("loopback and broad ranges need a shared secret; a single host or a /24 does not", () => {
    const need = (c: string) => needsSharedSecret(parseCidr(c)!);
    expect(["127.0.0.1", "127.0.0.0/8", "::1", "::ffff:127.0.0.2", "10.0.0.0/16", "0.0.0.0/0", "2001:db8::/48", "::/0"].map(need)).toEqual(Array(8).fill(true));
    expect(["10.0.0.5", "192.0.2.0/24", "2001:db8::/64", "2001:db8::7"].map(need)).toEqual(Array(4).fill(false));
  });
});
