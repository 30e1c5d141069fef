// Setting up publishing for tests of what people see and do around it (the web app, the CLI):
// environments, a runner that builds, and a build run to success through the runner protocol
// with artifacts, as a runner sends them, so that its publishers make deployments.
import type { Called, TestApp } from "./app.ts";

export interface TestRunner {
  id: string;
  token: string;
}

/** A runner the owner registers, connected with `capabilities` (Linux x64 unless they say otherwise). */
export async function connectRunner(
  t: TestApp,
  owner: string,
  name = `r-${crypto.randomUUID().slice(0, 6)}`,
  capabilities: Record<string, unknown> = { os: "linux", arch: "x64" },
): Promise<TestRunner> {
  const created = await t.call("POST", "/v1/runners", { token: owner, body: { name } });
  if (created.status !== 201) throw new Error(`runner failed: ${created.status} ${created.text}`);
  const runner = { id: created.body.runner.id as string, token: created.body.token as string };
  await t.call("POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities, version: "test" } });
  return runner;
}

export interface RunnerClient extends TestRunner {
  /** A call to the runner protocol under /v1/runners/{id}, with the runner's token. */
  call(method: string, path: string, body?: unknown): Promise<Called>;
  /** Asks for a job without waiting; `body` adds to the claim (`accepts`). */
  claim(body?: Record<string, unknown>): Promise<Called>;
}

/** A connected runner (connectRunner) that makes its own runner-protocol calls. */
export async function runnerClient(t: TestApp, owner: string, capabilities?: Record<string, unknown>): Promise<RunnerClient> {
  const runner = await connectRunner(t, owner, undefined, capabilities);
  const call = (method: string, path: string, body?: unknown) => t.call(method, `/v1/runners/${runner.id}${path}`, { token: runner.token, body });
  return { ...runner, call, claim: (body = {}) => call("POST", "/jobs/claim", { claim_id: crypto.randomUUID(), wait_seconds: 0, ...body }) };
}

export async function putEnvironment(t: TestApp, owner: string, projectId: string, name: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await t.call("PUT", `/v1/projects/${projectId}/environments/${name}`, { token: owner, body });
  if (res.status !== 200) throw new Error(`environment failed: ${res.status} ${res.text}`);
  return res.body.environment;
}

/** The runner uploads `content` as the job's artifact at `path`, as a runner does (docs/runners.md "Artifacts"); the answer and the sha256 it sent. */
export async function uploadArtifact(t: TestApp, runner: TestRunner, jobId: string, path: string, content: string): Promise<{ up: Called; sha: string }> {
  const sha = new Bun.CryptoHasher("sha256").update(content).digest("hex");
  const up = await t.call("PUT", `/v1/runners/${runner.id}/jobs/${jobId}/artifacts?path=${encodeURIComponent(path)}`, {
    token: runner.token,
    raw: content,
    contentType: "application/octet-stream",
    headers: { "x-roost-artifact-sha256": sha },
  });
  return { up, sha };
}

/** A manual build of the pipeline, claimed by `runner` and finished with `status`, uploading `files` as its artifacts first. */
export async function runBuild(
  t: TestApp,
  owner: string,
  runner: TestRunner,
  projectId: string,
  pipelineId: string,
  o: { status?: "succeeded" | "failed"; files?: Record<string, string>; commit?: string } = {},
): Promise<any> {
  const made = await t.call("POST", `/v1/projects/${projectId}/builds`, {
    token: owner,
    body: { pipeline_id: pipelineId, ...(o.commit ? { commit_sha: o.commit } : {}) },
  });
  if (made.status !== 201) throw new Error(`build failed: ${made.status} ${made.text}`);
  const claimed = await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, {
    token: runner.token,
    body: { claim_id: crypto.randomUUID(), wait_seconds: 0, accepts: ["build"] },
  });
  const job = claimed.body.job;
  if (job?.build?.id !== made.body.build.id) throw new Error(`the runner claimed another job: ${claimed.text}`);
  for (const [path, content] of Object.entries(o.files ?? { "build/app/outputs/bundle/release/app-release.aab": "fake bundle versionCode=42" })) {
    const { up } = await uploadArtifact(t, runner, job.job_id, path, content);
    if (up.status !== 201) throw new Error(`artifact failed: ${up.status} ${up.text}`);
  }
  const status = o.status ?? "succeeded";
  const finished = await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
    token: runner.token,
    body: { status, exit_code: status === "succeeded" ? 0 : 1, line_count: 0 },
  });
  if (finished.status !== 200) throw new Error(`finish failed: ${finished.status} ${finished.text}`);
  return (await t.call("GET", `/v1/builds/${made.body.build.id}`, { token: owner })).body.build;
}

/** A runner that publishes claims the next approved deployment and finishes it as a store client would, with the store's answer. */
export async function publishNext(
  t: TestApp,
  runner: TestRunner,
  answer: { summary: string; version?: string | null; url?: string | null } | { failure: string },
): Promise<string> {
  const claimed = await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, {
    token: runner.token,
    body: { claim_id: crypto.randomUUID(), wait_seconds: 0, accepts: ["publish"] },
  });
  if (claimed.status !== 201 || !claimed.body.publish) throw new Error(`no publish to claim: ${claimed.status} ${claimed.text}`);
  const id: string = claimed.body.publish.deployment_id;
  const outcome =
    "failure" in answer ? { status: "failed", failure_reason: answer.failure } : { status: "succeeded", store_answer: { version: null, url: null, ...answer } };
  const finished = await t.call("POST", `/v1/runners/${runner.id}/deployments/${id}/finish`, { token: runner.token, body: { ...outcome, line_count: 0 } });
  if (finished.status !== 200) throw new Error(`finish failed: ${finished.status} ${finished.text}`);
  return id;
}
