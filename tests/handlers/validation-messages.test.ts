// The API's validation messages are sentences for people (lib/http/validation-messages.ts): what the web
// app shows beside a field, and what the pipeline file's problems say, never zod's defaults
// ("Invalid input: expected string, received undefined"). A schema's own message still wins.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appWithOwner, type TestApp } from "../helpers/app.ts";
import { parsePipelineFile } from "../../lib/pipelines/file.ts";

let t: TestApp;
let owner: string;
beforeAll(async () => ({ t, owner } = await appWithOwner()));
afterAll(() => t.close());

const ZOD_DEFAULTS = /Invalid input|Invalid option|Too small|Too big|Unrecognized key|expected (string|number|object)|received undefined/;

describe("what a form shows for a wrong field", () => {
  const cases: Array<[string, string, string, unknown, { path: string; message: string }]> = [
    ["a runner without a name", "POST", "/v1/runners", {}, { path: "body.name", message: "name is required" }],
    [
      "an API token whose name is a number",
      "POST",
      "/v1/api-tokens",
      { name: 5, role: "developer" },
      { path: "body.name", message: "must be text, not a number" },
    ],
    ["an invitation without an e-mail address", "POST", "/v1/users", { role: "developer" }, { path: "body.email", message: "email is required" }],
    [
      "an invitation with an unknown role",
      "POST",
      "/v1/users",
      { email: "a@example.test", role: "boss" },
      { path: "body.role", message: "must be one of owner, admin, maintainer or developer" },
    ],
    ["a runner with a field the API does not know", "POST", "/v1/runners", { name: "r", colour: "red" }, { path: "body", message: 'unknown field "colour"' }],
    [
      "a token valid for a fraction of a day",
      "POST",
      "/v1/api-tokens",
      { name: "ci", role: "developer", expires_in_days: 1.5 },
      { path: "body.expires_in_days", message: "must be a whole number, not a number with a fraction" },
    ],
    [
      "a runner with too many labels",
      "POST",
      "/v1/runners",
      { name: "r", labels: Array.from({ length: 21 }, (_, i) => `l${i}`) },
      { path: "body.labels", message: "must have at most 20 entries" },
    ],
  ];
  for (const [name, method, path, body, detail] of cases) {
    test(name, async () => {
      const res = await t.call(method, path, { token: owner, body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ code: "invalid_request", message: `The body is not valid: ${detail.path}: ${detail.message}`, details: [detail] });
    });
  }

  test("a schema's own message is kept", async () => {
    const res = await t.call("POST", "/v1/users", { token: owner, body: { email: "not-an-email", role: "developer" } });
    expect(res.body.details).toEqual([{ path: "body.email", message: "must be a valid e-mail address" }]);
  });

  test("no message of any refused body above reads like zod's defaults", async () => {
    const res = await t.call("POST", "/v1/runners", { token: owner, body: { name: null, labels: "x" } });
    expect(res.status).toBe(400);
    for (const d of res.body.details) expect(d.message).not.toMatch(ZOD_DEFAULTS);
    expect(res.body.details).toEqual([
      { path: "body.name", message: "must be text, not null" },
      { path: "body.labels", message: "must be a list, not text" },
    ]);
  });
});

describe("the pipeline file's problems", () => {
  test("a wrong platform and a missing cron read as sentences", () => {
    const parsed = parsePipelineFile("pipelines:\n  app:\n    platforms: [android, linux]\n    schedules:\n      - timezone: UTC\n");
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.problems.map((p) => `${p.path}: ${p.message}`)).toEqual([
      "pipelines.app.platforms.1: must be one of android, ios or macos",
      "pipelines.app.schedules.0.cron: cron is required",
    ]);
  });
});
