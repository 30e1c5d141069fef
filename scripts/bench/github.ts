// The GitHub side of the bench's scenarios: the host-API stand-in's GitHub App connected to a
// daemon, and a project on the first repository its catalogue lists.
import { createGithubProject } from "../../tests/helpers/ci-daemon.ts";
import type { HostApiStandIn } from "../../tests/support/host-api-stand-in.ts";

/** Connects `host`'s GitHub App to the daemon as integration "gh" and creates a project on its first repository; the project's id. */
export async function githubProject(daemon: { url: string }, token: string, host: HostApiStandIn, webhookSecret: string): Promise<string> {
  return (await createGithubProject(daemon.url, token, host, webhookSecret)).id as string;
}
