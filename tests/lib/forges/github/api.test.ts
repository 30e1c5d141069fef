// GitHub App credentials are made once and reused until near their expiry (lib/forges/github/api.ts):
// the App JWT (9 minutes), the installation token and the read-only clone token of a repository
// (an hour each), against the host-API stand-in, which checks the JWT's signature and counts requests.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHostApiStandIn, type HostApiStandIn } from "../../../support/host-api-stand-in.ts";
import { CLONE_TOKEN_MIN_SECONDS, GithubClient } from "../../../../lib/forges/github/api.ts";
import type { ForgeAccess } from "../../../../lib/forges/http.ts";

let host: HostApiStandIn;
beforeAll(async () => {
  host = await startHostApiStandIn();
});
afterAll(() => host.stop());

function client(clock: { now: number }, tokens: ForgeAccess["tokens"] = new Map()) {
  return new GithubClient(
    { api_url: host.url, app_id: host.github.appId, installation_id: host.github.installationId },
    { private_key: host.github.privateKeyPem, webhook_secret: "x" },
    { fetch, allowLinkLocal: true, now: () => clock.now, tokens },
  );
}
const tokenRequests = () => host.requests.filter((r) => r.path.endsWith("/access_tokens")).length;

test("the App JWT is signed once and reused until a minute before it expires", async () => {
  const clock = { now: Math.floor(Date.now() / 1000) };
  const tokens: ForgeAccess["tokens"] = new Map();
  const first = await client(clock, tokens).appJwt();
  // Another client of the same app (each request makes its own) gets the same JWT.
  expect(await client(clock, tokens).appJwt()).toBe(first);
  clock.now += 470;
  expect(await client(clock, tokens).appJwt()).toBe(first);
  clock.now += 20; // 490 s: within a minute of its 540 s lifetime
  expect(await client(clock, tokens).appJwt()).not.toBe(first);
});

test("clone tokens of a repository are asked for once while they have half an hour left", async () => {
  const clock = { now: Math.floor(Date.now() / 1000) };
  const tokens: ForgeAccess["tokens"] = new Map();
  const before = tokenRequests();
  const a = await client(clock, tokens).cloneToken("1001");
  expect(await client(clock, tokens).cloneToken("1001")).toBe(a);
  expect(tokenRequests() - before).toBe(1);
  await client(clock, tokens).cloneToken("1002"); // another repository: its own token
  expect(tokenRequests() - before).toBe(2);
  clock.now += 3600 - CLONE_TOKEN_MIN_SECONDS + 1;
  await client(clock, tokens).cloneToken("1001");
  expect(tokenRequests() - before).toBe(3);
});

test("the installation token is reused until a minute before it expires", async () => {
  const clock = { now: Math.floor(Date.now() / 1000) };
  const tokens: ForgeAccess["tokens"] = new Map();
  const before = tokenRequests();
  await client(clock, tokens).installationToken();
  await client(clock, tokens).installationToken();
  expect(tokenRequests() - before).toBe(1);
  clock.now += 3600 - 59;
  await client(clock, tokens).installationToken();
  expect(tokenRequests() - before).toBe(2);
});
