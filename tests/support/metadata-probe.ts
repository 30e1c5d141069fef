// Run by tests/handlers/integrations.test.ts inside its own network and mount namespaces
// (unshare -n -m), where 169.254.169.254 is an address of lo with a stand-in metadata service on
// port 80, and /etc/hosts maps meta-alias.roost.test to it. Creates a GitLab integration by that
// name and by the literal address, with ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL false then true, and
// prints what came back and how many requests reached the stand-in, as one JSON line. The two
// apps run side by side, so a policy held process-wide instead of per app shows as a leak.
import { bootstrapOwner, createTestApp } from "../helpers/app.ts";

let hits = 0;
const metadata = Bun.serve({
  hostname: "169.254.169.254",
  port: 80,
  fetch() {
    hits++;
    return new Response("AccessKeyId=ASIASTANDIN SecretAccessKey=stand-in-secret", { status: 200 });
  },
});

// Both apps live in this one process at once, the refusing one created first: each follows its
// own configuration, not whichever app was created last.
const apps = { false: await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "false" }), true: await createTestApp({ ROOST_INTEGRATIONS_ALLOW_LINK_LOCAL: "true" }) };
const results: Record<string, unknown> = {};
try {
  for (const allow of ["false", "true"] as const) {
    const t = apps[allow];
    const owner = await bootstrapOwner(t);
    const seen: Record<string, unknown> = {};
    for (const [label, apiUrl] of [["by_name", "http://meta-alias.roost.test"], ["by_address", "http://169.254.169.254"]] as const) {
      const before = hits;
      const res = await t.call("POST", "/v1/integrations", { token: owner, body: { provider: "gitlab", name: label, api_url: apiUrl, access_token: "t" } });
      seen[label] = { status: res.status, sync_error: res.body?.sync_error ?? null, code: res.body?.code ?? null, reached: hits - before };
    }
    results[`allow_${allow}`] = seen;
  }
} finally {
  apps.false.close();
  apps.true.close();
}
await metadata.stop(true);
console.log(JSON.stringify(results));
