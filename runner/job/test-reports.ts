// Sending a build's test reports to Roost after its steps, whether they passed or failed
// (docs/test-results.md): every file the pipeline's test_reports patterns match in the checkout,
// at most TEST_REPORTS_PER_BUILD of them, each cut at TEST_REPORT_LIMIT bytes. The daemon reads
// them (one parser, lib/test-results/) and answers what it kept; each answer becomes a line in the
// build's log, so a malformed or huge report is told where people look. Nothing here fails the
// build: its result is its steps'.
import { realpathSync } from "node:fs";
import { join } from "node:path";
import type { JobRun } from "./job-run.ts";
import { TEST_REPORT_LIMIT, TEST_REPORTS_PER_BUILD } from "../../lib/runners/protocol-wire.ts";

const STEP = "test_reports";
/** The name a printed report is stored under: not a file in the checkout, said so by its folder. */
const PRINTED_DIR = "(printed by flutter test --machine)";

export async function uploadTestReports(run: JobRun): Promise<void> {
  if (run.canceled) return;
  const paths = await reportPaths(run);
  if (paths.found > paths.list.length) run.system(STEP, `[roost] ${paths.found} files match test_reports; only the first ${TEST_REPORTS_PER_BUILD} are sent`);
  const reports: { path: string; size: number; whole: number; body: () => ReadableStream<Uint8Array> }[] = paths.list.map((path) => {
    const file = Bun.file(join(run.workspace, path));
    const size = Math.min(file.size, TEST_REPORT_LIMIT);
    return { path, size, whole: file.size, body: () => file.slice(0, size).stream() };
  });
  // What commands printed (flutter test --machine), named by their step, after the files.
  const printed = run.printedReports.slice(0, Math.max(0, TEST_REPORTS_PER_BUILD - reports.length));
  printed.forEach(({ step, bytes, cut }, i) => {
    const path = `${PRINTED_DIR}/${step}-${i + 1}.json`;
    if (cut) run.system(STEP, `[roost] ${step} printed more test events than a report holds (${TEST_REPORT_LIMIT} bytes): ${path} has the first ones`);
    reports.push({ path, size: bytes.length, whole: bytes.length, body: () => new Blob([bytes]).stream() });
  });
  for (const { path, size, whole, body } of reports) {
    const answer = await run.api.uploadTestReport(run.id, path, run.workspace, size, whole, body).catch((error: Error) => error);
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
