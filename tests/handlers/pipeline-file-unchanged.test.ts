// A push that does not touch the pipeline file is built from the file kept for the branch's
// previous head, without asking the host (docs/pipelines.md "Where it is read"): the payload lists
// every pushed commit with the paths it added, removed and modified, as GitHub sends it
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#push). A real git repository
// served by the host-API stand-in, pushed through signed GitHub deliveries; reads are counted on the
// stand-in's requests.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestApp } from "../helpers/app.ts";
import { git as gitIn, postGithubPush, pushedCommits, startAppOnRepository } from "../helpers/git.ts";
import { pushPipelineFile } from "../helpers/pipeline-file.ts";
import type { HostApiStandIn } from "../support/host-api-stand-in.ts";
import { WEBHOOK_SECRET } from "../helpers/ci.ts";

const REPO = { id: 6161, full_name: "acme/unchanged" };

let t: TestApp;
let host: HostApiStandIn;
let owner: string;
let dir: string;
const git = (...args: string[]) => gitIn(dir, ...args);

function commit(files: Record<string, string>, message: string): string {
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  git("add", "-A");
  git("commit", "-q", "-m", message);
  return git("rev-parse", "HEAD");
}

/** Pushes `after` to main as GitHub would: from `before` with its commits listed, or as a new branch. */
async function push(after: string, before?: string, options: { forced?: boolean } = {}) {
  const res = await postGithubPush(t, {
    repo: REPO,
    installationId: host.github.installationId,
    branch: "main",
    sha: after,
    message: git("log", "-1", "--format=%s", after),
    secret: WEBHOOK_SECRET,
    ...(before ? { before, commits: pushedCommits(dir, before, after), forced: options.forced ?? false } : {}),
  });
  expect(res.status).toBe(200);
  expect(res.body.builds).toHaveLength(1);
  return (await t.call("GET", `/v1/builds/${res.body.builds[0].id}`, { token: owner })).body.build;
}
const fileReads = (sha: string) => host.requests.filter((r) => r.path === `/repos/${REPO.full_name}/contents/roost.yaml?ref=${sha}`).length;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roost-unchanged-"));
  git("init", "-q", "-b", "main");
  commit({ "roost.yaml": pushPipelineFile(5), "README.md": "one\n" }, "first");
  // The stand-in's installation tokens expire an hour from the real now: so does the app's clock,
  // so the token is kept and a delivery's only request to the host is the file's.
  ({ t, host, owner } = await startAppOnRepository(dir, REPO, { clockStart: Math.floor(Date.now() / 1000) }));
});
afterAll(async () => {
  t?.close();
  await host?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("a push that leaves roost.yaml alone reads nothing; one that modifies it reads it at its commit", async () => {
  const first = git("rev-parse", "HEAD");
  expect((await push(first)).definition_source).toEqual({ source: "file", path: "roost.yaml", commit_sha: first });
  expect(fileReads(first)).toBe(1);

  // Two commits touching README.md only, pushed together: the file at the previous head is the file.
  commit({ "README.md": "two\n" }, "second");
  const third = commit({ "README.md": "three\n" }, "third");
  const before = host.requests.length;
  const unchanged = await push(third, first);
  expect(host.requests.slice(before)).toEqual([]);
  expect(unchanged.definition_source).toEqual({ source: "file", path: "roost.yaml", commit_sha: third });
  expect(unchanged.config_snapshot.concurrency.max_concurrent).toBe(5);

  // A commit modifying roost.yaml: read at the pushed commit, and its new definition builds.
  const fourth = commit({ "roost.yaml": pushPipelineFile(7) }, "fourth");
  const modified = await push(fourth, third);
  expect(fileReads(fourth)).toBe(1);
  expect(modified.config_snapshot.concurrency.max_concurrent).toBe(7);

  // And the next push that leaves it alone reuses that one.
  const fifth = commit({ "README.md": "five\n" }, "fifth");
  expect((await push(fifth, fourth)).config_snapshot.concurrency.max_concurrent).toBe(7);
  expect(fileReads(fifth)).toBe(0);
});

test("a forced push, or a branch whose previous head's file is not kept, reads the file", async () => {
  const base = git("rev-parse", "HEAD");
  const forced = commit({ "README.md": "forced\n" }, "forced");
  await push(forced, base, { forced: true });
  expect(fileReads(forced)).toBe(1);

  // A previous head this daemon never read (pushed before it started, or read by another daemon).
  const unread = commit({ "README.md": "unread\n" }, "unread");
  const after = commit({ "README.md": "after\n" }, "after");
  expect((await push(after, unread)).config_snapshot.concurrency.max_concurrent).toBe(7);
  expect(fileReads(after)).toBe(1);
});
