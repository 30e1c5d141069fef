// Loopback facts used by local login (lib/net.ts).
import { describe, expect, test } from "bun:test";
import { isLoopbackAddress, isLoopbackHostHeader, isLoopbackOrigin } from "../../lib/net.ts";

describe("isLoopbackAddress", () => {
  test.each([
    ["127.0.0.1", true], ["127.255.0.9", true], ["::1", true], ["::ffff:127.0.0.1", true], ["::FFFF:127.1.2.3", true],
    ["128.0.0.1", false], ["10.0.0.1", false], ["::ffff:10.0.0.1", false], ["fe80::1", false], ["0.0.0.0", false], [null, false], ["", false],
  ])("%p → %p", (address, expected) => expect(isLoopbackAddress(address)).toBe(expected));
});

describe("isLoopbackHostHeader", () => {
  test.each([
    ["localhost", true], ["localhost:8080", true], ["127.0.0.1:8080", true], ["[::1]:8080", true], ["LOCALHOST", true],
    ["localhost.evil.example", false], ["evil.example", false], ["127.0.0.1.nip.io", false], [null, false], ["[::2]:80", false],
  ])("%p → %p", (host, expected) => expect(isLoopbackHostHeader(host)).toBe(expected));
});

describe("isLoopbackOrigin", () => {
  test.each([
    [null, true], ["http://localhost:3000", true], ["http://127.0.0.1", true], ["https://[::1]:8443", true],
    ["null", false], ["https://evil.example", false], ["file://", false], ["http://localhost.evil.example", false],
  ])("%p → %p", (origin, expected) => expect(isLoopbackOrigin(origin)).toBe(expected));
});
