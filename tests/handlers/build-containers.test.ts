// A pipeline's container settings (docs/pipelines.md image, network, limits) through the API and
// roost.yaml, what a runner reports about where a build ran (the build's executor), and a re-run
// pinned to the image its source ran, by digest (docs/runners.md "Executors").
import { describe, expect, test } from "bun:test";
import { type TestApp } from "../helpers/app.ts";
import { SHA_A, createPipeline, startCiFixture, fixturePerFile } from "../helpers/ci.ts";
import { runnerClient } from "../helpers/publishing.ts";
import { parsePipelineFile, pipelineFileJsonSchema } from "../../lib/pipelines/file.ts";

let t: TestApp, owner: string, projectId: string;
fixturePerFile(startCiFixture, (fixture) => ({ t, owner, projectId } = fixture));

const DIGEST = `sha256:${"ab".repeat(32)}`;

const runner = () => runnerClient(t, owner);

async function drainQueue() {
  const queued = (await t.call("GET", `/v1/projects/${projectId}/builds?status=queued&limit=200`, { token: owner })).body.builds;
  for (const b of queued) await t.call("POST", `/v1/builds/${b.id}/cancel`, { token: owner });
}

describe("a pipeline's image, network and limits", () => {
  test("are stored, shown, frozen with the build and handed to the runner", async () => {
    await drainQueue();
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: { image: "ghcr.io/acme/flutter:3.27", network: "none", limits: { cpus: 2, memory_mb: 4096, pids: 2048, disk_mb: 20480 } },
    });
    expect(pipeline.execution_config).toMatchObject({
      image: "ghcr.io/acme/flutter:3.27",
      network: "none",
      limits: { cpus: 2, memory_mb: 4096, pids: 2048, disk_mb: 20480 },
    });
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    expect(build.config_snapshot.execution_config).toMatchObject({ image: "ghcr.io/acme/flutter:3.27", network: "none" });
    expect(build.executor).toBeNull();
    const job = (await (await runner()).claim()).body.job;
    expect(job.config.execution_config).toMatchObject({
      image: "ghcr.io/acme/flutter:3.27",
      network: "none",
      limits: { cpus: 2, memory_mb: 4096, pids: 2048, disk_mb: 20480 },
    });
  });

  test("a pipeline without them has none of the keys (the runner's defaults apply)", async () => {
    const pipeline = await createPipeline(t, owner, projectId);
    expect(Object.keys(pipeline.execution_config)).not.toContain("image");
    expect(Object.keys(pipeline.execution_config)).not.toContain("limits");
  });

  test.each([
    [{ image: "--privileged" }, "execution_config.image"],
    [{ image: "ghcr.io/acme/flutter:3.27 --rm" }, "execution_config.image"],
    [{ image: "acme//flutter" }, "execution_config.image"],
    [{ image: "acme/flutter@sha256:123" }, "execution_config.image"],
    [{ network: "host" }, "execution_config.network"],
    [{ limits: { memory_mb: 8 } }, "execution_config.limits.memory_mb"],
    [{ limits: { cpus: 0 } }, "execution_config.limits.cpus"],
    [{ limits: { swap_mb: 10 } }, "execution_config.limits"],
  ])("%p is refused with 400 naming the field", async (config: Record<string, unknown>, field: string) => {
    const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, {
      token: owner,
      body: { name: `p-${crypto.randomUUID()}`, execution_config: config },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([`body.${field}`]);
  });

  test("roost.yaml takes them too, and its JSON Schema describes them", () => {
    const parsed = parsePipelineFile(
      `pipelines:\n  android:\n    image: ghcr.io/acme/flutter@${DIGEST}\n    network: none\n    limits:\n      memory_mb: 512\n`,
    );
    expect(parsed.ok && parsed.pipelines.get("android")).toMatchObject({
      image: `ghcr.io/acme/flutter@${DIGEST}`,
      network: "none",
      limits: { memory_mb: 512 },
    });
    const bad = parsePipelineFile(`pipelines:\n  android:\n    image: "-v /:/host"\n`);
    expect(bad.ok ? [] : bad.problems.map((p) => `${p.line}:${p.path}`)).toEqual(["3:pipelines.android.image"]);
    const schema = JSON.stringify(pipelineFileJsonSchema());
    for (const key of ['"image"', '"network"', '"limits"', '"memory_mb"']) expect(schema).toContain(key);
  });
});

describe("where a build ran", () => {
  /** A new build of a pipeline (with `execution_config` where given), its job claimed by a new runner once the queue is empty. */
  async function claimedBuild(execution_config?: Record<string, unknown>) {
    await drainQueue();
    const pipeline = await createPipeline(t, owner, projectId, execution_config ? { execution_config } : {});
    const build = (await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
      .build;
    const r = await runner();
    return { build, r, job: (await r.claim()).body.job };
  }

  test("the runner's report is the build's executor; a re-run runs the image by the digest its source ran", async () => {
    const { build, r, job } = await claimedBuild({ image: "ghcr.io/acme/flutter:3.27" });
    const executor = {
      kind: "container",
      engine: "podman 4.3.1",
      image: "ghcr.io/acme/flutter:3.27",
      image_digest: `ghcr.io/acme/flutter@${DIGEST}`,
      network: "default",
      limits: { cpus: null, memory_mb: 4096, pids: 4096, disk_mb: null },
      error: null,
    };
    const done = await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0, executor });
    expect(done.status).toBe(200);
    expect(done.body.build.executor).toEqual(executor);
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build.executor).toEqual(executor);

    // The tag may point elsewhere by now: the re-run names the digest the source ran.
    const rerun = (await t.call("POST", `/v1/builds/${build.id}/rerun`, { token: owner })).body.build;
    expect(rerun.config_snapshot.execution_config.image).toBe(`ghcr.io/acme/flutter@${DIGEST}`);
    expect((await r.claim()).body.job.config.execution_config.image).toBe(`ghcr.io/acme/flutter@${DIGEST}`);
  });

  test("a host build records the host executor, and its re-run changes nothing", async () => {
    const { build, r, job } = await claimedBuild();
    const executor = { kind: "host", engine: null, image: null, image_digest: null, network: null, limits: null, error: null };
    expect((await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "succeeded", exit_code: 0, line_count: 0, executor })).body.build.executor).toEqual(
      executor,
    );
    const rerun = (await t.call("POST", `/v1/builds/${build.id}/rerun`, { token: owner })).body.build;
    expect(rerun.config_snapshot).toEqual(build.config_snapshot);
  });

  test("a container that could not start is said on the build", async () => {
    const { build, r, job } = await claimedBuild({ image: "ghcr.io/acme/missing:1" });
    const error = "the image ghcr.io/acme/missing:1 could not be pulled: manifest unknown";
    const executor = {
      kind: "container",
      engine: "podman 4.3.1",
      image: "ghcr.io/acme/missing:1",
      image_digest: null,
      network: "default",
      limits: null,
      error,
    };
    await r.call("POST", `/jobs/${job.job_id}/finish`, { status: "failed", exit_code: 1, failure_reason: error, line_count: 0, executor });
    expect((await t.call("GET", `/v1/builds/${build.id}`, { token: owner })).body.build).toMatchObject({
      status: "failed",
      failure_reason: error,
      executor: { error, image_digest: null },
    });
    // Nothing to pin: the re-run asks for the image again.
    expect((await t.call("POST", `/v1/builds/${build.id}/rerun`, { token: owner })).body.build.config_snapshot.execution_config.image).toBe(
      "ghcr.io/acme/missing:1",
    );
  });
});

describe("services and registry_credentials", () => {
  const AUTH = JSON.stringify({ auths: { "registry.example.com": { auth: Buffer.from("ci:registry-pass").toString("base64") } } });
  const services = [
    { image: "postgres:16", alias: "db", env: { POSTGRES_PASSWORD: "test" } },
    { image: "redis:7", alias: "cache", env: {}, command: ["redis-server", "--port", "6380"] },
  ];

  async function claimed(registry_credentials: string) {
    await drainQueue();
    const pipeline = await createPipeline(t, owner, projectId, {
      execution_config: { image: "registry.example.com/acme/flutter:3.27", registry_credentials, services },
    });
    await t.call("POST", `/v1/projects/${projectId}/builds`, { token: owner, body: { pipeline_id: pipeline.id } });
    return { pipeline, job: (await (await runner()).claim()).body.job };
  }

  async function setVariable(key: string, body: Record<string, unknown>) {
    const res = await t.call("PUT", `/v1/projects/${projectId}/variables/${key}`, { token: owner, body });
    expect(res.status).toBeLessThan(300);
  }

  test("are stored and shown; the runner gets the auth file apart from the job's variables, which never hold it", async () => {
    await setVariable("REGISTRY_AUTH", { value: AUTH, secret: true });
    const { pipeline, job } = await claimed("REGISTRY_AUTH");
    expect(pipeline.execution_config).toMatchObject({ registry_credentials: "REGISTRY_AUTH", services });
    expect(job.config.execution_config).toMatchObject({ registry_credentials: "REGISTRY_AUTH", services });
    expect(job.registry_auth).toEqual({ key: "REGISTRY_AUTH", content: AUTH });
    expect(job.registry_auth_problem).toBeNull();
    expect(job.config.execution_config.env.map((e: { key: string }) => e.key)).not.toContain("REGISTRY_AUTH");
    expect(job.files.map((f: { key: string }) => f.key)).not.toContain("REGISTRY_AUTH");
  });

  test.each([
    ["NO_SUCH_AUTH", null, "registry_credentials names NO_SUCH_AUTH, but neither the project nor the pipeline has a secret variable NO_SUCH_AUTH"],
    ["PLAIN_AUTH", { value: AUTH }, "registry_credentials names PLAIN_AUTH, which is not a secret: set it again with secret: true"],
    [
      "NOT_AN_AUTH_FILE",
      { value: "ci:registry-pass", secret: true },
      'the registry credentials NOT_AN_AUTH_FILE are not a registry auth file: its value must be JSON like {"auths": {"registry.example.com": {"auth": "<base64 of user:password>"}}}',
    ],
    [
      "RELEASE_AUTH",
      { value: AUTH, secret: true, protected_refs: ["release/*"] },
      "the registry credentials RELEASE_AUTH are not given to this build (their protected_refs do not match this build's ref)",
    ],
  ])("%s: no auth file, and the problem the build fails with", async (key, variable, problem) => {
    if (variable) await setVariable(key, variable);
    const { job } = await claimed(key);
    expect({ auth: job.registry_auth, problem: job.registry_auth_problem }).toEqual({ auth: null, problem });
    expect(job.config.execution_config.env.map((e: { key: string }) => e.key)).not.toContain(key);
  });

  test.each([
    [{ services: [{ image: "redis:7", alias: "Redis" }] }, "execution_config.services.0.alias"],
    [{ services: [{ image: "redis:7", alias: "localhost" }] }, "execution_config.services.0.alias"],
    [{ services: [{ image: "--privileged", alias: "x" }] }, "execution_config.services.0.image"],
    [{ services: [{ image: "redis:7", alias: "x", env: { A: "two\nlines" } }] }, "execution_config.services.0.env.A"],
    [{ services: [{ image: "redis:7", alias: "x", ports: [6379] }] }, "execution_config.services.0"],
    [
      {
        services: [
          { image: "redis:7", alias: "x" },
          { image: "redis:6", alias: "x" },
        ],
      },
      "execution_config.services",
    ],
    [{ registry_credentials: "not a key" }, "execution_config.registry_credentials"],
  ])("%p is refused with 400 naming the field", async (config: Record<string, unknown>, field: string) => {
    const res = await t.call("POST", `/v1/projects/${projectId}/pipelines`, {
      token: owner,
      body: { name: `p-${crypto.randomUUID()}`, execution_config: config },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([`body.${field}`]);
  });

  test("roost.yaml takes them, with lines for their problems, and its JSON Schema describes them", () => {
    const parsed = parsePipelineFile(
      "pipelines:\n  it:\n    registry_credentials: REGISTRY_AUTH\n    services:\n      - image: postgres:16\n        alias: db\n        env: {POSTGRES_PASSWORD: test, PORT: 5432}\n",
    );
    expect(parsed.ok && parsed.pipelines.get("it")).toMatchObject({
      registry_credentials: "REGISTRY_AUTH",
      services: [{ image: "postgres:16", alias: "db", env: { POSTGRES_PASSWORD: "test", PORT: "5432" } }],
    });
    const bad = parsePipelineFile("pipelines:\n  it:\n    services:\n      - image: postgres:16\n        alias: DB\n");
    expect(bad.ok ? [] : bad.problems.map((p) => `${p.line}:${p.path}`)).toEqual(["5:pipelines.it.services.0.alias"]);
    const schema = JSON.stringify(pipelineFileJsonSchema());
    for (const key of ['"registry_credentials"', '"services"', '"alias"', '"command"']) expect(schema).toContain(key);
  });
});
