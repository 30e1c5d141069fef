// Address facts (lib/net/addresses.ts): loopback for local login, link-local refusal for integrations.
import { describe, expect, test } from "bun:test";
import { isLoopbackAddress, isLoopbackHostHeader, isLoopbackOrigin } from "../../../lib/net/addresses.ts";
import { refusedAddressReason } from "../../../lib/net/address-policy.ts";

describe("isLoopbackAddress", () => {
  test.each([
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["::1", true],
    ["::ffff:127.0.0.1", true],
    ["::FFFF:127.1.2.3", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:7f00:1", true],
    ["127.0.0.1.nip.io", false],
    ["128.0.0.1", false],
    ["10.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["fe80::1", false],
    ["0.0.0.0", false],
    [null, false],
    ["", false],
  ])("%p → %p", (address, expected) => expect(isLoopbackAddress(address)).toBe(expected));
});

describe("isLoopbackHostHeader", () => {
  test.each([
    ["localhost", true],
    ["localhost:8080", true],
    ["127.0.0.1:8080", true],
    ["[::1]:8080", true],
    ["LOCALHOST", true],
    ["localhost.evil.example", false],
    ["evil.example", false],
    ["127.0.0.1.nip.io", false],
    [null, false],
    ["[::2]:80", false],
  ])("%p → %p", (host, expected) => expect(isLoopbackHostHeader(host)).toBe(expected));
});

describe("isLoopbackOrigin", () => {
  test.each([
    [null, true],
    ["http://localhost:3000", true],
    ["http://127.0.0.1", true],
    ["https://[::1]:8443", true],
    ["null", false],
    ["https://evil.example", false],
    ["file://", false],
    ["http://localhost.evil.example", false],
  ])("%p → %p", (origin, expected) => expect(isLoopbackOrigin(origin)).toBe(expected));
});

describe("refusedAddressReason", () => {
  const v4 = "a link-local address (169.254.0.0/16, where cloud metadata services answer)";
  test.each([
    ["169.254.169.254", v4],
    ["::ffff:169.254.169.254", v4],
    ["::ffff:a9fe:a9fe", v4],
    ["::169.254.1.1", v4],
    ["64:ff9b::a9fe:101", v4],
    ["fe80::1", "a link-local address (fe80::/10)"],
    ["FEBF::1%eth0", "a link-local address (fe80::/10)"],
    ["fd00:ec2:0:0::254", "a cloud metadata address (fd00:ec2::254)"],
    ["169.253.255.255", null],
    ["fec0::1", null],
    ["64:ff9b::10.0.0.1", null],
    ["::", null],
    ["10.0.0.5", null],
    ["fd12:3456::1", null],
    ["not-an-address", null],
  ])("%p → %p", (address, expected) => expect(refusedAddressReason(address)).toBe(expected));
});
