// Operator endpoints (docs/operations.md "Health and metrics"): /healthz, /readyz, /metrics and request logs.
import { describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, testAppPer } from "../helpers/app.ts";
import { createApp } from "../../lib/http/app.ts";
import { createLogger } from "../../lib/daemon/log.ts";
import { routes } from "../../handlers/routes.ts";

const t = testAppPer("test");

describe("health and readiness", () => {
  test("/healthz answers ok to anyone", async () => {
    const res = await t.call("GET", "/healthz", { peer: "198.51.100.3" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });

  test("/readyz reports the schema version when the database is migrated", async () => {
    const res = await t.call("GET", "/readyz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ready", schema_version: expect.any(Number) });
  });

  test("/readyz is 503 not_ready when a migration is missing", async () => {
    await t.db.execute("DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)");
    const res = await t.call("GET", "/readyz");
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("not_ready");
  });

  test("/readyz is 503 once shutdown has begun", async () => {
    const controller = new AbortController();
    const app = createApp({ ...t.ctx, shutdown: controller.signal }, routes);
    controller.abort();
    const res = await app.fetch(new Request("http://127.0.0.1/readyz"), "127.0.0.1");
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ code: "not_ready", message: "The daemon is shutting down." });
  });
});

describe("/metrics", () => {
  test("loopback peers scrape without a token when none is configured; others are refused", async () => {
    const owner = await bootstrapOwner(t);
    await t.call("GET", "/v1/api-tokens", { token: owner });
    const res = await t.call("GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4");
    expect(res.text).toContain('roost_http_requests_total{method="GET",route="/v1/api-tokens",status="200"} 1');
    expect(res.text).toContain('roost_builds{status="queued"} 0');
    expect(res.text).toContain("roost_queue_depth 0");
    const remote = await t.call("GET", "/metrics", { peer: "198.51.100.3" });
    expect(remote.status).toBe(403);
    expect(remote.body).toEqual({ code: "forbidden", message: "Without ROOST_METRICS_TOKEN, /metrics answers loopback peers only." });
  });

  test("with ROOST_METRICS_TOKEN, the bearer token is required from anywhere", async () => {
    const withToken = await createTestApp({ ROOST_METRICS_TOKEN: "scrape-token-0123456789" });
    try {
      expect((await withToken.call("GET", "/metrics")).body.code).toBe("missing_auth");
      expect((await withToken.call("GET", "/metrics", { token: "wrong-token-0123456789" })).body.code).toBe("invalid_token");
      const ok = await withToken.call("GET", "/metrics", { token: "scrape-token-0123456789", peer: "198.51.100.3" });
      expect(ok.status).toBe(200);
    } finally {
      withToken.close();
    }
  });

  test("route labels are templates, so ids and tokens never become labels", async () => {
    const owner = await bootstrapOwner(t);
    await t.call("DELETE", "/v1/api-tokens/some-secret-looking-id", { token: owner });
    const res = await t.call("GET", "/metrics");
    expect(res.text).toContain('route="/v1/api-tokens/:token_id"');
    expect(res.text).not.toContain("some-secret-looking-id");
  });
});

describe("request logs", () => {
  test("one JSON line per request with request id, route template, status and duration; credentials redacted", async () => {
    const lines: string[] = [];
    const app = createApp({ ...t.ctx, log: createLogger("debug", (l) => lines.push(l)) }, routes);
    const login = await app.fetch(
      new Request("http://127.0.0.1:8080/v1/auth/local/login", {
        method: "POST",
        headers: { "content-type": "application/json", host: "127.0.0.1:8080" },
        body: '{"email":"o@example.test"}',
      }),
      "127.0.0.1",
    );
    const { session_token } = (await login.json()) as { session_token: string };
    const res = await app.fetch(
      new Request(`http://127.0.0.1:8080/v1/users/me?token=${session_token}`, { headers: { authorization: `Bearer ${session_token}` } }),
      "127.0.0.1",
    );
    const entry = lines.map((l) => JSON.parse(l)).find((e) => e.msg === "request" && e.request_id === res.headers.get("x-request-id"));
    expect(entry).toMatchObject({ level: "debug", method: "GET", route: "/v1/users/me", status: 200, peer: "127.0.0.1" });
    expect(typeof entry.duration_ms).toBe("number");
    expect(lines.join("\n")).not.toContain(session_token);
  });
});
