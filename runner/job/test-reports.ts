// Sending a build's test reports to Roost after its steps, whether they passed or failed
// (docs/test-results.md): every file the pipeline's test_reports patterns match in the checkout,
// at most TEST_REPORTS_PER_BUILD of them, each cut at TEST_REPORT_LIMIT bytes. The daemon reads
// them (one parser, lib/test-results/) and answers what it kept; each answer becomes a line in the
// build's log, so a malformed or huge report is told where people look. Nothing here fails the
// build: its result is its steps'.
import { realpathSync } from "node:fs";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";
import { TEST_REPORT_LIMIT, TEST_REPORTS_PER_BUILD } from "../../lib/runner-protocol/wire.ts";

const STEP = "test_reports";

export async function uploadTestReports(run: JobRun): Promise<void> {
  if (run.canceled) return;
  const paths = await reportPaths(run);
  if (paths.found > paths.list.length) run.system(STEP, `[roost] ${paths.found} files match test_reports; only the first ${TEST_REPORTS_PER_BUILD} are sent`);
  for (const path of paths.list) {
    const file = Bun.file(join(run.workspace, path));
    const whole = file.size;
    const size = Math.min(whole, TEST_REPORT_LIMIT);
    const answer = await run.api.uploadTestReport(run.id, path, run.workspace, size, whole, () => file.slice(0, size).stream()).catch((error: Error) => error);
    if (answer instanceof Error) return run.system(STEP, `[roost] test reports not sent: ${answer.message}`);
    if (!answer.ok) {
      if (answer.code !== "test_report_exists")
        run.system(STEP, `[roost] test report ${path} was refused by Roost: ${answer.status} ${answer.code}: ${answer.message}`);
      continue;
    }
    const r = answer.body.report;
    const what = r.format === "lcov" ? "coverage" : r.format === "analyzer" ? "analyzer issues" : `${r.cases} test result${r.cases === 1 ? "" : "s"}`;
    if (r.status === "rejected") run.system(STEP, `[roost] test report ${path} was not read: ${r.problems.join(" ")}`);
    else run.system(STEP, `[roost] test report ${path} (${r.format}): ${what} read${r.status === "partial" ? ` in part: ${r.problems.join(" ")}` : ""}`);
  }
}

async function reportPaths(run: JobRun): Promise<{ list: string[]; found: number }> {
  const seen = new Set<string>();
  for (const pattern of run.config.test_reports) {
    try {
      for await (const path of new Bun.Glob(pattern).scan({ cwd: run.workspace, onlyFiles: true, followSymlinks: false })) seen.add(path);
    } catch {
      // A checkout that failed leaves no workspace to scan: nothing to send.
    }
  }
  // Only files inside the checkout: a symbolic link the build made could point at the runner's own files.
  const root = safeRealpath(run.workspace);
  const inside = (p: string) => root !== null && safeRealpath(join(run.workspace, p))?.startsWith(`${root}/`) === true;
  for (const p of [...seen].filter((p) => !inside(p)))
    run.system(STEP, `[roost] skipped ${p}: it is outside the workspace (a link or a path that leaves it); only files inside the workspace are sent`);
  const list = [...seen].filter(inside).sort();
  return { list: list.slice(0, TEST_REPORTS_PER_BUILD), found: list.length };
}

function safeRealpath(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
