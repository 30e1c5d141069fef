// Requests a client can send that used to answer 500: each is now a 4xx JSON {code, message}
// (docs/api.md "Errors"). Through the router in-process, as Bun.serve calls it.
import { describe, expect, test } from "bun:test";
import { appWithOwner, type TestApp } from "../helpers/app.ts";
import { startCiFixture, fixturePerFile } from "../helpers/ci.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

const OIDC_BODY = { client_id: "roost", client_secret: "s3cret", redirect_uris: ["https://ci.example.test/auth/callback"] };

/** `{"a":{"a":…1…}}` nested `depth` objects deep, built as text (JSON.stringify would overflow first). */
function nestedObjectText(depth: number): string {
  return '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
}

describe("URLs in settings", () => {
  test("an OIDC issuer that is not a URL answers 400 invalid_request", async () => {
    const res = await t.call("PUT", "/v1/settings/oidc", { token: owner, body: { ...OIDC_BODY, issuer: "not a url" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details).toContainEqual({ path: "body.issuer", message: "must be an https URL (http only for a loopback host)" });
  });

  test("a redirect URI that is not a URL answers 400 invalid_request", async () => {
    const res = await t.call("PUT", "/v1/settings/oidc", { token: owner, body: { ...OIDC_BODY, issuer: "https://idp.example.test", redirect_uris: ["::"] } });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(["body.redirect_uris.0"]);
  });
});

describe("deep and large JSON", () => {
  test("project settings nested 50,000 deep answer 400 quickly", async () => {
    const started = performance.now();
    const res = await t.call("PATCH", `/v1/projects/${projectId}`, {
      token: owner,
      raw: `{"settings":${nestedObjectText(50_000)}}`,
      contentType: "application/json",
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_request", message: "The request body nests arrays and objects more than 64 levels deep." });
    expect(performance.now() - started).toBeLessThan(500);
  });

  test("any body nested past 64 levels answers 400, arrays too, on any route", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { token: owner, raw: "[".repeat(65) + "]".repeat(65), contentType: "application/json" });
    expect(res.body).toEqual({ code: "invalid_request", message: "The request body nests arrays and objects more than 64 levels deep." });
    // Brackets inside strings are text, not nesting.
    const inString = await t.call("POST", "/v1/api-tokens", { token: owner, body: { name: "[".repeat(100) + '\\"{', role: "developer" } });
    expect(inString.body.code).toBe("invalid_request");
    expect(inString.body.details.map((d: { path: string }) => d.path)).toEqual(["body.name"]);
  });

  test("project settings deeper than 16 levels answer 400 with the field", async () => {
    const res = await t.call("PATCH", `/v1/projects/${projectId}`, {
      token: owner,
      raw: `{"settings":${nestedObjectText(17)}}`,
      contentType: "application/json",
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: "body.settings", message: "must nest at most 16 levels deep" }]);
    const ok = await t.call("PATCH", `/v1/projects/${projectId}`, {
      token: owner,
      raw: `{"settings":${nestedObjectText(16)}}`,
      contentType: "application/json",
    });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.body.project.settings)).toBe(nestedObjectText(16));
  });

  test("project settings over 16 KiB answer 400 with the field", async () => {
    const res = await t.call("PATCH", `/v1/projects/${projectId}`, { token: owner, body: { settings: { big: "é".repeat(9000) } } });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: "body.settings", message: "must be at most 16384 bytes as JSON" }]);
  });
});

describe("strings that are not valid Unicode", () => {
  const message = "must be valid Unicode text (a lone UTF-16 surrogate such as \\ud800 is not a character)";

  test("a token name with a lone surrogate answers 400 and nothing is stored", async () => {
    const res = await t.call("POST", "/v1/api-tokens", { token: owner, raw: '{"name":"ci \\ud800","role":"developer"}', contentType: "application/json" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_request", message: `The body is not valid: body.name: ${message}`, details: [{ path: "body.name", message }] });
    const list = await t.call("GET", "/v1/api-tokens", { token: owner });
    expect(list.body.tokens.filter((k: { name: string }) => k.name.startsWith("ci "))).toEqual([]);
  });

  test("a lone low surrogate in a nested key or array answers 400 with its path", async () => {
    const res = await t.call("PATCH", `/v1/projects/${projectId}`, {
      token: owner,
      raw: '{"settings":{"list":["ok","\\udc00x"]}}',
      contentType: "application/json",
    });
    expect(res.body.details).toEqual([{ path: "body.settings.list.1", message }]);
    const key = await t.call("PATCH", `/v1/projects/${projectId}`, { token: owner, raw: '{"settings":{"\\ud83d":1}}', contentType: "application/json" });
    expect(key.body.details).toEqual([{ path: "body.settings.\ud83d", message }]);
    // Escapes may spell the hexadecimal digits in upper case (RFC 8259 section 7).
    const upper = await t.call("PATCH", `/v1/projects/${projectId}`, { token: owner, raw: '{"settings":{"x":"\\uDFFF"}}', contentType: "application/json" });
    expect(upper.body.details).toEqual([{ path: "body.settings.x", message }]);
  });

  test("a proper surrogate pair (an emoji) is accepted and stored as sent", async () => {
    const res = await t.call("POST", "/v1/api-tokens", {
      token: owner,
      raw: '{"name":"deploy \\ud83d\\ude80","role":"developer"}',
      contentType: "application/json",
    });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe("deploy 🚀");
  });

  test("bytes that are not UTF-8 answer 400 malformed_json", async () => {
    const res = await t.app.fetch(
      new Request("http://127.0.0.1:8080/v1/api-tokens", {
        method: "POST",
        headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
        body: new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
      }),
      "127.0.0.1",
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: "malformed_json", message: "The request body is not valid JSON." });
  });
});

describe("OIDC on an instance without an identity provider", () => {
  test("a callback with an unknown state answers 400 invalid_state", async () => {
    const res = await t.call("POST", "/v1/auth/oidc/callback", { body: { code: "c", state: "never-issued" } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_state", message: "This sign-in is unknown or was already used; start again." });
  });

  test("GET /v1/settings/oidc answers 200 {configured: false}", async () => {
    const { t: fresh, owner: token } = await appWithOwner();
    try {
      const res = await fresh.call("GET", "/v1/settings/oidc", { token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ configured: false });
      const put = await fresh.call("PUT", "/v1/settings/oidc", { token, body: { ...OIDC_BODY, issuer: "https://idp.example.test" } });
      expect(put.status).toBe(200);
      const shown = await fresh.call("GET", "/v1/settings/oidc", { token });
      expect(shown.body).toEqual({ configured: true, ...put.body });
      expect(shown.body.client_secret).toBeUndefined();
    } finally {
      fresh.close();
    }
  });
});
