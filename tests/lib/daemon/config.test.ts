// Configuration from ROOST_* variables (lib/daemon/config.ts): defaults, and a clear error for bad values.
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../lib/daemon/config.ts";

describe("loadConfig", () => {
  test("defaults: 127.0.0.1:8080, ./data, an embedded database file there", () => {
    const c = loadConfig({});
    expect(c.listen).toEqual({ hostname: "127.0.0.1", port: 8080 });
    expect(c.dataDir).toBe(`${process.cwd()}/data`);
    expect(c.databaseUrl).toBe(`file:${process.cwd()}/data/roost.db`);
    expect(c.managementSocketPath).toBe(`${process.cwd()}/data/roost.sock`);
    expect(c.logLevel).toBe("info");
  });

  test("IPv6 listen addresses and a libSQL server URL", () => {
    const c = loadConfig({ ROOST_LISTEN: "[::1]:9000", ROOST_DATABASE_URL: "libsql://db.example.test" });
    expect(c.listen).toEqual({ hostname: "::1", port: 9000 });
    expect(c.databaseUrl).toBe("libsql://db.example.test");
  });

  test.each([
    [{ ROOST_LISTEN: "8080" }, "ROOST_LISTEN"],
    [{ ROOST_LISTEN: "localhost:70000" }, "ROOST_LISTEN"],
    [{ ROOST_LOG_LEVEL: "loud" }, "ROOST_LOG_LEVEL"],
    [{ ROOST_DATABASE_URL: "postgres://x" }, "ROOST_DATABASE_URL"],
    [{ ROOST_PUBLIC_URL: "ftp://x" }, "ROOST_PUBLIC_URL"],
    [{ ROOST_SECRET_KEY: "short" }, "ROOST_SECRET_KEY"],
    [
      { ROOST_RUNNER_HEARTBEAT_SECONDS: "45", ROOST_RUNNER_LEASE_SECONDS: "45" },
      "ROOST_RUNNER_HEARTBEAT_SECONDS: must be shorter than ROOST_RUNNER_LEASE_SECONDS",
    ],
    [{ ROOST_RUNNER_HEARTBEAT_SECONDS: "60" }, "ROOST_RUNNER_HEARTBEAT_SECONDS: must be shorter than ROOST_RUNNER_LEASE_SECONDS"],
  ])("%p is refused naming %s", (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });

  test("every fault is named on one line", () => {
    expect(() => loadConfig({ ROOST_LISTEN: "8080", ROOST_LOG_LEVEL: "loud" })).toThrow(
      /^invalid configuration: ROOST_LISTEN: [^\n]+; ROOST_LOG_LEVEL: [^\n]+$/,
    );
  });
});
