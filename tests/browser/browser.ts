// The browser of the web app's tests: Debian's chromium (installed by scripts/ensure-test-tools),
// driven by playwright-core. The flags keep it off the network (this machine has none: without
// them Chromium waits on connections to Google's services); playwright-core gives every launch a
// fresh temporary profile (its own --user-data-dir) and removes it on close.
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/** A page that fails the test on any script error or CSP violation it reports. */
export async function newPage(context: BrowserContext, errors: string[]): Promise<Page> {
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource: the server responded with a status of (400|401|403|404|409)/.test(message.text()))
      errors.push(`console: ${message.text()}`);
  });
  return page;
}

/** Runs axe-core (injected from node_modules) in the page; the serious and critical violations. */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string; help: string; nodes: string[] }>> {
  const source = await Bun.file(join(import.meta.dir, "../../node_modules/axe-core/axe.min.js")).text();
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected <script> would be refused, as it should).
  await page.evaluate(source);
  const result = (await page.evaluate(async () => {
    // @ts-expect-error axe is the global the injected script defines
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v: { id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => n.target.join(" ")),
    }));
  })) as Array<{ id: string; impact: string; help: string; nodes: string[] }>;
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}
