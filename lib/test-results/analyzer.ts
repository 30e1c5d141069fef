// The Dart analyzer's machine format (`dart analyze --format=machine`, also inside a Flutter
// project), one issue a line, eight fields separated by "|":
//   SEVERITY|TYPE|CODE|FILE|LINE|COLUMN|LENGTH|MESSAGE
//   INFO|LINT|prefer_const_constructors|/work/app/lib/main.dart|12|7|20|Use 'const' with …
// FILE and MESSAGE escape "\" and "|" with a backslash and write newlines as \n
// (dart-lang/sdk pkg/dartdev/lib/src/commands/analyze.dart, emitMachineFormat). Each issue
// becomes an annotation: ERROR → error, WARNING → warning, INFO → notice.
import {
  clip,
  lineNumber,
  lineSplitter,
  withoutWorkspace,
  workspacePath,
  type Annotation,
  type ParsedReport,
  type ReportLimits,
  type ReportReader,
} from "./report.ts";

const SEVERITY: Record<string, Annotation["severity"]> = { ERROR: "error", WARNING: "warning", INFO: "notice" };

/** Splits on unescaped "|" and undoes the escapes. */
export function machineFields(line: string): string[] {
  const fields: string[] = [];
  let field = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "\\" && i + 1 < line.length) {
      const next = line[++i]!;
      field += next === "n" ? "\n" : next === "r" ? "\r" : next;
    } else if (c === "|") {
      fields.push(field);
      field = "";
    } else field += c;
  }
  fields.push(field);
  return fields;
}

export function analyzerReader(limits: ReportLimits, workspace: string | null): ReportReader {
  const annotations: Annotation[] = [];
  let other = 0;
  let dropped = 0;

  function line(raw: string): void {
    const text = raw.trimEnd();
    if (!text) return;
    const f = machineFields(text);
    const severity = SEVERITY[f[0] ?? ""];
    const lineNo = lineNumber(f[4]);
    // Anything else ("Analyzing app...", a summary line) is not an issue.
    if (f.length !== 8 || !severity || lineNo === null) return void other++;
    if (annotations.length >= limits.maxAnnotations) return void dropped++;
    annotations.push({
      severity,
      file: clip(workspacePath(f[3], workspace), limits.maxNameChars) ?? "",
      line: lineNo,
      column: lineNumber(f[5]),
      code: clip(f[2]!.toLowerCase(), 200) ?? "",
      message: clip(withoutWorkspace(f[7]!, workspace), limits.maxMessageChars) ?? "",
    });
  }

  const feed = lineSplitter(limits.maxTokenChars, line);
  return {
    push: feed.push,
    end(): ParsedReport {
      feed.flush();
      const problems: string[] = [];
      if (annotations.length === 0 && other > 0)
        problems.push(
          "No analyzer issue in the machine format (SEVERITY|TYPE|CODE|FILE|LINE|COLUMN|LENGTH|MESSAGE) was found: was it written by `dart analyze --format=machine`?",
        );
      if (dropped)
        problems.push(`${dropped} issue${dropped === 1 ? "" : "s"} beyond the first ${limits.maxAnnotations} ${dropped === 1 ? "was" : "were"} not kept.`);
      return { format: "analyzer", cases: [], coverage: [], annotations, problems };
    },
  };
}
