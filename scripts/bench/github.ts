// The GitHub side of the bench's scenarios: the host-API stand-in's GitHub App connected to a
// daemon, a project on the first repository its catalogue lists, and the push deliveries sent to it.
import { createHash, createHmac } from "node:crypto";
import { createGithubProject } from "../../tests/helpers/ci-daemon.ts";
import type { HostApiStandIn } from "../../tests/support/host-api-stand-in.ts";
import type { RequestSpec } from "./wrk.ts";

/** Connects `host`'s GitHub App to the daemon as integration "gh" and creates a project on its first repository; the project's id. */
export async function githubProject(daemon: { url: string }, token: string, host: HostApiStandIn, webhookSecret: string): Promise<string> {
  return (await createGithubProject(daemon.url, token, host, webhookSecret)).id as string;
}

/** The branches a run's pushes are spread over: each push's `before` is the previous push to its branch. */
export const PUSH_BRANCHES = 64;
/** One push in this many modifies roost.yaml; the others modify lib/main.dart. */
export const PIPELINE_FILE_EDIT_EVERY = 100;

/**
 * `n` distinct signed push deliveries (ids, commits, bodies): none is a duplicate, so each one
 * creates a build. Each is what GitHub sends for one commit pushed to a branch that already
 * existed (https://docs.github.com/en/webhooks/webhook-events-and-payloads#push): `before` the
 * branch's previous head (its first push: a commit no push named), not forced, the commit listed
 * with the paths it added, removed and modified.
 */
export function pushDeliveries(secret: string, n: number, tag: string): RequestSpec[] {
  const requests: RequestSpec[] = [];
  const commitId = (name: string) => createHash("sha1").update(`${tag}:${name}`).digest("hex");
  const heads = new Map<number, string>();
  for (let i = 0; i < n; i++) {
    const branch = i % PUSH_BRANCHES;
    const before = heads.get(branch) ?? commitId(`base-${branch}`);
    const sha = commitId(String(i));
    heads.set(branch, sha);
    const modified = i % PIPELINE_FILE_EDIT_EVERY === PIPELINE_FILE_EDIT_EVERY - 1 ? ["roost.yaml"] : ["lib/main.dart"];
    const { body, signature } = signedPush(secret, { branch, before, sha, message: `commit ${i}`, modified });
    requests.push({
      method: "POST",
      path: "/v1/webhooks/github",
      headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": crypto.randomUUID(), "x-hub-signature-256": signature },
      body,
    });
  }
  return requests;
}

/**
 * The body of a push of one commit (`sha`, after `before`) to branch `bench-<branch>` of
 * `repository`, as GitHub sends it, and its X-Hub-Signature-256 under `secret`.
 */
export function signedPush(
  secret: string,
  push: { branch: number; before: string; sha: string; message: string; modified: string[]; repository?: { id: number; full_name: string } },
): { body: string; signature: string } {
  const commit = { id: push.sha, message: push.message, author: { name: "bench" }, added: [], removed: [], modified: push.modified };
  const body = JSON.stringify({
    ref: `refs/heads/bench-${push.branch}`,
    before: push.before,
    after: push.sha,
    created: false,
    deleted: false,
    forced: false,
    head_commit: commit,
    commits: [commit],
    repository: push.repository ?? { id: 4242, full_name: "acme/app" },
    pusher: { name: "bench" },
  });
  return { body, signature: `sha256=${createHmac("sha256", secret).update(body).digest("hex")}` };
}
