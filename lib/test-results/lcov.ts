// lcov tracefiles (`flutter test --coverage` writes coverage/lcov.info), read as line coverage
// per file. The format is geninfo's (https://github.com/linux-test-project/lcov, man geninfo(1)
// "TRACEFILE FORMAT"): per source file a record `SF:<path>` … `DA:<line>,<hits>` … `LF:<found>`
// `LH:<hit>` `end_of_record`; function and branch lines are not used. LF/LH are trusted only when
// no DA line was given (some writers omit one or the other). A file cut short keeps its records.
import { clip, lineSplitter, workspacePath, type CoverageFile, type ParsedReport, type ReportLimits, type ReportReader } from "./report.ts";

/**
 * Paths in Flutter's lcov.info are relative to the package (`lib/main.dart`); a report at
 * `packages/app/coverage/lcov.info` therefore describes `packages/app/lib/main.dart`.
 */
export function packageRoot(reportPath: string): string {
  const parts = reportPath.split("/");
  const at = parts.lastIndexOf("coverage");
  return at > 0 ? `${parts.slice(0, at).join("/")}/` : "";
}

export function lcovReader(limits: ReportLimits, workspace: string | null, reportPath: string): ReportReader {
  const files = new Map<string, CoverageFile>();
  const prefix = packageRoot(reportPath);
  let path: string | null = null;
  let lines = new Map<number, number>();
  let found: number | null = null;
  let hit: number | null = null;
  let records = 0;
  let dropped = 0;
  let malformed = 0;

  function close(): void {
    if (path === null) return;
    const entry: CoverageFile =
      lines.size > 0
        ? { path, lines_found: lines.size, lines_hit: [...lines.values()].filter((n) => n > 0).length }
        : { path, lines_found: found ?? 0, lines_hit: Math.min(hit ?? 0, found ?? 0) };
    const before = files.get(path);
    if (before) {
      // The same file in two records (two test runs merged): the larger count of each wins.
      before.lines_found = Math.max(before.lines_found, entry.lines_found);
      before.lines_hit = Math.max(before.lines_hit, entry.lines_hit);
    } else if (files.size >= limits.maxCoverageFiles) dropped++;
    else files.set(path, entry);
    records++;
    path = null;
    lines = new Map();
    found = hit = null;
  }

  function line(raw: string): void {
    const text = raw.trim();
    if (!text) return;
    const colon = text.indexOf(":");
    const key = colon === -1 ? text : text.slice(0, colon);
    const value = colon === -1 ? "" : text.slice(colon + 1);
    switch (key) {
      case "SF": {
        close();
        const p = workspacePath(value, workspace);
        path = p === null ? null : clip(p.startsWith("/") ? p : prefix + p, limits.maxNameChars);
        return;
      }
      case "DA": {
        const [lineNo, count] = value.split(",");
        const n = Number(lineNo);
        const c = Number(count);
        if (path === null || !Number.isInteger(n) || n <= 0 || !Number.isFinite(c)) return void malformed++;
        // Bounded by the file's line count in practice; a hostile file stops at 1e6 lines a record.
        if (lines.size < 1_000_000) lines.set(n, Math.max(lines.get(n) ?? 0, c));
        return;
      }
      case "LF":
        found = Number.isInteger(Number(value)) ? Number(value) : null;
        return;
      case "LH":
        hit = Number.isInteger(Number(value)) ? Number(value) : null;
        return;
      case "end_of_record":
        close();
        return;
    }
  }

  const feed = lineSplitter(limits.maxTokenChars, line, () => void malformed++);
  return {
    push: feed.push,
    end(): ParsedReport {
      feed.flush();
      const cut = path !== null;
      close();
      const problems: string[] = [];
      if (records === 0) problems.push("No lcov record (SF: … end_of_record) was found: is this an lcov.info file?");
      else if (cut) problems.push("The file ends inside a record: it was cut short; what it held was read.");
      if (malformed) problems.push(`${malformed} line${malformed === 1 ? " was" : "s were"} malformed and skipped.`);
      if (dropped)
        problems.push(`${dropped} file${dropped === 1 ? "" : "s"} beyond the first ${limits.maxCoverageFiles} ${dropped === 1 ? "was" : "were"} not kept.`);
      return { format: "lcov", cases: [], coverage: [...files.values()], annotations: [], problems };
    },
  };
}
