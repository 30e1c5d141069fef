// The web app end to end in a real Chromium against a real daemon and a real `roost runner`:
// first-run wizard (Local Only) → a project from the catalogue (host-API stand-in) → a pipeline
// (with the API's validation message shown next to its field) → a runner registered in the app →
// a signed push delivery → the build page shows the live log, every line once → artifact download
// → cancel and re-run; a developer sees no admin pages and a forged admin request is refused;
// a hostile branch name and a log line full of escape sequences are shown as text; axe-core finds
// no serious or critical violation on the main pages. docs/web-app.md describes what is tested.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { sign } from "@octokit/webhooks-methods";
import type { BrowserContext, Page } from "playwright-core";
import { REPO_ROOT, startDaemon, type Daemon } from "../helpers/daemon.ts";
import { startHostApiStandIn, type HostApiStandIn } from "../support/host-api-stand-in.ts";
import { axeViolations, launchBrowser, newPage, until, type TestBrowser } from "./browser.ts";

const work = mkdtempSync(join(tmpdir(), "roost-browser-e2e-"));
const repo = join(work, "app");
const flutterDir = join(work, "flutter-stand-in");
const WEBHOOK_SECRET = "0123456789abcdef-browser-secret";
const XSS_BRANCH = "<img src=x onerror=alert(1)>";
const OWNER = "owner@example.test";
/** Build #1 holds in its commands until this file exists, so the page sees it running however slowly it gets there. */
const RELEASE_BUILD = join(work, "release-build-1");

let daemon: Daemon;
let host: HostApiStandIn;
let tb: TestBrowser;
let context: BrowserContext;
let page: Page;
let runnerProc: Subprocess | undefined;
let commit = "";
let projectId = "";
const errors: string[] = [];
const dialogs: string[] = [];
const a11y: Record<string, unknown[]> = {};

async function sh(cmd: string, cwd = work): Promise<string> {
  const p = Bun.spawn(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${cmd}: ${err}`);
  return out.trim();
}

/** A push as GitHub sends it (recorded fixture, retargeted), signed with the integration's secret. */
async function push(branch: string): Promise<{ status: number; body: any }> {
  const payload = JSON.parse(readFileSync(join(REPO_ROOT, "tests/fixtures/webhooks/github/push__branch_updated.json"), "utf8"));
  payload.ref = `refs/heads/${branch}`;
  payload.after = commit;
  payload.head_commit.id = commit;
  payload.commits = [{ ...payload.head_commit, id: commit }];
  payload.repository.id = 77;
  payload.repository.full_name = "acme/app";
  payload.repository.name = "app";
  payload.repository.owner.login = "acme";
  const body = JSON.stringify(payload);
  const res = await fetch(`${daemon.url}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(WEBHOOK_SECRET, body),
    },
    body,
  });
  return { status: res.status, body: await res.json() };
}

/** The API as the signed-in browser calls it: the session cookie, plus the CSRF header on writes. */
async function api(method: string, path: string, data?: unknown, ctx: BrowserContext = context): Promise<{ status: number; body: any }> {
  const res = await ctx.request.fetch(daemon.url + path, { method, headers: { "x-roost-csrf": "1" }, data });
  return { status: res.status(), body: await res.json().catch(() => null) };
}

async function checkA11y(name: string): Promise<void> {
  a11y[name] = await axeViolations(page);
}

beforeAll(async () => {
  mkdirSync(repo, { recursive: true });
  await sh(
    "git init -q -b main && echo '# app' > README.md && mkdir lib && echo 'void main() {}' > lib/main.dart && git add . && git -c user.email=ci@example.test -c user.name=CI commit -q -m 'first commit'",
    repo,
  );
  commit = await sh("git rev-parse HEAD", repo);
  mkdirSync(flutterDir);
  writeFileSync(
    join(flutterDir, "flutter"),
    `#!/bin/bash
echo "Flutter stand-in (tests): flutter $*"
if [ "$1" = build ]; then
  mkdir -p build/app/outputs/flutter-apk
  printf 'fake apk for %s' "$ROOST_COMMIT_SHA" > build/app/outputs/flutter-apk/app-release.apk
  echo "Built build/app/outputs/flutter-apk/app-release.apk"
fi
`,
  );
  chmodSync(join(flutterDir, "flutter"), 0o755);
  daemon = await startDaemon({ env: { ROOST_RUNNER_LEASE_SECONDS: "4", ROOST_RUNNER_HEARTBEAT_SECONDS: "1" } });
  host = await startHostApiStandIn();
  host.github.repos.push({ id: 77, full_name: "acme/app", default_branch: "main", private: true, clone_url: repo });
  host.heads.set("acme/app@main", commit);
  tb = await launchBrowser();
  context = await tb.browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await newPage(context, errors);
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    // confirm() of the app's own buttons is accepted; anything else (an alert) is recorded as a failure.
    void (d.type() === "confirm" ? d.accept() : d.dismiss());
  });
}, 60_000);

afterAll(async () => {
  // The runner runs under npm in a process group of its own (setsid): the whole group goes.
  try {
    if (runnerProc) process.kill(-runnerProc.pid, "SIGKILL");
  } catch {
    // already gone
  }
  await tb?.close();
  await daemon?.stop();
  await host?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("the web app in Chromium", () => {
  test("first run, Local Only: the wizard creates the owner, who lands on the dashboard", async () => {
    await page.goto(daemon.url + "/");
    await page.getByRole("heading", { name: "Set up Roost" }).waitFor();
    await checkA11y("setup wizard");
    // An error of the API is shown next to its field.
    await page.getByLabel("Your e-mail address").fill("not-an-email");
    await page.getByLabel("Your e-mail address").evaluate((el) => el.removeAttribute("type"));
    await page.getByRole("button", { name: "Create owner and sign in" }).click();
    await expect(page.locator("#f-email-error").textContent()).resolves.toBe("must be a valid e-mail address");
    await page.getByLabel("Your e-mail address").fill(OWNER);
    await page.getByRole("button", { name: "Create owner and sign in" }).click();
    await page.getByRole("heading", { name: "Dashboard" }).waitFor();
    expect(await page.locator("header .who").textContent()).toContain(OWNER);
    // The session is a cookie page scripts cannot read.
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === "roost_session")).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(await page.evaluate("document.cookie")).toBe("");
    await checkA11y("dashboard (empty)");
  }, 60_000);

  test("a project from the catalogue, with search", async () => {
    // The GitHub App is connected in the app: its PEM pasted into a textarea keeps its newlines.
    await page.getByRole("link", { name: "Administration" }).click();
    await page.getByRole("link", { name: "Integrations" }).click();
    const connect = page.getByRole("form", { name: "Connect a source host" });
    await connect.getByLabel("Host").selectOption({ label: "GitHub (App)" });
    await connect.getByLabel("Name").fill("GitHub");
    await connect.getByLabel("API URL (default https://api.github.com)").fill(host.url);
    await connect.getByLabel("App id").fill(String(host.github.appId));
    await connect.getByLabel("Installation id").fill(String(host.github.installationId));
    const pem = connect.getByLabel("Private key (PEM)");
    await pem.fill(host.github.privateKeyPem);
    expect(await pem.inputValue()).toBe(host.github.privateKeyPem);
    expect(await pem.evaluate((el) => el.tagName)).toBe("TEXTAREA");
    await connect.getByLabel("Webhook secret").fill(WEBHOOK_SECRET);
    await connect.getByRole("button", { name: "Connect" }).click();
    const card = page.locator(".project-card", { hasText: "GitHub" });
    await card.waitFor();
    // The catalogue synced on connecting, and Sync now says what it stored.
    await expect(card.getByRole("status").textContent()).resolves.toMatch(/^Synced [1-9]\d* repositor(y|ies)\.$/);
    const [synced] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/sync")), card.getByRole("button", { name: "Sync now" }).click()]);
    expect(synced.status()).toBe(200);
    await expect(card.getByRole("status").textContent()).resolves.toMatch(/^Synced [1-9]\d* repositor(y|ies)\.$/);
    await checkA11y("administration: integrations");
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByRole("link", { name: "New project" }).click();
    await page.getByLabel("Search repositories").fill("acme/ap");
    await page.getByRole("button", { name: "Create project for acme/app" }).click();
    await page.getByRole("heading", { name: "acme/app" }).waitFor();
    projectId = decodeURIComponent(/\/projects\/([^/?]+)/.exec(page.url())![1]!);
    await checkA11y("new project / project page");
  }, 30_000);

  test("a pipeline: the API's validation message is shown next to the field, then it is created", async () => {
    await page.getByRole("button", { name: "New pipeline" }).click();
    const form = page.getByRole("form", { name: "New pipeline" });
    await form.getByLabel("Name").fill("android");
    await form.getByLabel("Flutter version").fill("banana");
    await form
      .getByLabel("Commands before the build (one a line)")
      .fill(
        [
          "echo preparing",
          `until [ -e '${RELEASE_BUILD}' ]; do sleep 0.1; done`,
          "printf '\\033[31mred text\\033[0m <img src=x onerror=alert(3)> \\033]0;evil-title\\007end\\n'",
        ].join("\n"),
      );
    await form.getByLabel("Build commands (one a line; empty: flutter build)").fill("flutter build apk");
    await form.getByRole("button", { name: "Create pipeline" }).click();
    expect(await form.locator("#f-flutter_version-error").textContent()).toContain("must be stable, beta, main, fvm");
    await form.getByLabel("Flutter version").fill("stable");
    await form.getByRole("button", { name: "Create pipeline" }).click();
    await page.getByText("push on main").waitFor();
  }, 30_000);

  test("a runner registered in the app: its token is shown once with the commands, which run as shown; it comes online", async () => {
    await page.getByRole("link", { name: "Runners" }).click();
    await page.getByLabel("Name").fill("linux-e2e");
    await page.getByRole("button", { name: "Register runner" }).click();
    const binary = await page.locator('code.command[data-from="binary"]').textContent();
    const checkout = (await page.locator('code.command[data-from="checkout"]').textContent()) ?? "";
    const match = /^ROOST_URL=(\S+) ROOST_RUNNER_ID=(\S+) ROOST_RUNNER_TOKEN=(roost_rt_\S+) roost runner$/.exec(binary ?? "");
    expect(match?.[1]).toBe(daemon.url);
    expect(checkout).toBe(`ROOST_URL=${match![1]} ROOST_RUNNER_ID=${match![2]} ROOST_RUNNER_TOKEN=${match![3]} npm run roost -- runner`);
    // Which user: its own, not root nor the daemon's (which the runner refuses on the daemon's host).
    expect(await page.locator(".secret-once").textContent()).toContain(
      "as an OS user of its own: not root, and on Roost's own host not the user the daemon runs as",
    );
    expect(await page.getByRole("button", { name: "Copy" }).count()).toBe(1);
    await checkA11y("runners");
    // The checkout's command, pasted into a shell in this checkout as it is shown (the test runs
    // as the daemon's own user, hence the flag). Its own process group, so the test can stop npm's children too.
    runnerProc = Bun.spawn(["setsid", "bash", "-c", `${checkout} --unsafe-allow-same-user`], {
      cwd: REPO_ROOT,
      env: { PATH: `${flutterDir}:${process.env.PATH}`, HOME: work, ROOST_RUNNER_WORKDIR: join(work, "runner-work"), ROOST_RUNNER_GRACE_SECONDS: "1" },
      stdout: "ignore",
      stderr: "ignore",
    });
    await page.locator("tbody .badge-online").waitFor({ timeout: 20_000 });
  }, 40_000);

  test("a signed push builds; the build page follows the live log, every line once; the artifact downloads", async () => {
    const delivered = await push("main");
    expect(delivered.status).toBe(200);
    await page.getByRole("link", { name: "Dashboard" }).click();
    const link = page.locator("table a", { hasText: "#1" }).first();
    await link.waitFor({ timeout: 10_000 });
    await link.click();
    await page.getByRole("heading", { name: "Build #1" }).waitFor();
    // Live: the status goes running while the log streams, then succeeded.
    await page.locator(".facts .badge-running").waitFor({ timeout: 20_000 });
    await page.locator(".log .log-line .text", { hasText: /^preparing$/ }).waitFor({ timeout: 20_000 });
    expect(await page.locator(".log").getAttribute("data-complete")).toBe("false");
    // The build goes on only now (it used to sleep 2 s, and a page slower than that never saw it running).
    writeFileSync(RELEASE_BUILD, "");
    await page.locator(".facts .badge-succeeded").waitFor({ timeout: 30_000 });
    await page.locator('.log[data-complete="true"]').waitFor({ timeout: 10_000 });
    await checkA11y("build page");

    // Every line of the API's log once, in order: the viewport is tall enough to render them all.
    const build = (await api("GET", `/v1/projects/${projectId}/builds?limit=5`)).body.builds.find((b: { build_number: number }) => b.build_number === 1);
    const apiLines = (await api("GET", `/v1/builds/${build.id}/logs`)).body as Array<{ seq: number; text: string }>;
    await page.setViewportSize({ width: 1280, height: 4000 });
    await page.locator(".log").evaluate((el) => ((el as unknown as { style: { height: string } }).style.height = "3000px"));
    // The log renders the lines the taller box shows once it has laid out again: awaited, not 300 ms.
    const rendered = () => page.locator(".log .log-line .ln").allTextContents();
    await until("every line rendered", async () => (await rendered()).length >= apiLines.length);
    expect((await rendered()).map(Number)).toEqual(apiLines.map((l) => l.seq));
    expect(apiLines.length).toBeGreaterThan(8);
    await page.setViewportSize({ width: 1280, height: 900 });

    // The escape sequences are colours and nothing else; the HTML in the line is text.
    const red = page.locator(".log .ansi-red-fg", { hasText: "red text" });
    expect(await red.count()).toBe(1);
    const line = page.locator(".log .log-line .text", { hasText: /^red text / });
    expect(await line.textContent()).toBe("red text <img src=x onerror=alert(3)> end");
    expect(await page.locator(".log img").count()).toBe(0);
    expect(await page.title()).toBe("Build #1 · Roost");

    // A link to a line survives a reload.
    const target = apiLines[3]!.seq;
    await page.goto(`${page.url().split("#")[0]}#L${target}`);
    await page.reload();
    await page.locator(`.log .log-line.target#L${target}`).waitFor();
    // On a short window the log box reaches below the fold: a link to its last line scrolls the
    // window too, so the line is in sight (not only inside the box).
    const lastSeq = apiLines[apiLines.length - 1]!.seq;
    await page.setViewportSize({ width: 1280, height: 500 });
    await page.goto(`${page.url().split("#")[0]}#L${lastSeq}`);
    await page.reload();
    const last = page.locator(`.log .log-line.target#L${lastSeq}`);
    await last.waitFor();
    await until("the linked line in sight", async () => {
      const box = await last.boundingBox();
      return box !== null && box.y >= 0 && box.y + box.height <= 501;
    });
    await page.setViewportSize({ width: 1280, height: 900 });

    // The artifact: size and SHA-256 shown, the download is the file.
    const expected = `fake apk for ${commit}`;
    const sha = new Bun.CryptoHasher("sha256").update(expected).digest("hex");
    await page.getByText(sha).waitFor();
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "build/app/outputs/flutter-apk/app-release.apk" }).click(),
    ]);
    expect(readFileSync((await download.path())!, "utf8")).toBe(expected);
  }, 90_000);

  test("cancel a running build, then re-run it", async () => {
    // A second pipeline for any branch, slow enough to cancel.
    const slow = await api("POST", `/v1/projects/${projectId}/pipelines`, {
      name: "slow",
      trigger_config: { branches: ["**"], events: ["push"] },
      execution_config: { commands: { pre_build: ["echo slow pipeline", "sleep 20"] } },
    });
    expect(slow.status).toBe(201);
    await page.goto(`${daemon.url}/projects/${projectId}`);
    await page.getByText("Start a build").click();
    await page.getByLabel("Pipeline").first().selectOption({ label: "slow" });
    await page.getByLabel("Commit (full id; empty: the branch's head)").fill(commit);
    await page.getByRole("button", { name: "Start build" }).click();
    await page.getByRole("heading", { name: "Build #2" }).waitFor();
    await page.locator(".log .log-line .text", { hasText: /^slow pipeline$/ }).waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: "Cancel build" }).click();
    await page.locator(".facts .badge-canceled").waitFor({ timeout: 10_000 });
    await page.getByRole("button", { name: "Re-run" }).click();
    await page.getByRole("heading", { name: "Build #3" }).waitFor();
    expect(await page.locator(".facts").textContent()).toContain("rerun");
    await page.getByRole("button", { name: "Cancel build" }).click();
    await page.locator(".facts .badge-canceled").waitFor({ timeout: 10_000 });
  }, 60_000);

  test("the dashboard shows a new build and its cancel without reload, pushed by GET /v1/events; polls when the push fails", async () => {
    const slowId = (await api("GET", `/v1/projects/${projectId}/pipelines`)).body.pipelines.find((p: { name: string }) => p.name === "slow").id;
    // The dashboard loads its overview, opens the stream, and loads the overview again on the
    // stream's `ready` (nothing is replayed); wait for both loads to finish.
    const inflight = new Set<unknown>();
    let overviewLoads = 0;
    const onRequest = (r: { url(): string }) => void (r.url().includes("/v1/") && !r.url().endsWith("/v1/events") && inflight.add(r));
    const onFinished = (r: { url(): string }) => {
      inflight.delete(r);
      if (r.url().includes("/v1/projects?limit=200")) overviewLoads++;
    };
    page.on("request", onRequest);
    page.on("requestfinished", onFinished);
    page.on("requestfailed", onFinished);
    const stream = page.waitForResponse((r) => r.url().endsWith("/v1/events") && r.status() === 200);
    await page.getByRole("link", { name: "Dashboard" }).click();
    await page.getByRole("heading", { name: /^Running and queued/ }).waitFor();
    await stream;
    await until("the dashboard's two overview loads", async () => overviewLoads >= 2 && inflight.size === 0);
    expect(overviewLoads).toBe(2);
    // From here the dashboard neither reloads nor polls: the build arrives by push and its row is
    // updated in place. The overview loads, counted to the end, prove it: a poll (every 5 s when
    // the push is down) loads the overview again. (A 3 s bound on the row failed on a loaded host.)
    const build = (await api("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: slowId, commit_sha: commit })).body.build;
    const row = page.locator("section[aria-labelledby=h-active] tr", { has: page.locator("a", { hasText: `#${build.build_number}` }) });
    await row.waitFor({ timeout: 10_000 });
    expect(await page.locator("#h-active").textContent()).toContain("Running and queued");
    expect((await api("POST", `/v1/builds/${build.id}/cancel`)).status).toBe(200);
    await row.waitFor({ state: "detached", timeout: 10_000 });
    page.off("request", onRequest);
    page.off("requestfinished", onFinished);
    page.off("requestfailed", onFinished);
    expect(overviewLoads).toBe(2);

    // The push refused (a proxy that cuts it): the dashboard polls every 5 seconds as before.
    const fallback = await context.newPage();
    await fallback.route("**/v1/events", (route) =>
      route.fulfill({ status: 502, contentType: "application/json", body: '{"code":"bad_gateway","message":"no"}' }),
    );
    await fallback.goto(`${daemon.url}/`);
    await fallback.getByRole("heading", { name: /^Running and queued/ }).waitFor();
    const polled = (await api("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: slowId, commit_sha: commit })).body.build;
    await fallback.locator("section[aria-labelledby=h-active] a", { hasText: `#${polled.build_number}` }).waitFor({ timeout: 15_000 });
    await api("POST", `/v1/builds/${polled.id}/cancel`);
    await fallback.close();
  }, 90_000);

  test("a branch named like HTML is shown as text, in the list and on its build page", async () => {
    const delivered = await push(XSS_BRANCH);
    expect(delivered.status).toBe(200);
    await page.goto(`${daemon.url}/projects/${projectId}`);
    const cell = page.locator("td.branch", { hasText: XSS_BRANCH });
    await cell.waitFor({ timeout: 10_000 });
    expect(await page.locator("main img").count()).toBe(0);
    await page.locator("tr", { has: cell }).getByRole("link").click();
    expect(await page.locator(".facts .branch").textContent()).toBe(XSS_BRANCH);
    await page
      .getByRole("button", { name: "Cancel build" })
      .click()
      .catch(() => {});
    await checkA11y("project builds");
    // Deliveries explain every decision.
    await page.goto(`${daemon.url}/projects/${projectId}?tab=deliveries`);
    await page.locator(".deliveries li").first().waitFor();
    expect(await page.locator(".deliveries").textContent()).toContain("android: not built");
    await checkA11y("deliveries");
    expect(dialogs.filter((d) => d.includes("1") || d.includes("3"))).toEqual([]);
  }, 40_000);

  test("the builds list pages by cursor: Older builds shows the next page, Newer builds comes back", async () => {
    // A pipeline no runner can take, so its builds stay queued: 51 of them fill more than a page of 50.
    const parked = (await api("POST", `/v1/projects/${projectId}/pipelines`, { name: "parked", execution_config: { runner_labels: ["nowhere"] } })).body
      .pipeline;
    const created = [];
    for (let i = 0; i < 51; i++)
      created.push((await api("POST", `/v1/projects/${projectId}/builds`, { pipeline_id: parked.id, commit_sha: commit })).body.build);
    await page.goto(`${daemon.url}/projects/${projectId}`);
    await page.getByRole("form", { name: "Filter builds" }).getByLabel("Pipeline").selectOption({ label: "parked" });
    const newest = created[50]!.build_number;
    const oldest = created[0]!.build_number;
    await page.getByRole("link", { name: `#${newest}`, exact: true }).waitFor();
    expect(await page.getByRole("link", { name: `#${oldest}`, exact: true }).count()).toBe(0);
    await page.getByRole("button", { name: "Older builds" }).click();
    await page.getByRole("link", { name: `#${oldest}`, exact: true }).waitFor();
    expect(await page.locator("table tbody tr").count()).toBe(1);
    expect(await page.getByRole("button", { name: "Older builds" }).count()).toBe(0);
    await page.getByRole("button", { name: "Newer builds" }).click();
    await page.getByRole("link", { name: `#${newest}`, exact: true }).waitFor();
    for (const build of created) await api("POST", `/v1/builds/${build.id}/cancel`);
  }, 40_000);

  test("administration: users are invited in the app; a developer sees no admin page and a forged admin request is refused", async () => {
    await page.getByRole("link", { name: "Administration" }).click();
    await page.getByLabel("E-mail address").fill("dev@example.test");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByRole("cell", { name: "dev@example.test", exact: true }).waitFor();
    await checkA11y("administration");
    // A project member is picked by e-mail (admins look people up in GET /v1/users).
    await page.goto(`${daemon.url}/projects/${projectId}?tab=settings`);
    const add = page.getByRole("form", { name: "Add a member" });
    await add.getByLabel("Member's e-mail address").fill("nobody@example.test");
    await add.getByRole("button", { name: "Add" }).click();
    expect(await add.locator("#f-email-error").textContent()).toBe("No active user has this e-mail address; invite them under Administration → Users first.");
    await add.getByLabel("Member's e-mail address").fill("dev@");
    await page.locator('#member-candidates option[value="dev@example.test"]').waitFor({ state: "attached" });
    await add.getByLabel("Member's e-mail address").fill("dev@example.test");
    await add.getByLabel("Role").selectOption("viewer");
    await add.getByRole("button", { name: "Add" }).click();
    await page.getByLabel("Role of dev@example.test").waitFor();
    expect(await page.getByLabel("Role of dev@example.test").inputValue()).toBe("viewer");
    await checkA11y("project settings and members");
    // What `roost login` prints on stdout is the whole curl command; the sign-in page takes it
    // pasted whole, capability and e-mail.
    const curl = (await daemon.cli(["login", "--email", "dev@example.test"])).stdout.trim();
    expect(curl).toStartWith("curl ");

    const devContext = await tb.browser.newContext({ viewport: { width: 390, height: 844 } });
    const dev = await newPage(devContext, errors);
    await dev.goto(`${daemon.url}/runners`);
    await dev.getByRole("heading", { name: "Sign in to Roost" }).waitFor();
    await dev.getByLabel("One-time capability (or the whole curl command)").fill(curl);
    await dev.getByRole("button", { name: "Sign in" }).click();
    // Back to the page asked for, which is not for a developer.
    await dev.getByRole("heading", { name: "Not for your role" }).waitFor();
    expect(await dev.locator("header nav").textContent()).not.toContain("Administration");
    expect(await dev.locator("header nav").textContent()).not.toContain("Runners");
    const forged = await api("POST", "/v1/runners", { name: "sneaky" }, devContext);
    expect(forged).toEqual({ status: 403, body: { code: "forbidden", message: "This endpoint needs the admin role or higher." } });
    const noCsrf = await devContext.request.fetch(`${daemon.url}/v1/api-tokens`, { method: "POST", data: { name: "x", role: "developer" } });
    expect(noCsrf.status()).toBe(403);
    await devContext.close();
  }, 40_000);

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(7);
    expect(errors).toEqual([]);
  });
});
