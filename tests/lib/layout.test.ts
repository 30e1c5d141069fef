// lib/ holds the shared mechanisms; the endpoints (handlers/), the programs' entries (bin/,
// runner/) and the tools (scripts/) build on it, never the other way round (Roost issue 11). A
// lib/ file that imports one of them drags a program into every other program that uses lib/.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const FORBIDDEN = ["handlers", "scripts", "bin", "runner"];

/** Every module specifier in a source file: static, type-only, re-exports, side-effect and dynamic imports. */
function specifiers(source: string): string[] {
  const pattern = /\b(?:from|import)\s*\(?\s*["']([^"']+)["']|\brequire\s*\(\s*["']([^"']+)["']/g;
  return [...source.matchAll(pattern)].map((m) => (m[1] ?? m[2])!);
}

/** The top-level folder a relative specifier lands in, seen from the repository root. */
function topFolder(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  return relative(ROOT, resolve(dirname(file), specifier)).split("/")[0] ?? null;
}

describe("layout", () => {
  test("the scanner sees every kind of import", () => {
    const file = join(ROOT, "lib/example.ts");
    const source = `import { a } from "../handlers/a.ts";\nimport type { B } from '../runner/b.ts';\nexport * from "../bin/c.ts";\nimport "../scripts/d.ts";\nconst e = await import("../handlers/e.ts");\nimport { f } from "./f.ts";`;
    expect(specifiers(source).map((s) => topFolder(file, s))).toEqual(["handlers", "runner", "bin", "scripts", "handlers", "lib"]);
  });

  test("no file under lib/ imports from handlers/, scripts/, bin/ or runner/", () => {
    const offending: string[] = [];
    for (const path of new Bun.Glob("lib/**/*.{ts,tsx,js,mjs}").scanSync({ cwd: ROOT })) {
      const file = join(ROOT, path);
      for (const specifier of specifiers(readFileSync(file, "utf8"))) {
        const folder = topFolder(file, specifier);
        if (folder && FORBIDDEN.includes(folder)) offending.push(`${path} imports ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });
});

// Each table belongs to one domain folder of lib/, and only that folder writes it (issue 19): a
// newcomer finds every INSERT, UPDATE and DELETE of a table in one place. Reads may join across
// domains (that is what SQL is for); writes may not, except the few listed in CROSS_DOMAIN_WRITES,
// each with the reason it belongs in the other domain's transaction.
const OWNER: Record<string, string> = {
  api_tokens: "auth",
  oidc_pending: "auth",
  oidc_settings: "auth",
  recovery_capabilities: "auth",
  sessions: "auth",
  setup_tokens: "auth",
  stream_tokens: "auth",
  trusted_proxy_settings: "auth",
  users: "auth",
  artifacts: "artifacts",
  cache_entries: "caches",
  cache_project_bytes: "caches",
  builds: "builds",
  build_branch_counts: "builds",
  build_counts: "builds",
  build_queue_groups: "builds",
  build_queue_sequence: "builds",
  operator_incidents: "daemon",
  object_sweep: "object-store",
  schema_migrations: "db",
  commit_status_outbox: "forges",
  git_polls: "forges",
  integrations: "integrations",
  repositories: "integrations",
  catalogue_version: "integrations",
  build_log_stats: "logs",
  build_logs: "logs",
  deployment_notification_outbox: "notifications",
  notification_deliveries: "notifications",
  notification_outbox: "notifications",
  notifications: "notifications",
  pipelines: "pipelines",
  project_members: "projects",
  project_operation_settings: "projects",
  projects: "projects",
  deployments: "publishing",
  environments: "publishing",
  jobs: "runners",
  runners: "runners",
  pipeline_schedules: "schedules",
  schedule_runs: "schedules",
  instance: "setup",
  build_annotations: "test-results",
  build_test_summaries: "test-results",
  check_run_reports: "test-results",
  coverage_files: "test-results",
  test_reports: "test-results",
  test_results: "test-results",
  tests: "test-results",
  variable_changes: "variables",
  variables: "variables",
  webhook_dedupe_keys: "webhooks",
  webhook_deliveries: "webhooks",
  webhook_delivery_bodies: "webhooks",
};

const CROSS_DOMAIN_WRITES: Record<string, string[]> = {
  // What follows a build's status change is written in the transaction that changes it.
  "lib/builds/what-follows.ts": ["commit_status_outbox", "notification_outbox"],
  // A deployment waiting for approval asks its approvers in the transaction that plans it.
  "lib/publishing/plan.ts": ["deployment_notification_outbox"],
  // Retention is the one pass that deletes what expired, whichever domain it belongs to.
  "lib/retention/retention.ts": ["artifacts", "build_log_stats", "build_logs", "builds", "project_operation_settings"],
  // The badge setting is a column of the project's operation settings row.
  "lib/badges/badges.ts": ["project_operation_settings"],
};

/** Source without // and /* comments, so prose about SQL is not taken for SQL. */
function code(path: string): string {
  return readFileSync(join(ROOT, path), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
}

const WRITE = /\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+([a-z_]+)\b/g;
const STATEMENT = /["'`]\s*(?:SELECT\s[\s\S]*?\sFROM\s|INSERT\s|UPDATE\s+[a-z_]+\s+SET\s|DELETE\s+FROM\s|WITH\s+[a-z_]+\s+AS\s*\()/;

describe("domain stores", () => {
  test("every table in the current schema has one owning domain", () => {
    const tables = [...readFileSync(join(ROOT, "docs/schema.md"), "utf8").matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?([a-z_]+)/g)].map((m) => m[1]!);
    expect(tables.length).toBeGreaterThan(20);
    expect(tables.filter((t) => !(t in OWNER))).toEqual([]);
  });

  test("a lib/ folder writes only its own tables, apart from the listed cross-domain writes", () => {
    const offending: string[] = [];
    for (const path of new Bun.Glob("lib/**/*.ts").scanSync({ cwd: ROOT })) {
      const domain = path.split("/")[1]!;
      for (const m of code(path).matchAll(WRITE)) {
        const table = m[1]!;
        if (!(table in OWNER) || OWNER[table] === domain) continue;
        if (CROSS_DOMAIN_WRITES[path]?.includes(table)) continue;
        offending.push(`${path} writes ${table} (owned by lib/${OWNER[table]}/)`);
      }
    }
    expect(offending).toEqual([]);
  });

  test("the scanner sees a write and a statement where they are", () => {
    const sample = 'await db.execute({ sql: "UPDATE builds SET status = ? WHERE id = ?" });\nconst x = "INSERT OR IGNORE INTO jobs (id) VALUES (?)";';
    expect([...sample.matchAll(WRITE)].map((m) => m[1])).toEqual(["builds", "jobs"]);
    expect(STATEMENT.test('one(db, "SELECT 1 FROM jobs WHERE id = ?")')).toBe(true);
    expect(STATEMENT.test('summary: "Select a pipeline from the list"')).toBe(false);
  });

  test("no handler holds SQL: endpoints call their domain's store", () => {
    const offending: string[] = [];
    for (const path of new Bun.Glob("handlers/**/*.ts").scanSync({ cwd: ROOT })) {
      if (STATEMENT.test(code(path))) offending.push(path);
    }
    expect(offending).toEqual([]);
  });
});

// The runner is a separate program (docs/runners.md): what it imports from lib/ is the wire
// protocol and pure helpers, never the daemon's database, HTTP framework or process, so the
// protocol schemas are importable by the runner alone (issue 19).
describe("the runner's imports", () => {
  test("everything runner/ reaches, transitively, stays out of the daemon's layers", () => {
    const reached = new Set<string>();
    const stack = [...new Bun.Glob("runner/**/*.ts").scanSync({ cwd: ROOT })];
    while (stack.length) {
      const path = stack.pop()!;
      if (reached.has(path)) continue;
      reached.add(path);
      for (const specifier of specifiers(readFileSync(join(ROOT, path), "utf8"))) {
        if (!specifier.startsWith(".")) continue;
        const target = relative(ROOT, resolve(dirname(join(ROOT, path)), specifier));
        if (Bun.file(join(ROOT, target)).size > 0) stack.push(target);
      }
    }
    const fromLib = [...reached].filter((p) => p.startsWith("lib/"));
    expect(fromLib).toContain("lib/runners/protocol-wire.ts");
    expect(fromLib.filter((p) => /^lib\/(db|http|daemon|auth|live|webhooks|builds)\//.test(p))).toEqual([]);
    expect([...reached].filter((p) => p.startsWith("handlers/"))).toEqual([]);
  });
});
