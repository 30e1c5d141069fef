// The GitHub side of the bench's scenarios: the host-API stand-in's GitHub App connected to a
// daemon, and a project on the first repository its catalogue lists.
import { http } from "../../tests/helpers/daemon.ts";
import type { HostApiStandIn } from "../../tests/support/host-api-stand-in.ts";

/** Connects `host`'s GitHub App to the daemon as integration "gh" and creates a project on its first repository; the project's id. */
export async function githubProject(daemon: { url: string }, token: string, host: HostApiStandIn, webhookSecret: string): Promise<string> {
  const integration = await http(daemon.url, "POST", "/v1/integrations", {
    token,
    body: {
      provider: "github",
      name: "gh",
      api_url: host.url,
      app_id: host.github.appId,
      installation_id: host.github.installationId,
      private_key: host.github.privateKeyPem,
      webhook_secret: webhookSecret,
    },
  });
  if (integration.status !== 201) throw new Error(`connecting GitHub answered ${integration.status}: ${JSON.stringify(integration.body)}`);
  const repository = (await http(daemon.url, "GET", "/v1/integration-repositories", { token })).body.repositories[0];
  return (await http(daemon.url, "POST", "/v1/projects", { token, body: { repository_id: repository.id } })).body.project.id as string;
}
