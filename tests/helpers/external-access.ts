// Bringing an in-process test instance to Ready External Access through the setup endpoints,
// with users inserted directly (nobody has a session yet in remote mode).
import { insertUser } from "../../lib/auth/users.ts";
import { setupToken, type TestApp } from "./app.ts";

export const STANDARD_CALLBACK = "https://ci.example.test/auth/callback";
export const OTHER_CALLBACK = "https://ci.example.test/other/callback";

async function finishSetup(t: TestApp, mode: "oidc" | "trusted_proxy", configure: (token: string) => Promise<void>): Promise<void> {
  const token = await setupToken(t);
  const steps = [
    await t.call("POST", "/v1/setup/preferences", { token, body: { runtime_mode: "remote", remote_auth_mode: mode } }),
    await t.call("POST", "/v1/setup/owner", { token, body: { email: "owner@example.test" } }),
  ];
  await configure(token);
  steps.push(await t.call("POST", "/v1/setup/complete", { token }));
  for (const s of steps) if (s.status >= 300) throw new Error(`setup step failed: ${s.status} ${s.text}`);
}

export async function readyWithOidc(
  t: TestApp,
  op: { issuer: string; clientId: string; clientSecret: string },
  extra: Record<string, unknown> = {},
): Promise<void> {
  await finishSetup(t, "oidc", async (token) => {
    const res = await t.call("PUT", "/v1/setup/oidc", {
      token,
      body: { issuer: op.issuer, client_id: op.clientId, client_secret: op.clientSecret, redirect_uris: [STANDARD_CALLBACK, OTHER_CALLBACK], ...extra },
    });
    if (res.status !== 200) throw new Error(`oidc settings failed: ${res.status} ${res.text}`);
  });
}

export async function readyWithTrustedProxy(t: TestApp, settings: Record<string, unknown>): Promise<void> {
  await finishSetup(t, "trusted_proxy", async (token) => {
    const res = await t.call("PUT", "/v1/setup/trusted-proxy", { token, body: settings });
    if (res.status !== 200) throw new Error(`trusted proxy settings failed: ${res.status} ${res.text}`);
  });
}

export async function invite(t: TestApp, email: string, role: "admin" | "developer" = "developer"): Promise<void> {
  await insertUser(t.db, { email, role, invitedBy: null, now: t.clock.now() });
}
