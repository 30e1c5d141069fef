// `npm run bench -- web`, the log part: how long Chromium takes to show the first and the last
// line of a finished 100,000-line build on its build page, against a baseline loaded the same
// way in the same run: a static HTML page (a bare Bun.serve) with the same 100,000 lines as plain
// text in one <pre>. The build is seeded through the runner protocol (a registered runner claims
// it, appends the lines in 1,000-line batches and finishes it), as a real build's log arrives.
// Each figure is the median of several fresh page loads, timed from the start of navigation to the
// line being inside the viewport; the longest main-thread task is kept (a frozen tab shows there).
import type { Page } from "playwright-core";
import { http, startDaemon } from "../../tests/helpers/daemon.ts";
import { launchBrowser } from "../../tests/browser/browser.ts";
import { githubProject } from "./github.ts";
import type { BenchRow } from "./row.ts";

export const LOG_LINES = 100_000;
const BATCH = 1000;
const LOADS = 5;

/** The text of line i: Gradle-like, every tenth one coloured, as a Flutter build writes. */
function lineText(i: number): string {
  const text = `I/flutter ( 4321): Running Gradle task 'assembleRelease'... line ${i + 1} of the bench log`;
  return i % 10 === 0 ? `\x1b[32m${text}\x1b[0m` : text;
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * Milliseconds from the start of navigation (the page's own clock, performance.now()) until the
 * element is inside the viewport, checked every animation frame (so a busy main thread counts as
 * not shown yet), and the longest main-thread task of that load. Evaluated through the DevTools
 * protocol as strings: the page's CSP (no eval) does not govern that, and this file is
 * type-checked without the DOM library.
 */
async function timeToLine(page: Page, url: string, selector: string): Promise<{ ms: number; longestTaskMs: number }> {
  await page.goto(url, { waitUntil: "commit" });
  const shown = page.evaluate(`new Promise((resolve) => {
    const check = () => {
      const el = document.querySelector(${JSON.stringify(selector)});
      if (el) {
        const r = el.getBoundingClientRect();
        if (r.height > 0 && r.bottom > 0 && r.top < window.innerHeight) return resolve(performance.now());
      }
      requestAnimationFrame(check);
    };
    check();
  })`);
  const timeout = Bun.sleep(60_000).then(async () => {
    throw new Error(`${url}: ${selector} not shown in 60 s; the page says: ${(await page.locator("body").innerText()).slice(0, 500)}`);
  });
  const ms = Number(await Promise.race([shown, timeout]));
  const longestTaskMs = Number(
    await page.evaluate(`new Promise((resolve) => {
      setTimeout(() => resolve(0), 200);
      new PerformanceObserver((list, observer) => {
        observer.disconnect();
        resolve(Math.max(0, ...list.getEntries().map((e) => e.duration)));
      }).observe({ type: "longtask", buffered: true });
    })`),
  );
  return { ms, longestTaskMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function webLogRows(notes: string[]): Promise<BenchRow[]> {
  const daemon = await startDaemon({ env: { ROOST_LOG_LEVEL: "warn" } });
  const tb = await launchBrowser();
  let bare: ReturnType<typeof Bun.serve> | undefined;
  try {
    // The owner, and a project from the catalogue of a GitHub App stand-in (the bench's other
    // scenarios seed theirs the same way).
    const login = await http(daemon.url, "POST", "/v1/auth/local/login", { body: { email: "bench@example.test" } });
    const session = login.body.session_token as string;
    const { startHostApiStandIn } = await import("../../tests/support/host-api-stand-in.ts");
    const host = await startHostApiStandIn();
    host.github.repos.push({ id: 1, full_name: "bench/app", default_branch: "main", private: true, clone_url: "https://example.invalid/app.git" });
    host.heads.set("bench/app@main", "c".repeat(40));
    const projectId = await githubProject(daemon, session, host, "bench-webhook-secret-0123");
    const pipelineId = (await http(daemon.url, "POST", `/v1/projects/${projectId}/pipelines`, { token: session, body: { name: "android" } })).body.pipeline
      .id as string;
    const build = (
      await http(daemon.url, "POST", `/v1/projects/${projectId}/builds`, { token: session, body: { pipeline_id: pipelineId, commit_sha: "c".repeat(40) } })
    ).body.build;
    const created = (await http(daemon.url, "POST", "/v1/runners", { token: session, body: { name: "bench" } })).body;
    const runner = { id: created.runner.id as string, token: created.token as string };
    await http(daemon.url, "POST", `/v1/runners/${runner.id}/connect`, { token: runner.token, body: { capabilities: { os: "linux", arch: "x64" } } });
    const job = (
      await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/claim`, { token: runner.token, body: { claim_id: crypto.randomUUID(), wait_seconds: 0 } })
    ).body.job as { job_id: string };
    for (let first = 0; first < LOG_LINES; first += BATCH) {
      const lines = Array.from({ length: Math.min(BATCH, LOG_LINES - first) }, (_, k) => ({
        step: first + k < 2000 ? "pre_build" : "build_android",
        text: lineText(first + k),
      }));
      const res = await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/logs`, {
        token: runner.token,
        body: { first_line: first, lines },
      });
      if (res.status >= 300) throw new Error(`web bench: log append ${res.status} ${JSON.stringify(res.body)}`);
    }
    const finished = await http(daemon.url, "POST", `/v1/runners/${runner.id}/jobs/${job.job_id}/finish`, {
      token: runner.token,
      body: { status: "succeeded", exit_code: 0, line_count: LOG_LINES },
    });
    if (finished.status !== 200) throw new Error(`web bench: finish ${finished.status} ${JSON.stringify(finished.body)}`);
    await host.stop();
    const logs = (await http(daemon.url, "GET", `/v1/builds/${build.id}/logs?limit=1`, { token: session })).body as Array<{ seq: number }>;
    const firstSeq = logs[0]!.seq;
    const lastSeq = firstSeq + LOG_LINES - 1;

    // The baseline: the same lines as one static HTML page, the first and last wrapped so they can be found.
    const body = Array.from({ length: LOG_LINES }, (_, i) => {
      const text = escapeHtml(lineText(i).replace(/\x1b\[[0-9;]*m/g, ""));
      return i === 0 ? `<span id="L${firstSeq}">${text}</span>` : i === LOG_LINES - 1 ? `<span id="L${lastSeq}">${text}</span>` : text;
    }).join("\n");
    const html = `<!doctype html><html><head><meta charset="utf-8"><title>log</title></head><body><pre>${body}</pre></body></html>`;
    bare = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }) });
    const bareUrl = `http://127.0.0.1:${bare.port}/`;

    const context = await tb.browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: "roost_session", value: session, url: daemon.url, httpOnly: true, sameSite: "Strict" }]);
    const page = `${daemon.url}/projects/${projectId}/builds/${build.id}`;
    const cases = [
      { metric: "first line of a finished 100,000-line build visible", roost: [page, `#L${firstSeq}`], bare: [bareUrl, `#L${firstSeq}`] },
      {
        metric: "last line of a finished 100,000-line build visible (opened at #L<last>)",
        roost: [`${page}#L${lastSeq}`, `#L${lastSeq}`],
        bare: [`${bareUrl}#L${lastSeq}`, `#L${lastSeq}`],
      },
    ] as const;
    const rows: BenchRow[] = [];
    for (const c of cases) {
      const ours: number[] = [];
      const theirs: number[] = [];
      let oursTask = 0;
      let theirsTask = 0;
      // One warm-up load of each (assets and the HTTP connection), then alternate.
      for (let i = -1; i < LOADS; i++) {
        for (const [target, into] of [
          [c.roost, ours],
          [c.bare, theirs],
        ] as const) {
          const tab = await context.newPage();
          const t = await timeToLine(tab, target[0], target[1]);
          await tab.close();
          if (i < 0) continue;
          into.push(t.ms);
          if (into === ours) oursTask = Math.max(oursTask, t.longestTaskMs);
          else theirsTask = Math.max(theirsTask, t.longestTaskMs);
        }
      }
      rows.push({
        scenario: "web app in Chromium",
        metric: c.metric,
        roost: median(ours),
        baseline: median(theirs),
        baselineName: "static HTML page with the same lines",
        higherIsBetter: false,
        unit: "ms",
      });
      notes.push(
        `web app, ${c.metric}: longest main-thread task ${oursTask.toFixed(0)} ms in Roost's page, ${theirsTask.toFixed(0)} ms in the static page (medians of ${LOADS} loads after one warm-up; Chromium ${tb.browser.version()}).`,
      );
    }
    await context.close();
    return rows;
  } finally {
    bare?.stop(true);
    await tb.close();
    await daemon.stop();
  }
}
