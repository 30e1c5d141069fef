// Projects, project roles and pipelines (docs/api.md "Projects", "Pipelines").
import { describe, expect, test } from "bun:test";
import { bootstrapOwner, createTestApp, userWithRole, type TestApp } from "../helpers/app.ts";
import { createPipeline, createProject, repositoryId, startGithubFixture, fixturePerFile } from "../helpers/ci.ts";
import { migrate } from "../../lib/db/migrate.ts";

let t: TestApp, owner: string;
fixturePerFile(startGithubFixture, (fixture) => ({ t, owner } = fixture));

describe("projects", () => {
  test("created from a catalogue repository, with the repository's name and default branch", async () => {
    const maintainer = await userWithRole(t, owner, "maintainer");
    const res = await t.call("POST", "/v1/projects", {
      token: maintainer.token,
      body: { repository_id: await repositoryId(t, owner, "acme/flutter-kit"), description: "the kit" },
    });
    expect(res.status).toBe(201);
    expect(res.body.project).toEqual({
      id: expect.any(String),
      name: "acme/flutter-kit",
      description: "the kit",
      default_branch: "develop",
      created_at: t.clock.now(),
      updated_at: t.clock.now(),
      created_by: maintainer.id,
      current_user_role: "maintainer",
      repository_id: expect.any(String),
      repository_full_name: "acme/flutter-kit",
      repository_avatar_url: "https://avatars.example.test/1003",
      repository_provider: "github",
      settings: {},
    });
  });

  test("an unknown repository is 404; a developer cannot create projects", async () => {
    expect((await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: "nope" } })).body.code).toBe("not_found");
    const dev = await userWithRole(t, owner, "developer");
    expect((await t.call("POST", "/v1/projects", { token: dev.token, body: { repository_id: await repositoryId(t, owner, "acme/app") } })).status).toBe(403);
  });

  test("PATCH changes the documented fields and refuses others", async () => {
    const project = await createProject(t, owner);
    const res = await t.call("PATCH", `/v1/projects/${project.id}`, {
      token: owner,
      body: { name: "App", default_branch: "release/1.0", settings: { badge: true } },
    });
    expect(res.status).toBe(200);
    expect(res.body.project).toMatchObject({ name: "App", default_branch: "release/1.0", settings: { badge: true }, current_user_role: "maintainer" });
    const bad = await t.call("PATCH", `/v1/projects/${project.id}`, { token: owner, body: { repository_id: "x" } });
    expect(bad.status).toBe(400);
    const branch = await t.call("PATCH", `/v1/projects/${project.id}`, { token: owner, body: { default_branch: "has space" } });
    expect(branch.body.details[0].path).toBe("body.default_branch");
  });

  test("members see their projects with their role; others get 404; viewers cannot configure", async () => {
    const project = await createProject(t, owner);
    const dev = await userWithRole(t, owner, "developer");
    expect((await t.call("GET", `/v1/projects/${project.id}`, { token: dev.token })).status).toBe(404);
    expect((await t.call("GET", "/v1/projects", { token: dev.token })).body.total).toBe(0);
    const set = await t.call("PUT", `/v1/projects/${project.id}/members/${dev.id}`, { token: owner, body: { role: "viewer" } });
    expect(set.body.member).toMatchObject({ user_id: dev.id, role: "viewer" });
    const seen = await t.call("GET", `/v1/projects/${project.id}`, { token: dev.token });
    expect(seen.body.project.current_user_role).toBe("viewer");
    const patch = await t.call("PATCH", `/v1/projects/${project.id}`, { token: dev.token, body: { name: "x" } });
    expect(patch.status).toBe(403);
    expect(patch.body).toEqual({ code: "forbidden", message: "This needs the maintainer role on the project; yours is viewer." });
    expect((await t.call("GET", "/v1/projects", { token: dev.token })).body.projects.map((p: { id: string }) => p.id)).toEqual([project.id]);
  });

  test("deleting a project removes it", async () => {
    const project = await createProject(t, owner);
    expect((await t.call("DELETE", `/v1/projects/${project.id}`, { token: owner })).body).toEqual({ deleted: true });
    expect((await t.call("GET", `/v1/projects/${project.id}`, { token: owner })).status).toBe(404);
  });
});

describe("pipelines", () => {
  test("a name alone gets the documented defaults", async () => {
    const project = await createProject(t, owner);
    const res = await t.call("POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "Android" } });
    expect(res.status).toBe(201);
    expect(res.body.pipeline).toEqual({
      id: expect.any(String),
      project_id: project.id,
      name: "Android",
      enabled: true,
      config_path: "roost.yaml",
      config_path_explicit: false,
      concurrency: { cancel_previous: false, max_concurrent: 1 },
      trigger_config: { branches: ["main"], events: ["push", "pull_request"] },
      execution_config: {
        artifact_patterns: expect.any(Array),
        commands: { pre_build: [], build: [], post_build: [] },
        env: [],
        flutter_version: "stable",
        platform_build_args: { android: [], ios: [], macos: [] },
        platform_commands: { android: [], ios: [], macos: [] },
        platforms: ["android"],
        runner_labels: [],
        timeout_seconds: 3600,
        step_timeout_seconds: {},
        cache: {
          enabled: true,
          paths: ["$PUB_CACHE", "$GRADLE_USER_HOME/caches", "$GRADLE_USER_HOME/wrapper", "$CP_HOME_DIR"],
          key_files: ["**/pubspec.lock", "**/*.gradle", "**/*.gradle.kts", "**/gradle-wrapper.properties", "**/Podfile.lock"],
        },
        test_reports: [
          "build/test-results/**/*.{json,jsonl,xml}",
          "build/*/test-results/**/*.xml",
          "build/*/outputs/androidTest-results/**/*.xml",
          "coverage/lcov.info",
          "build/analyze.txt",
        ],
        publish: [],
      },
      created_at: t.clock.now(),
      updated_at: t.clock.now(),
    });
  });

  test("a check pipeline builds no platform (platforms: []); a pipeline that names none still builds Android", async () => {
    const project = await createProject(t, owner);
    const check = await t.call("POST", `/v1/projects/${project.id}/pipelines`, {
      token: owner,
      body: { name: "pr-check", execution_config: { platforms: [], commands: { build: ["flutter analyze", "flutter test"] } } },
    });
    expect(check.status).toBe(201);
    expect(check.body.pipeline.execution_config).toMatchObject({
      platforms: [],
      commands: { pre_build: [], build: ["flutter analyze", "flutter test"], post_build: [] },
    });
    const read = await t.call("GET", `/v1/pipelines/${check.body.pipeline.id}`, { token: owner });
    expect(read.body.pipeline.execution_config.platforms).toEqual([]);
    const android = await t.call("POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "android" } });
    expect(android.body.pipeline.execution_config.platforms).toEqual(["android"]);
    // A PATCH that leaves platforms out keeps them.
    const patched = await t.call("PATCH", `/v1/pipelines/${check.body.pipeline.id}`, { token: owner, body: { execution_config: { flutter_version: "beta" } } });
    expect(patched.body.pipeline.execution_config.platforms).toEqual([]);
  });

  test("the full configuration round-trips; secret env values are sealed and never returned", async () => {
    const project = await createProject(t, owner);
    const config = {
      name: "Release",
      enabled: false,
      config_path: "ci/roost.yaml",
      concurrency: { cancel_previous: true, max_concurrent: 2 },
      trigger_config: { branches: ["main", "release/**", "!release/old-*"], events: ["push", "tag"] },
      execution_config: {
        artifact_patterns: ["build/**/*.apk"],
        commands: { pre_build: ["flutter pub get"], build: ["flutter test"], post_build: ["echo done"] },
        env: [
          { key: "FLAVOR", value: "prod" },
          { key: "KEYSTORE_PASSWORD", value: "hunter2-very-secret", secret: true },
        ],
        flutter_version: "3.24.5",
        platform_build_args: { android: ["--release"], ios: ["--no-codesign"], macos: [] },
        platform_commands: { macos: "make macos" },
        platforms: ["android", "ios"],
      },
    };
    const res = await t.call("POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: config });
    expect(res.status).toBe(201);
    const p = res.body.pipeline;
    expect(p.config_path_explicit).toBe(true);
    expect(p.trigger_config).toEqual(config.trigger_config);
    expect(p.execution_config.env).toEqual([
      { key: "FLAVOR", value: "prod", secret: false },
      { key: "KEYSTORE_PASSWORD", value: "", secret: true },
    ]);
    expect(res.text).not.toContain("hunter2");
    const stored = await t.db.execute({ sql: "SELECT execution_config FROM pipelines WHERE id = ?", args: [p.id] });
    expect(String(stored.rows[0]!.execution_config)).not.toContain("hunter2");

    // PATCH with the secret entry but no value keeps the stored secret.
    const patched = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: { execution_config: { ...config.execution_config, env: [{ key: "KEYSTORE_PASSWORD", secret: true }], flutter_version: "beta" } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.pipeline.execution_config.flutter_version).toBe("beta");
    const after = await t.db.execute({ sql: "SELECT execution_config FROM pipelines WHERE id = ?", args: [p.id] });
    expect(String(after.rows[0]!.execution_config)).toContain("KEYSTORE_PASSWORD");
    const missing = await t.call("PATCH", `/v1/pipelines/${p.id}`, {
      token: owner,
      body: { execution_config: { env: [{ key: "NEW_SECRET", secret: true }] } },
    });
    expect(missing.status).toBe(400);
  });

  test.each([
    [{ name: "x", trigger_config: { events: ["push", "push"] } }, "body.trigger_config.events"],
    [{ name: "x", trigger_config: { events: ["deploy"] } }, "body.trigger_config.events.0"],
    [{ name: "x", trigger_config: { branches: Array.from({ length: 51 }, (_, i) => `b${i}`) } }, "body.trigger_config.branches"],
    [{ name: "x", concurrency: { max_concurrent: 0 } }, "body.concurrency.max_concurrent"],
    [{ name: "x", execution_config: { platforms: ["windows"] } }, "body.execution_config.platforms.0"],
    [{ name: "x", execution_config: { platforms: ["ios", "ios"] } }, "body.execution_config.platforms"],
    [{ name: "x", execution_config: { env: [{ key: "ROOST_BUILD_NUMBER", value: "1" }] } }, "body.execution_config.env.0.key"],
    [
      {
        name: "x",
        execution_config: {
          env: [
            { key: "A", value: "1" },
            { key: "A", value: "2" },
          ],
        },
      },
      "body.execution_config.env",
    ],
    [{ name: "x", execution_config: { flutter_version: "latest; rm -rf /" } }, "body.execution_config.flutter_version"],
    [{ name: "x", execution_config: { commands: { build: ["x".repeat(5000)] } } }, "body.execution_config.commands.build.0"],
    [{ name: "x", config_path: "../../etc/passwd" }, "body.config_path"],
    [{ name: "x", execution_config: { timeout_seconds: 0 } }, "body.execution_config.timeout_seconds"],
    [{ name: "x", execution_config: { step_timeout_seconds: { deploy: 60 } } }, "body.execution_config.step_timeout_seconds"],
    [{ name: "x", execution_config: { cache: { paths: ["/etc"] } } }, "body.execution_config.cache.paths.0"],
    [{ name: "x", execution_config: { cache: { paths: ["$PUB_CACHE/../.."] } } }, "body.execution_config.cache.paths.0"],
    [{ name: "" }, "body.name"],
  ])("invalid configuration %p is 400 at %s", async (body, path) => {
    const project = await createProject(t, owner);
    const res = await t.call("POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  test.each([
    ["/etc/passwd", "must be relative to the checkout, not an absolute path"],
    ["/home/runner/.ssh/*", "must be relative to the checkout, not an absolute path"],
    ["../secrets/*.json", "must not contain .. (artifacts come only from inside the checkout)"],
    ["build/../../outside/*", "must not contain .. (artifacts come only from inside the checkout)"],
    ["build/{..,app}/*.apk", "must not contain .. (artifacts come only from inside the checkout)"],
  ])("artifact pattern %p is refused with 400 on create and on update, naming the pattern's problem", async (pattern, message) => {
    const project = await createProject(t, owner);
    const path = "body.execution_config.artifact_patterns.1";
    const expected = { code: "invalid_request", message: `The body is not valid: ${path}: ${message}`, details: [{ path, message }] };
    const created = await t.call("POST", `/v1/projects/${project.id}/pipelines`, {
      token: owner,
      body: { name: "x", execution_config: { artifact_patterns: ["build/app/*.apk", pattern] } },
    });
    expect(created.status).toBe(400);
    expect(created.body).toEqual(expected);
    const pipeline = await createPipeline(t, owner, project.id);
    const updated = await t.call("PATCH", `/v1/pipelines/${pipeline.id}`, {
      token: owner,
      body: { execution_config: { artifact_patterns: ["build/app/*.apk", pattern] } },
    });
    expect(updated.status).toBe(400);
    expect(updated.body).toEqual(expected);
    // Names with dots that do not climb stay allowed.
    const fine = await t.call("PATCH", `/v1/pipelines/${pipeline.id}`, {
      token: owner,
      body: { execution_config: { artifact_patterns: ["build/app..old/*.apk", ".dart_tool/*.json"] } },
    });
    expect(fine.status).toBe(200);
  });

  test("names are unique per project (409 pipeline_exists); list, read and delete", async () => {
    const project = await createProject(t, owner);
    const first = await createPipeline(t, owner, project.id, { name: "Same" });
    const dup = await t.call("POST", `/v1/projects/${project.id}/pipelines`, { token: owner, body: { name: "Same" } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("pipeline_exists");
    expect((await t.call("GET", `/v1/projects/${project.id}/pipelines`, { token: owner })).body.pipelines.map((p: { id: string }) => p.id)).toEqual([first.id]);
    expect((await t.call("GET", `/v1/pipelines/${first.id}`, { token: owner })).body.pipeline.name).toBe("Same");
    expect((await t.call("DELETE", `/v1/pipelines/${first.id}`, { token: owner })).body).toEqual({ deleted: true });
    expect((await t.call("GET", `/v1/pipelines/${first.id}`, { token: owner })).status).toBe(404);
  });
});

describe("a repository is built by exactly one project", () => {
  test("a second project on a repository is 409 repository_already_linked, naming nothing about the first", async () => {
    const repo = await repositoryId(t, owner, "acme/website");
    const first = (await t.call("POST", "/v1/projects", { token: owner, body: { repository_id: repo, name: "the website" } })).body.project;
    const outsider = await userWithRole(t, owner, "maintainer");
    const second = await t.call("POST", "/v1/projects", { token: outsider.token, body: { repository_id: repo } });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({
      code: "repository_already_linked",
      message: "Another project already builds this repository; a repository is built by exactly one project. Ask its maintainers to add you.",
    });
    expect((await t.call("GET", `/v1/projects/${first.id}`, { token: owner })).body.project.repository_id).toBe(repo);
    // Once the project is deleted, the repository can be linked again.
    await t.call("DELETE", `/v1/projects/${first.id}`, { token: owner });
    expect((await t.call("POST", "/v1/projects", { token: outsider.token, body: { repository_id: repo } })).status).toBe(201);
  });

  test("upgrading a database where two projects build one repository: the oldest keeps it, the other is unlinked with an incident, and old tokens are dropped", async () => {
    const app = await createTestApp();
    try {
      const admin = await bootstrapOwner(app);
      // The schema as it was before migration 7, with two projects on one GitLab repository.
      for (const sql of [
        "DROP INDEX projects_one_per_repository",
        "ALTER TABLE projects DROP COLUMN unlinked_at",
        "ALTER TABLE projects DROP COLUMN webhook_token_hash",
        "DELETE FROM schema_migrations WHERE version = 7",
        "INSERT INTO integrations (id, provider, name, api_url, web_url, credentials_sealed, created_at, updated_at) VALUES ('int1', 'gitlab', 'GitLab', 'https://gitlab.example', 'https://gitlab.example', 'sealed', 1, 1)",
        "INSERT INTO repositories (id, integration_id, provider, external_id, full_name, default_branch, host_url, created_at, updated_at, webhook_token_hash) VALUES ('repo1', 'int1', 'gitlab', '7', 'team/app', 'main', 'https://gitlab.example', 1, 1, 'hash-minted-by-anyone')",
        "INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('older', 'Real', 'repo1', 'main', 100, 100)",
        "INSERT INTO projects (id, name, repository_id, default_branch, created_at, updated_at) VALUES ('newer', 'Takeover', 'repo1', 'main', 200, 200)",
      ])
        await app.db.execute(sql);
      await migrate(app.db, app.clock.now);

      const rows = (await app.db.execute("SELECT id, unlinked_at FROM projects ORDER BY id")).rows.map((r) => [r.id, r.unlinked_at === null]);
      expect(rows).toEqual([
        ["newer", false],
        ["older", true],
      ]);
      expect((await app.db.execute("SELECT webhook_token_hash FROM repositories")).rows[0]!.webhook_token_hash).toBeNull();
      const incidents = (await app.call("GET", "/v1/operator-incidents?status=open", { token: admin })).body.incidents;
      expect(incidents).toEqual([
        expect.objectContaining({
          reason: "project_unlinked",
          resource_kind: "project",
          resource_id: "newer",
          message: "Project Takeover was unlinked from team/app: an older project builds that repository, and a repository is built by exactly one project.",
        }),
      ]);
      // The unlinked project gets no webhook token; the linked one does, and the unique rule now holds.
      const refused = await app.call("POST", "/v1/projects/newer/webhook-token", { token: admin });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe("repository_already_linked");
      expect((await app.call("POST", "/v1/projects/older/webhook-token", { token: admin })).status).toBe(201);
      expect((await app.call("POST", "/v1/projects", { token: admin, body: { repository_id: "repo1" } })).status).toBe(409);
    } finally {
      app.close();
    }
  });
});
