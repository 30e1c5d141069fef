// PATCH /v1/pipelines/{id} is a JSON Merge Patch (RFC 7396), and platform_commands is a list like
// every other command field (docs/api.md "Pipelines").
import { describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import { startCiFixture, fixturePerFile } from "../helpers/ci.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

const release = {
  config_path: "ci/roost.yaml",
  concurrency: { cancel_previous: true, max_concurrent: 2 },
  trigger_config: { branches: ["main", "release/**"], events: ["push", "tag"] },
  execution_config: {
    commands: { pre_build: ["flutter pub get"], build: ["flutter test"], post_build: [] },
    env: [
      { key: "FLAVOR", value: "prod" },
      { key: "KEYSTORE_PASSWORD", value: "hunter2-very-secret", secret: true },
    ],
    platform_build_args: { android: ["--release"], ios: [], macos: [] },
    platforms: ["android", "ios"],
  },
};

async function newPipeline(body: Record<string, unknown> = release): Promise<any> {
  const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, { token: owner, body: { name: `p-${crypto.randomUUID().slice(0, 8)}`, ...body } });
  expect(res.status).toBe(201);
  return res.body.pipeline;
}

async function storedEnv(id: string): Promise<string> {
  return String((await t.db.execute({ sql: "SELECT execution_config FROM pipelines WHERE id = ?", args: [id] })).rows[0]!.execution_config);
}

describe("PATCH merges (RFC 7396)", () => {
  test("changing one execution setting keeps the rest, secret env included", async () => {
    const p = await newPipeline();
    const res = await t.call("PATCH", `/v1/pipelines/${p.id}`, { token: owner, body: { execution_config: { flutter_version: "3.24.5" } } });
    expect(res.status).toBe(200);
    expect(res.body.pipeline).toEqual({ ...p, execution_config: { ...p.execution_config, flutter_version: "3.24.5" }, updated_at: t.clock.now() });
    expect(res.body.pipeline.execution_config.env).toEqual([
      { key: "FLAVOR", value: "prod", secret: false },
      { key: "KEYSTORE_PASSWORD", value: "", secret: true },
    ]);
    expect(await storedEnv(p.id)).toContain("KEYSTORE_PASSWORD");
  });

  test("nested objects merge member by member; lists are replaced whole", async () => {
    const p = await newPipeline();
    const res = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: {
        concurrency: { max_concurrent: 5 },
        execution_config: { commands: { build: ["flutter test --coverage"] } },
        trigger_config: { branches: ["develop"] },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.pipeline.concurrency).toEqual({ cancel_previous: true, max_concurrent: 5 });
    expect(res.body.pipeline.execution_config.commands).toEqual({ pre_build: ["flutter pub get"], build: ["flutter test --coverage"], post_build: [] });
    expect(res.body.pipeline.trigger_config).toEqual({ branches: ["develop"], events: ["push", "tag"] });
  });

  test("null returns a member to its documented default", async () => {
    const p = await newPipeline();
    const res = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: { config_path: null, trigger_config: { branches: null }, execution_config: { platforms: null } },
    });
    expect(res.status).toBe(200);
    expect(res.body.pipeline).toMatchObject({
      config_path: "roost.yaml",
      config_path_explicit: false,
      trigger_config: { branches: ["main"], events: ["push", "tag"] },
    });
    expect(res.body.pipeline.execution_config.platforms).toEqual(["android"]);
  });

  test("sending env replaces the list; a secret entry without a value keeps its stored value", async () => {
    const p = await newPipeline();
    const res = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: { execution_config: { env: [{ key: "KEYSTORE_PASSWORD", secret: true }] } },
    });
    expect(res.body.pipeline.execution_config.env).toEqual([{ key: "KEYSTORE_PASSWORD", value: "", secret: true }]);
    expect(await storedEnv(p.id)).not.toContain("FLAVOR");
    expect(await storedEnv(p.id)).toContain("KEYSTORE_PASSWORD");
  });

  test("the merged pipeline is validated: an unknown or invalid member is 400 with its path", async () => {
    const p = await newPipeline();
    const unknown = await t.call("PATCH", `/v1/pipelines/${p.id}`, { token: owner, body: { execution_config: { flutter: "3" } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe("invalid_request");
    expect(unknown.body.details.map((d: { path: string }) => d.path)).toContain("body.execution_config");
    const name = await t.call("PATCH", `/v1/pipelines/${p.id}`, { token: owner, body: { name: null } });
    expect(name.status).toBe(400);
    expect(name.body.details.map((d: { path: string }) => d.path)).toEqual(["body.name"]);
    const empty = await t.call("PATCH", `/v1/pipelines/${p.id}`, { token: owner, body: {} });
    expect(empty.status).toBe(400);
    expect((await t.call("GET", `/v1/pipelines/${p.id}`, { token: owner })).body.pipeline).toEqual(p);
  });

  test("the RFC 7396 media type application/merge-patch+json is accepted", async () => {
    const p = await newPipeline();
    const res = await t.call("PATCH", `/v1/pipelines/${p.id}`, { token: owner, body: { enabled: false }, contentType: "application/merge-patch+json" });
    expect(res.status).toBe(200);
    expect(res.body.pipeline.enabled).toBe(false);
    expect(res.body.pipeline.execution_config).toEqual(p.execution_config);
  });
});

describe("platform_commands is a list per platform", () => {
  test("responses always list every platform", async () => {
    const p = await newPipeline({});
    expect(p.execution_config.platform_commands).toEqual({ android: [], ios: [], macos: [] });
  });

  test("a list is stored as sent; the older single-string form is read as a list of one", async () => {
    const p = await newPipeline({ execution_config: { platform_commands: { android: ["make apk", "make aab"], macos: "make macos" } } });
    expect(p.execution_config.platform_commands).toEqual({ android: ["make apk", "make aab"], ios: [], macos: ["make macos"] });
    const patched = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: { execution_config: { platform_commands: { ios: "make ipa", android: null } } },
    });
    expect(patched.body.pipeline.execution_config.platform_commands).toEqual({ android: [], ios: ["make ipa"], macos: ["make macos"] });
  });

  test("a pipeline stored with the string form reads back as lists", async () => {
    const p = await newPipeline({});
    const stored = JSON.parse(await storedEnv(p.id));
    stored.platform_commands = { ios: "make ipa" };
    await t.db.execute({ sql: "UPDATE pipelines SET execution_config = ? WHERE id = ?", args: [JSON.stringify(stored), p.id] });
    expect((await t.call("GET", `/v1/pipelines/${p.id}`, { token: owner })).body.pipeline.execution_config.platform_commands).toEqual({
      android: [],
      ios: ["make ipa"],
      macos: [],
    });
  });

  test("an empty command in the list is 400 at its index", async () => {
    const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, {
      token: owner,
      body: { name: "bad", execution_config: { platform_commands: { android: ["ok", ""] } } },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain("body.execution_config.platform_commands.android.1");
  });
});
