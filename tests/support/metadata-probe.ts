// Run by tests/handlers/integrations.test.ts inside its own network and mount namespaces
// (unshare -n -m), where 169.254.169.254 is an address of lo with a stand-in metadata service on
// port 80, and /etc/hosts maps meta-alias.roost.test to it. With ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL
// false then true it creates a GitLab integration by that name and by the literal address, and a
// notification webhook by that name; then (refusing app only) an integration by a name that
// resolves nowhere yet, maps that name to the metadata address too, and syncs it. It prints what
// came back and how many requests reached the stand-in, as one JSON line. The two apps run side
// by side, so a policy held process-wide instead of per app shows as a leak.
import { appendFileSync } from "node:fs";
import { bootstrapOwner, createTestApp } from "../helpers/app.ts";
import { createGithubIntegration, createProject, seedStandIn } from "../helpers/ci.ts";
import { startHostApiStandIn } from "./host-api-stand-in.ts";

let hits = 0;
const metadata = Bun.serve({
  hostname: "169.254.169.254",
  port: 80,
  fetch() {
    hits++;
    return new Response("AccessKeyId=ASIASTANDIN SecretAccessKey=stand-in-secret", { status: 200 });
  },
});
const host = await startHostApiStandIn();
seedStandIn(host);

// Both apps live in this one process at once, the refusing one created first: each follows its
// own configuration, not whichever app was created last.
const apps = {
  false: await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "false" }),
  true: await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "true" }),
};
const results: Record<string, unknown> = {};
try {
  for (const allow of ["false", "true"] as const) {
    const t = apps[allow];
    const owner = await bootstrapOwner(t);
    const seen: Record<string, unknown> = {};
    for (const [label, apiUrl] of [
      ["by_name", "http://meta-alias.roost.test"],
      ["by_address", "http://169.254.169.254"],
    ] as const) {
      const before = hits;
      const res = await t.call("POST", "/v1/integrations", { token: owner, body: { provider: "gitlab", name: label, api_url: apiUrl, access_token: "t" } });
      seen[label] = { status: res.status, sync_error: res.body?.sync_error ?? null, code: res.body?.code ?? null, reached: hits - before };
    }
    await createGithubIntegration(t, owner, host);
    const project = await createProject(t, owner);
    const hook = await t.call("POST", `/v1/projects/${project.id}/notifications`, {
      token: owner,
      body: {
        name: "hook",
        channel: "webhook",
        events: ["failed"],
        webhook: { url: "http://meta-alias.roost.test/hook", secret: "a-signing-secret-of-some-length" },
      },
    });
    seen.notification_by_name = { status: hook.status, message: hook.body?.details?.[0]?.message ?? null };
    if (allow === "false") {
      // A name that resolved nowhere when saved and to the metadata address later: the check
      // before each request still refuses it.
      const created = await t.call("POST", "/v1/integrations", {
        token: owner,
        body: { provider: "gitlab", name: "late", api_url: "http://late-alias.roost.test", access_token: "t" },
      });
      appendFileSync("/etc/hosts", "169.254.169.254 late-alias.roost.test\n");
      const before = hits;
      const sync = await t.call("POST", `/v1/integrations/${created.body.integration.id}/sync`, { token: owner });
      seen.resolved_later = { created: created.status, sync: sync.status, message: sync.body?.message ?? null, reached: hits - before };
    }
    results[`allow_${allow}`] = seen;
  }
} finally {
  apps.false.close();
  apps.true.close();
}
await metadata.stop(true);
await host.stop();
console.log(JSON.stringify(results));
