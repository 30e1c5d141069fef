// When `roost runner` refuses to run builds (runner/host-user.ts): as the daemon's user or as
// root, on the daemon's host. The refusal itself, end to end: tests/e2e/build-code-login.test.ts.
import { describe, expect, test } from "bun:test";
import { sameUserProblem, urlIsThisHost } from "../../runner/host-user.ts";

describe("urlIsThisHost", () => {
  test.each([
    ["http://127.0.0.1:8080", true],
    ["http://[::1]:8080", true],
    ["http://localhost:8080", true],
    ["https://192.0.2.10", false],
  ])("%p → %p", async (url, expected) => {
    expect(await urlIsThisHost(url)).toBe(expected);
  });
});

describe("sameUserProblem", () => {
  test("the daemon's uid on its host: refused", async () => {
    expect(await sameUserProblem("http://127.0.0.1:8080", 998, 998)).toBe(
      "build steps would run as the Roost daemon's own user (uid 998) on the daemon's host, where build code can read Roost's database and secret key and sign in as any user",
    );
  });

  test("root on the daemon's host: refused, whoever the daemon runs as", async () => {
    expect(await sameUserProblem("http://localhost:8080", 998, 0)).toBe(
      "build steps would run as root on the daemon's host, where build code can read Roost's database and secret key and sign in as any user",
    );
  });

  test("another user on the daemon's host: allowed", async () => {
    expect(await sameUserProblem("http://127.0.0.1:8080", 998, 1001)).toBeNull();
  });

  test("the daemon did not see this runner as local (no daemon_uid): allowed", async () => {
    expect(await sameUserProblem("http://127.0.0.1:8080", undefined, 998)).toBeNull();
  });

  test("a URL naming another machine (a reverse proxy on the daemon's host makes the peer loopback): allowed", async () => {
    expect(await sameUserProblem("https://192.0.2.10", 998, 998)).toBeNull();
  });
});
