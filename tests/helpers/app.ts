// In-process test harness: the real route table and pipeline on a temp-file libSQL database,
// called through `app.fetch` the way the listener (lib/http/listener.ts) calls it, with the peer address and clock injected.
// ROOST_TEST_DATABASE=sqld puts each test app's database on a real libSQL server of its own
// instead (tests/support/sqld.ts), as several hosts run Roost; `npm test` runs a chosen set so.
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "bun:test";
import { EventBus } from "../../lib/daemon/events.ts";
import { createLive } from "../../lib/live/live.ts";
import { MetricsRegistry } from "../../lib/daemon/metrics.ts";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp, type App } from "../../lib/http/app.ts";
import { loadConfig, type Config } from "../../lib/daemon/config.ts";
import type { AppContext, Clock } from "../../lib/http/context.ts";
import { openDatabase, type Db } from "../../lib/db/client.ts";
import { migrate } from "../../lib/db/migrate.ts";
import { silentLogger } from "../../lib/daemon/log.ts";
import { routes } from "../../handlers/routes.ts";
import { mintRecoveryCapability, mintSetupToken } from "../../lib/auth/one-time-credentials.ts";
import { createSecretBox, loadSecretKey } from "../../lib/crypto/secret-box.ts";
import { openObjectStore } from "../../lib/object-store/store.ts";
import { createOidcCache } from "../../lib/auth/oidc-cache.ts";
import { startSqld, testDatabase, type Sqld } from "../support/sqld.ts";
import { checkResponseSchema } from "./response-schemas.ts";

export interface TestClock extends Clock {
  advance(seconds: number): void;
  set(seconds: number): void;
}

export function testClock(start = 1_800_000_000): TestClock {
  let now = start;
  return { now: () => now, advance: (s) => void (now += s), set: (s) => void (now = s) };
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** Raw body text; sent as-is with the given content type. */
  raw?: string;
  contentType?: string;
  peer?: string | null;
  headers?: Record<string, string>;
}

export interface Called {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface TestApp {
  app: App;
  db: Db;
  ctx: AppContext;
  clock: TestClock;
  config: Config;
  dataDir: string;
  call(method: string, path: string, options?: CallOptions): Promise<Called>;
  close(): void;
}

/**
 * A database file migrated once per test process: each test app starts from a copy of it, which
 * takes a millisecond where sixteen-plus migrations, each committed with an fsync, take a few
 * hundred. tests/lib/migrate*.test.ts still migrate for real.
 */
let migratedTemplate: Promise<string> | undefined;

function templateDatabase(): Promise<string> {
  migratedTemplate ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "roost-test-template-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "roost.db");
    const db = await openDatabase(`file:${file}`);
    await migrate(db, testClock().now);
    await db.execute("PRAGMA wal_checkpoint(TRUNCATE)"); // everything in the file itself, none in its WAL
    db.close();
    return file;
  })();
  return migratedTemplate;
}

/** The same migrated template for ROOST_TEST_DATABASE=sqld: a directory a stopped sqld wrote. */
let sqldTemplate: Promise<string> | undefined;

function sqldTemplateDir(): Promise<string> {
  sqldTemplate ??= (async () => {
    const template = await startSqld();
    process.once("exit", () => rmSync(join(template.dir, ".."), { recursive: true, force: true }));
    const db = await openDatabase(template.url);
    await migrate(db, testClock().now);
    db.close();
    await template.stop({ keep: true });
    return template.dir;
  })();
  return sqldTemplate;
}

/**
 * `clockStart`: the app clock's first reading (testClock's fixed start unless given). A file whose
 * app must keep time with the real clock (a stand-in's token that expires an hour from the real
 * now) starts there, before any session is made: a session made on the fixed clock ends 24 h
 * after it, and the real clock passes it on 2027-01-15.
 */
export async function createTestApp(env: Record<string, string> = {}, options: { clockStart?: number } = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), "roost-test-"));
  let sqld: Sqld | undefined;
  if (testDatabase() === "sqld" && env.ROOST_DATABASE_URL === undefined) {
    sqld = await startSqld({ from: await sqldTemplateDir() });
    env = { ...env, ROOST_DATABASE_URL: sqld.url };
  }
  const config = loadConfig({ ROOST_DATA_DIR: dataDir, ...env });
  const ownFile = config.databaseUrl === `file:${join(dataDir, "roost.db")}`;
  if (ownFile) copyFileSync(await templateDatabase(), join(dataDir, "roost.db"));
  const db = await openDatabase(config.databaseUrl);
  const clock = testClock(options.clockStart);
  await migrate(db, clock.now); // nothing left to apply on a copy of the template
  const secrets = await createSecretBox(await loadSecretKey(dataDir, config.secretKey));
  const events = new EventBus();
  const ctx: AppContext = {
    db,
    config,
    clock,
    log: silentLogger,
    secrets,
    events,
    metrics: new MetricsRegistry(),
    live: createLive({ db, events }),
    shutdown: new AbortController().signal,
    oidc: createOidcCache(),
    objects: openObjectStore(config.objectStore, dataDir, silentLogger),
  };
  const app = createApp(ctx, routes);
  return {
    app,
    db,
    ctx,
    clock,
    config,
    dataDir,
    async call(method, path, options = {}) {
      const headers: Record<string, string> = { host: "127.0.0.1:8080", ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined;
      if (options.raw !== undefined) {
        body = options.raw;
        if (options.contentType) headers["content-type"] = options.contentType;
      } else if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers["content-type"] = options.contentType ?? "application/json";
      }
      const response = await app.fetch(
        new Request(`http://127.0.0.1:8080${path}`, { method, headers, body }),
        options.peer === undefined ? "127.0.0.1" : options.peer,
      );
      const text = await response.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      checkResponseSchema(method, path, response.status, response.headers.get("content-type"), parsed);
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    close() {
      ctx.live.close();
      db.close();
      rmSync(dataDir, { recursive: true, force: true });
      void sqld?.stop();
    },
  };
}

/**
 * A test app made before each test and closed after it (or, with "file", one for the whole file):
 * the hooks a handler test file would otherwise write itself. The object returned is filled in by
 * the hook, so the file can hold it in a `const` as it holds `databasePerTest`'s (tests/helpers/migrations.ts).
 */
export function testAppPer(scope: "test" | "file", env: Record<string, string> = {}): TestApp {
  const t = {} as TestApp;
  (scope === "test" ? beforeEach : beforeAll)(async () => void Object.assign(t, await createTestApp(env)));
  (scope === "test" ? afterEach : afterAll)(() => t.close());
  return t;
}

/** Asserts an error answer whole: its status and its JSON body `{code, message}` (lib/errors.ts), in one comparison. */
export function expectError(res: { status: number; body: unknown }, status: number, body: { code: string; message: string }): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body });
}

/** Local Only first run: the first loopback login creates the owner. Returns the owner's session token. */
export async function bootstrapOwner(t: TestApp, email = "owner@example.test"): Promise<string> {
  const res = await t.call("POST", "/v1/auth/local/login", { body: { email } });
  if (res.status !== 200) throw new Error(`bootstrap failed: ${res.status} ${res.text}`);
  return res.body.session_token;
}

/** A test app with its owner signed in, where most handler tests start. */
export async function appWithOwner(env: Record<string, string> = {}): Promise<{ t: TestApp; owner: string }> {
  const t = await createTestApp(env);
  return { t, owner: await bootstrapOwner(t) };
}

/** Invites a user with `role` (as the owner) and signs them in locally; returns their session token and id. */
export async function userWithRole(
  t: TestApp,
  ownerToken: string,
  role: string,
  email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.test`,
): Promise<{ token: string; id: string; email: string }> {
  const invited = await t.call("POST", "/v1/users", { token: ownerToken, body: { email, role } });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.status} ${invited.text}`);
  return { token: await localLogin(t, email), id: invited.body.user.id, email };
}

/** A one-time capability as `roost login` mints it over the management socket. */
export async function loginCapability(t: TestApp): Promise<string> {
  return (await mintRecoveryCapability(t.db, t.clock.now())).token;
}

/** Local login on a ready instance, with a fresh capability (as the operator at the host would); returns the session token. */
export async function localLogin(t: TestApp, email: string): Promise<string> {
  const login = await t.call("POST", "/v1/auth/local/login", { body: { email, recovery_capability: await loginCapability(t) } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  return login.body.session_token;
}

/** A setup token as the daemon would mint at first start. */
export async function setupToken(t: TestApp): Promise<string> {
  return (await mintSetupToken(t.db, t.clock.now())).token;
}
