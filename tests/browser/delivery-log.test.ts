// The webhook delivery log in the web app, in a real Chromium (docs/web-app.md "Webhook
// deliveries"): a project's log and the admin's show the newest page and "Load older" appends the
// next, following the API's cursor with the filter kept, until the log ends; a delivery that
// arrives meanwhile goes on top of the pages read. The admin's log filtered by result reads at most
// DELIVERY_SCAN_WINDOW deliveries a page and says how far back it searched. Screenshots go to
// ROOST_SCREENSHOTS_DIR when set (docs/screenshots/delivery-log*.png).
//
// The daemon runs in this process behind Bun.serve (tests/helpers/app.ts); the history is written
// by SQL (thousands of deliveries), the new delivery is a signed push through the webhook.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";

import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { signedAcmePush, startCiFixture, type CiFixture } from "../helpers/ci.ts";
import type { TestApp } from "../helpers/app.ts";
import { DELIVERY_SCAN_WINDOW } from "../../lib/webhooks/deliveries.ts";
import { axeViolations, newPage, closeScreenshotsWorld, screenshotsDir, serveToBrowser, signedInContext, until, type ServedApp } from "./browser.ts";

const SHOTS = screenshotsDir("delivery-log");

let ci: CiFixture;
let t: TestApp;
let served: ServedApp;
let base = "";
let context: BrowserContext;
let page: Page;
const errors: string[] = [];
const a11y: Record<string, unknown[]> = {};

/** The newest of the history's deliveries was received this long before the fixture's clock (seconds). */
const AGE = 600;

/**
 * `count` deliveries in one statement, one a second going back from `newest` seconds before the
 * clock: number i (0 newest) has result `result(i)` and the reason `<label> <i>`; of the project
 * when `projectId` is given, otherwise of a repository no project builds.
 */
async function history(count: number, newest: number, label: string, result: string | ((i: string) => string), projectId: string | null): Promise<void> {
  const resultSql = typeof result === "string" ? `'${result}'` : result("i");
  await t.db.execute(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO webhook_deliveries (id, host, delivery_id, event, action, verified, result, reason, repository_full_name, project_id, decisions, received_at)
     SELECT ? || '-' || i, 'github', ? || '-' || i, 'push', '', 1, ${resultSql}, ? || ' ' || i, 'acme/app', ?, '[]', ? - i FROM n`,
    [count - 1, label, label, label, projectId, t.clock.now() - newest],
  );
}

/** The reasons the log shows, top to bottom. */
const reasons = () => page.locator("ul.deliveries > li > p").allTextContents();

beforeAll(async () => {
  ci = await startCiFixture({}, { clockStart: Math.floor(Date.now() / 1000) - 3600 });
  ({ t } = ci);
  served = await serveToBrowser(t);
  ({ base } = served);
  context = await signedInContext(served.tb.browser, base, "owner@example.test", { t, colorScheme: "light" });
  page = await newPage(context, errors);
}, 60_000);
afterAll(() => closeScreenshotsWorld(SHOTS, served, ci));

describe("a project's delivery log", () => {
  test("Load older appends the next page until the log ends; a filter pages the same way", async () => {
    // 120 deliveries: even ones built, odd ones ignored; pages of 50.
    await history(120, AGE, "project", (i) => `CASE WHEN ${i} % 2 = 0 THEN 'built' ELSE 'ignored' END`, ci.projectId);
    const all = Array.from({ length: 120 }, (_, i) => `project ${i}`);
    await page.goto(`${base}/projects/${ci.projectId}?tab=deliveries`);
    const older = page.getByRole("button", { name: "Load older" });
    await until("the newest page", async () => (await reasons()).length === 50);
    expect(await reasons()).toEqual(all.slice(0, 50));
    await older.click();
    await until("two pages", async () => (await reasons()).length === 100);
    expect(await reasons()).toEqual(all.slice(0, 100));
    await older.click();
    await page.getByText("No older deliveries.").waitFor();
    expect(await reasons()).toEqual(all);
    expect(await older.count()).toBe(0);
    await checkA11y("project log, every page");

    // Built only: the filter starts again from the newest page and Load older keeps it.
    await page.getByLabel("Result").selectOption("built");
    const built = all.filter((_, i) => i % 2 === 0);
    await until("the newest built page", async () => JSON.stringify(await reasons()) === JSON.stringify(built.slice(0, 50)));
    await older.click();
    await page.getByText("No older deliveries.").waitFor();
    expect(await reasons()).toEqual(built);
    expect(await page.locator("ul.deliveries > li > div > .badge-built").count()).toBe(built.length);
  });

  test("a delivery that arrives while older pages are shown goes on top of them", async () => {
    await page.getByLabel("Result").selectOption("");
    await until("the newest page", async () => (await reasons()).length === 50);
    await page.getByRole("button", { name: "Load older" }).click();
    await until("two pages", async () => (await reasons()).length === 100);
    const push = await signedAcmePush("feature/late", "f".repeat(40), "late-delivery");
    const res = await t.call("POST", "/v1/webhooks/github", { raw: push.body, contentType: "application/json", headers: push.headers, peer: "140.82.112.1" });
    expect(res.status).toBe(200);
    // The log reads its newest page again every 10 s.
    await until("the new delivery on top", async () => (await reasons()).length === 101, 20_000);
    const shown = await reasons();
    expect(shown[0]).toContain("no pipeline");
    expect(shown.slice(1)).toEqual(Array.from({ length: 100 }, (_, i) => `project ${i}`));
    // The end of what is shown: the second page's last deliveries and the control for the next.
    await page.getByRole("button", { name: "Load older" }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, "delivery-log-project.png") });
  }, 30_000);
});

describe("the admin's delivery log", () => {
  test("filtered by result, it says how far back a page searched, and Load older searches further", async () => {
    // Under the project's history: a full window of ignored deliveries of a repository no project
    // builds, and below it three rejected ones.
    const windowNewest = AGE + 120;
    await history(DELIVERY_SCAN_WINDOW, windowNewest, "unrouted", "ignored", null);
    await history(3, windowNewest + DELIVERY_SCAN_WINDOW, "forged", "rejected", null);
    await page.goto(`${base}/admin?tab=deliveries`);
    await until("the newest page", async () => (await reasons()).length === 100);
    await page.getByLabel("Result").selectOption("rejected");
    // The newest 5,000 are the late push, the project's 120 and 4,880 of the window: none rejected.
    const searched = page.locator(".searched-back");
    await searched.waitFor();
    expect(await searched.textContent()).toMatch(/^No rejected deliveries found yet: searched back to .+; load older to search further\.$/);
    const stoppedAt = t.clock.now() - windowNewest - (DELIVERY_SCAN_WINDOW - 1 - 121);
    expect(await searched.locator("time").getAttribute("datetime")).toBe(new Date(stoppedAt * 1000).toISOString());
    expect(await page.locator("ul.deliveries").count()).toBe(0);
    await checkA11y("admin log, searched back");
    await page.screenshot({ path: join(SHOTS, "delivery-log-admin-searched.png") });

    // The next stretch reaches the end of the log: the three rejected, and nothing further to load.
    await page.getByRole("button", { name: "Load older" }).click();
    await page.getByText("No older deliveries.").waitFor();
    expect(await reasons()).toEqual(["forged 0", "forged 1", "forged 2"]);
    expect(await searched.count()).toBe(0);
    expect(await page.getByRole("button", { name: "Load older" }).count()).toBe(0);
    await page.screenshot({ path: join(SHOTS, "delivery-log-admin-found.png") });
  }, 30_000);

  test("no serious or critical accessibility violation, no script error, no CSP violation", () => {
    expect(a11y).toEqual(Object.fromEntries(Object.keys(a11y).map((k) => [k, []])));
    expect(Object.keys(a11y).length).toBe(2);
    expect(errors).toEqual([]);
  });
});

async function checkA11y(name: string): Promise<void> {
  a11y[name] = await axeViolations(page);
}
