// `bun run scripts/screenshots.ts`: screenshots of the web app's main pages at desktop and phone
// width, saved to docs/screenshots/*.png (README and docs/web-app.md show them). It starts a real
// daemon on a temporary data directory, a real `roost runner` with a `flutter` stand-in, seeds a
// project with a few builds through the API, and drives the same Chromium as tests/browser/.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { BUN, ROOST, startDaemon } from "../tests/helpers/daemon.ts";
import { startHostApiStandIn } from "../tests/support/host-api-stand-in.ts";
import { launchBrowser } from "../tests/browser/browser.ts";

const ROOT = resolve(import.meta.dir, "..");
// ROOST_SCREENSHOTS_DIR: write elsewhere (e.g. to compare or pick some without touching the others).
const OUT = process.env.ROOST_SCREENSHOTS_DIR ?? join(ROOT, "docs", "screenshots");
const work = mkdtempSync(join(tmpdir(), "roost-screenshots-"));
const SECRET = "0123456789abcdef-screenshots";

async function sh(cmd: string, cwd: string): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(cmd);
  return out.trim();
}

mkdirSync(OUT, { recursive: true });
const repo = join(work, "app");
mkdirSync(repo);
const commit = await sh(
  "git init -q -b main && echo '# app' > README.md && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'Add the onboarding screen' && git rev-parse HEAD",
  repo,
);
const flutterDir = join(work, "flutter");
mkdirSync(flutterDir);
writeFileSync(
  join(flutterDir, "flutter"),
  `#!/bin/bash
printf '\\033[1mFlutter stand-in\\033[0m: flutter %s\\n' "$*"
if [ "$1" = build ]; then
  for i in $(seq 1 40); do printf '\\033[32m✓\\033[0m compiled lib/src/module_%02d.dart\\n' $i; done
  echo "Running Gradle task 'assembleRelease'..."
  printf '\\033[33mwarning\\033[0m: unused import in lib/main.dart\\n' >&2
  mkdir -p build/app/outputs/flutter-apk && head -c 200000 /dev/urandom > build/app/outputs/flutter-apk/app-release.apk
  printf '\\033[32m✓ Built build/app/outputs/flutter-apk/app-release.apk (19.5MB)\\033[0m\\n'
fi
`,
);
chmodSync(join(flutterDir, "flutter"), 0o755);

const daemon = await startDaemon({ env: { ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });
const host = await startHostApiStandIn();
host.github.repos.push(
  { id: 77, full_name: "acme/shop-app", default_branch: "main", private: true, clone_url: repo },
  { id: 78, full_name: "acme/design-system", default_branch: "main", private: false },
);
const tb = await launchBrowser();
let runner: ReturnType<typeof Bun.spawn> | undefined;
try {
  const desktop = await tb.browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: "light" });
  const page = await desktop.newPage();
  const shot = async (name: string) => {
    await page.waitForTimeout(400);
    await page.screenshot({ path: join(OUT, `${name}.png`) });
  };
  await page.goto(daemon.url);
  await page.getByRole("heading", { name: "Set up Roost" }).waitFor();
  await shot("setup-wizard");
  await page.getByLabel("Your e-mail address").fill("ada@example.com");
  await page.getByRole("button", { name: "Create owner and sign in" }).click();
  await page.getByRole("heading", { name: "Dashboard" }).waitFor();

  const api = async (method: string, path: string, data?: unknown) =>
    (await desktop.request.fetch(daemon.url + path, { method, headers: { "x-roost-csrf": "1" }, data })).json();
  await api("POST", "/v1/integrations", {
    provider: "github",
    name: "GitHub",
    api_url: host.url,
    app_id: host.github.appId,
    installation_id: host.github.installationId,
    private_key: host.github.privateKeyPem,
    webhook_secret: SECRET,
  });
  const repos = (await api("GET", "/v1/integration-repositories")).repositories;
  const project = (await api("POST", "/v1/projects", { repository_id: repos.find((r: { full_name: string }) => r.full_name === "acme/shop-app").id })).project;
  await api("POST", `/v1/projects/${project.id}/pipelines`, {
    name: "android-release",
    trigger_config: { branches: ["main", "release/*"], events: ["push", "tag"] },
    execution_config: { commands: { pre_build: ["flutter pub get", "flutter test --reporter compact"] } },
  });
  const failing = (
    await api("POST", `/v1/projects/${project.id}/pipelines`, {
      name: "integration-tests",
      trigger_config: { branches: ["**"], events: ["push", "pull_request"] },
      execution_config: {
        commands: { build: ["echo 'Running integration tests'", "printf '\\033[31m✕ checkout flow: expected 3 items, found 2\\033[0m\\n'", "exit 1"] },
      },
    })
  ).pipeline;
  const created = await api("POST", "/v1/runners", { name: "linux-builder-1", labels: ["linux", "android"] });
  await api("POST", "/v1/runners", { name: "mac-mini-2", labels: ["macos", "xcode-16"] });
  runner = Bun.spawn([BUN, ROOST, "runner", "--unsafe-allow-same-user"], {
    cwd: ROOT,
    env: {
      PATH: `${flutterDir}:${process.env.PATH}`,
      HOME: work,
      ROOST_URL: daemon.url,
      ROOST_RUNNER_ID: created.runner.id,
      ROOST_RUNNER_TOKEN: created.token,
      ROOST_RUNNER_WORKDIR: join(work, "runner-work"),
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  // A signed push, as GitHub sends it.
  const payload = {
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: commit,
    created: false,
    deleted: false,
    forced: false,
    commits: [{ id: commit, message: "Add the onboarding screen", author: { name: "Ada", email: "ada@example.com" } }],
    head_commit: { id: commit, message: "Add the onboarding screen", author: { name: "Ada", email: "ada@example.com" } },
    repository: { id: 77, full_name: "acme/shop-app", name: "shop-app", owner: { login: "acme" }, default_branch: "main", private: true },
    pusher: { name: "ada" },
    sender: { login: "ada" },
  };
  const body = JSON.stringify(payload);
  await fetch(`${daemon.url}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(SECRET, body),
    },
    body,
  });
  const waitAll = async () => {
    for (let i = 0; i < 120; i++) {
      const builds = (await api("GET", `/v1/projects/${project.id}/builds`)).builds as Array<{ status: string }>;
      if (builds.length > 0 && builds.every((b) => ["succeeded", "failed", "canceled"].includes(b.status))) return builds;
      await Bun.sleep(250);
    }
    throw new Error("builds did not finish");
  };
  await waitAll();
  await api("POST", `/v1/projects/${project.id}/builds`, { pipeline_id: failing.id, commit_sha: commit, branch: "main" });
  await waitAll();
  // One build waiting, for the dashboard.
  await api("POST", `/v1/projects/${project.id}/pipelines`, { name: "ios-release", execution_config: { platforms: ["ios"] } }).then((r) =>
    api("POST", `/v1/projects/${project.id}/builds`, { pipeline_id: r.pipeline.id, commit_sha: commit }),
  );
  await api("POST", "/v1/users", { email: "grace@example.com", role: "maintainer" });
  await api("POST", "/v1/users", { email: "linus@example.com", role: "developer" });

  await page.goto(daemon.url + "/");
  await page.getByRole("heading", { name: "Running and queued (1)" }).waitFor();
  await shot("dashboard");
  await page.goto(`${daemon.url}/projects`);
  await page.getByText("acme/shop-app").first().waitFor();
  await shot("projects");
  await page.goto(`${daemon.url}/projects/${project.id}`);
  await page.locator("table tbody tr").first().waitFor();
  await shot("project-builds");
  const first = ((await api("GET", `/v1/projects/${project.id}/builds?limit=50`)).builds as Array<{ id: string; build_number: number }>).find(
    (b) => b.build_number === 1,
  )!;
  await page.goto(`${daemon.url}/projects/${project.id}/builds/${first.id}`);
  await page.locator('.log[data-complete="true"]').waitFor();
  await page.getByRole("heading", { name: "Log" }).scrollIntoViewIfNeeded();
  await shot("build-page");
  await page.goto(`${daemon.url}/projects/${project.id}?tab=deliveries`);
  await page.locator(".deliveries li").first().waitFor();
  await shot("deliveries");
  await page.goto(`${daemon.url}/runners`);
  await page.locator("tbody tr").first().waitFor();
  await shot("runners");
  await page.goto(`${daemon.url}/admin`);
  await page.locator("tbody tr").first().waitFor();
  await shot("administration");
  await page.goto(`${daemon.url}/admin?tab=sign-in`);
  await page.getByRole("form", { name: "How people reach Roost" }).waitFor();
  await shot("administration-sign-in");

  // Project settings: variables and secrets, schedules, notifications, badges and retention.
  await api("PUT", `/v1/projects/${project.id}/variables/ANDROID_KEYSTORE`, {
    value: Buffer.from("keystore bytes").toString("base64"),
    secret: true,
    file: true,
    protected_refs: ["main", "release/*"],
  });
  await api("PUT", `/v1/projects/${project.id}/variables/ANDROID_KEYSTORE_PASSWORD`, {
    value: "correct horse",
    secret: true,
    protected_refs: ["main", "release/*"],
  });
  await api("PUT", `/v1/projects/${project.id}/variables/FLAVOR`, { value: "production" });
  await api("PUT", `/v1/projects/${project.id}/variables/FLAVOR`, { value: "staging" });
  await api("POST", `/v1/pipelines/${failing.id}/schedules`, { cron: "0 3 * * 1-5", timezone: "Europe/Berlin", branch: "main", build_when_unchanged: false });
  await api("POST", `/v1/projects/${project.id}/notifications`, {
    name: "#mobile-builds",
    channel: "slack",
    events: ["failed", "fixed"],
    slack: { url: "https://hooks.slack.example/services/T000/B000/XXXX" },
  });
  await api("POST", `/v1/projects/${project.id}/notifications`, {
    name: "Release managers",
    channel: "email",
    events: ["failed"],
    branches: ["release/*"],
    email: { host: "smtp.example.com", from: "roost@example.com", to: ["releases@example.com"], username: "roost", password: "app-password" },
  });
  await api("PUT", `/v1/projects/${project.id}/badges`, { public: true });
  await api("PUT", `/v1/projects/${project.id}/retention`, { log_retention_days: 30, keep_builds: 200 });
  await page.goto(`${daemon.url}/projects/${project.id}?tab=variables`);
  await page.locator(".variable-changes li").first().waitFor();
  await shot("project-variables");
  await page.goto(`${daemon.url}/projects/${project.id}?tab=schedules`);
  await page.locator(".schedule").first().waitFor();
  await shot("project-schedules");
  await page.goto(`${daemon.url}/projects/${project.id}?tab=notifications`);
  await page.locator(".notification").first().waitFor();
  await shot("project-notifications");
  await page.goto(`${daemon.url}/projects/${project.id}?tab=badges`);
  await page.locator(".retention-effective").waitFor();
  await shot("project-badges-retention");

  // A second project whose pipelines live in its roost.yaml, for the Pipelines tab: one pipeline
  // the file defines, one configured in Roost that the file leaves out, one not created yet.
  const kitRepo = join(work, "design-system");
  mkdirSync(kitRepo);
  writeFileSync(
    join(kitRepo, "roost.yaml"),
    'version: 1\npipelines:\n  widgetbook:\n    triggers:\n      events: [push, pull_request]\n      branches: [main]\n    platforms: [android]\n    commands:\n      pre_build: [flutter pub get]\n      build: [flutter test, flutter build web --target lib/widgetbook.dart]\n  golden-tests:\n    triggers:\n      events: [pull_request]\n      branches: ["**"]\n    commands:\n      build: [flutter test --tags golden]\n',
  );
  await sh("git init -q -b main && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'Pipelines in roost.yaml'", kitRepo);
  host.repositories.set("acme/design-system", kitRepo);
  const kit = (await api("POST", "/v1/projects", { repository_id: repos.find((r: { full_name: string }) => r.full_name === "acme/design-system").id })).project;
  await api("POST", `/v1/projects/${kit.id}/pipelines`, { name: "widgetbook" });
  await api("POST", `/v1/projects/${kit.id}/pipelines`, { name: "storybook-legacy" });
  await page.goto(`${daemon.url}/projects/${kit.id}?tab=pipelines`);
  await page.locator(".project-card .origin").first().waitFor();
  await page.locator(".project-card", { hasText: "widgetbook" }).getByText("What roost.yaml says").click();
  await shot("project-pipelines");

  const dark = await tb.browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: "dark", storageState: await desktop.storageState() });
  const darkPage = await dark.newPage();
  await darkPage.goto(`${daemon.url}/projects/${project.id}/builds/${first.id}`);
  await darkPage.locator('.log[data-complete="true"]').waitFor();
  await darkPage.waitForTimeout(400);
  await darkPage.screenshot({ path: join(OUT, "build-page-dark.png") });

  const phone = await tb.browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    storageState: await desktop.storageState(),
  });
  const phonePage = await phone.newPage();
  await phonePage.goto(daemon.url + "/");
  await phonePage.getByRole("heading", { name: "Dashboard" }).waitFor();
  await phonePage.waitForTimeout(400);
  await phonePage.screenshot({ path: join(OUT, "dashboard-phone.png") });
  await phonePage.goto(`${daemon.url}/projects/${project.id}/builds/${first.id}`);
  await phonePage.locator('.log[data-complete="true"]').waitFor();
  await phonePage.waitForTimeout(400);
  await phonePage.screenshot({ path: join(OUT, "build-page-phone.png"), fullPage: true });

  const signedOut = await tb.browser.newContext({ viewport: { width: 1280, height: 860 } });
  const signIn = await signedOut.newPage();
  await signIn.goto(daemon.url + "/");
  await signIn.getByRole("heading", { name: "Sign in to Roost" }).waitFor();
  await signIn.screenshot({ path: join(OUT, "sign-in.png") });
  console.log(`screenshots written to ${OUT}`);
} finally {
  runner?.kill("SIGKILL");
  await tb.close();
  await daemon.stop();
  await host.stop();
  rmSync(work, { recursive: true, force: true });
}
