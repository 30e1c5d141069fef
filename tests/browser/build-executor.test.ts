// Where a build ran, on its page in a real Chromium (docs/web-app.md, docs/runners.md
// "Executors"): a container build's executor, image by digest, network and limits; a container
// that could not start; a host build; and a build still waiting, with the image its pipeline asks
// for. axe-core on the page. The daemon runs in this process behind Bun.serve; builds finish
// through the runner protocol with what a container runner reports.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { BrowserContext, Page } from "playwright-core";
import { SHA_A, createPipeline, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import type { TestApp } from "../helpers/app.ts";
import { connectRunner, type TestRunner } from "../helpers/publishing.ts";
import { axeViolations, newPage, serveToBrowser, signedInContext, type ServedApp, type TestBrowser } from "./browser.ts";

let ci: CiFixture;
let t: TestApp;
let served: ServedApp;
let base = "";
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let runner: TestRunner;
const errors: string[] = [];
const DIGEST = `sha256:${"3f".repeat(32)}`;

async function finishedBuild(
  executionConfig: Record<string, unknown>,
  executor: Record<string, unknown> | null,
  outcome: { status: string; exit_code: number; failure_reason?: string },
) {
  const pipeline = await createPipeline(t, ci.owner, ci.projectId, { execution_config: executionConfig });
  const build = (await t.call("POST", `/v1/projects/${ci.projectId}/builds`, { token: ci.owner, body: { pipeline_id: pipeline.id, commit_sha: SHA_A } })).body
    .build;
  if (!executor) return build.id as string;
  const job = (await t.call("POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } }))
    .body.job;
  expect(job.build.id).toBe(build.id);
  await t.call("POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, { token: runner.token, body: { ...outcome, line_count: 0, executor } });
  return build.id as string;
}

/** The build page's facts, as "term: description" lines. */
async function facts(buildId: string): Promise<string[]> {
  await page.goto(`${base}/projects/${ci.projectId}/builds/${buildId}`);
  await page.locator("dt", { hasText: "Definition" }).waitFor();
  return page
    .locator("dl > div")
    .evaluateAll((divs) => divs.map((d) => `${d.querySelector("dt")?.textContent}: ${d.querySelector("dd")?.textContent?.replace(/\s+/g, " ").trim()}`));
}

beforeAll(async () => {
  ci = await startCiFixture();
  ({ t } = ci);
  served = await serveToBrowser(t);
  ({ base, tb } = served);
  runner = await connectRunner(t, ci.owner, "linux-containers");
  // Setup is over (the fixture's owner): a local sign-in needs the one-time capability `roost login` mints.
  context = await signedInContext(tb.browser, base, "owner@example.test", { t });
  page = await newPage(context, errors);
}, 60_000);

afterAll(async () => {
  await served?.close();
  await ci?.stop();
});

test("a container build shows its engine, its image with the digest a re-run runs, and its limits", async () => {
  const id = await finishedBuild(
    { image: "ghcr.io/acme/flutter:3.27", limits: { memory_mb: 4096 } },
    {
      kind: "container",
      engine: "podman 4.3.1",
      image: "ghcr.io/acme/flutter:3.27",
      image_digest: `ghcr.io/acme/flutter@${DIGEST}`,
      network: "default",
      limits: { cpus: 2, memory_mb: 4096, pids: 4096, disk_mb: null },
      error: null,
    },
    { status: "succeeded", exit_code: 0 },
  );
  const shown = await facts(id);
  expect(shown).toContain("Executor: a fresh container (podman 4.3.1)");
  expect(shown).toContain(`Image: ghcr.io/acme/flutter:3.27 at ${DIGEST.slice(0, 19)}… (a re-run runs this one)`);
  expect(shown).toContain("Limits: cpus 2, memory 4 GiB, pids 4096, disk unlimited");
  expect(await page.locator(".build-image code[title]").getAttribute("title")).toBe(`ghcr.io/acme/flutter@${DIGEST}`);
  expect(await axeViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
});

test("a container that could not start says why; a host build says host; a waiting build shows the image asked for", async () => {
  const error = "the image ghcr.io/acme/missing:1 could not be pulled: manifest unknown";
  const failed = await finishedBuild(
    { image: "ghcr.io/acme/missing:1", network: "none" },
    { kind: "container", engine: "podman 4.3.1", image: "ghcr.io/acme/missing:1", image_digest: null, network: "none", limits: null, error },
    { status: "failed", exit_code: 1, failure_reason: error },
  );
  const shown = await facts(failed);
  expect(shown).toContain("Executor: a fresh container (podman 4.3.1), no network");
  expect(shown).toContain("Image: ghcr.io/acme/missing:1");
  expect(await page.locator(".notice", { hasText: error }).count()).toBe(1);

  const host = await finishedBuild(
    {},
    { kind: "host", engine: null, image: null, image_digest: null, network: null, limits: null, error: null },
    { status: "succeeded", exit_code: 0 },
  );
  expect(await facts(host)).toContain("Executor: host: the runner's own machine and user");

  const waiting = await finishedBuild({ image: "ghcr.io/acme/flutter:3.29" }, null, { status: "queued", exit_code: 0 });
  const queued = await facts(waiting);
  expect(queued).toContain("Image: ghcr.io/acme/flutter:3.29 (asked by the pipeline; on a container runner)");
  expect(queued.some((f) => f.startsWith("Executor:"))).toBe(false);
  expect(await axeViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
});
