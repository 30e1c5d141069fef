// JUnit XML, as Gradle (`build/test-results/<task>/TEST-<class>.xml`), the Android instrumentation
// runner (`build/outputs/androidTest-results/connected/…`), Xcode result converters (xcpretty,
// xcbeautify, trainer, xcresultparser) and most other test runners write it. There is no single
// standard; the common shape is read (https://github.com/testmoapp/junitxml documents it):
//   <testsuites>? <testsuite name file?> <testcase name classname time file? line?>
//     <failure message type>stack</failure> | <error …>…</error> | <skipped message?/>
//     <system-out>…</system-out> <system-err>…</system-err>
// Suites may nest. A file cut short yields the test cases it closed.
import { xmlTokenizer } from "./xml-tokens.ts";
import {
  BoundedText,
  clip,
  lineNumber,
  withoutWorkspace,
  workspacePath,
  type ParsedReport,
  type ReportLimits,
  type ReportReader,
  type TestCase,
} from "./report.ts";

interface OpenCase {
  name: string;
  suite: string;
  file: string | null;
  line: number | null;
  duration_ms: number | null;
  status: TestCase["status"];
  message: string | null;
  details: BoundedText;
  output: BoundedText;
}

/** "0.012" seconds (Gradle, Surefire); some writers use a thousands separator. */
function seconds(value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = Number(value.replace(/,/g, ""));
  return Number.isFinite(n) && n >= 0 ? Math.round(n * 1000) : null;
}

/** The first "path/File.ext:line" in a failure's text (xcpretty writes only that). */
const SOURCE_LOCATION = /((?:[\w.@+-]+\/)+[\w.@+-]+\.(?:swift|mm?|kt|java|dart|ts|js|py|rb|go|cs)):(\d+)/;

export function junitXmlReader(limits: ReportLimits, workspace: string | null): ReportReader {
  const cases: TestCase[] = [];
  const suites: { name: string; file: string | null }[] = [];
  let current: OpenCase | null = null;
  /** The child of a test case whose text is being read: its result or its output. */
  let capture: "details" | "output" | null = null;
  let sawElement = false;
  let dropped = 0;
  let cutCase = false;

  function finish(c: OpenCase): void {
    if (cases.length >= limits.maxCases) return void dropped++;
    const details = c.details.empty ? null : withoutWorkspace(c.details.toString(), workspace);
    let { file, line } = c;
    if (file === null && details && c.status !== "passed") {
      const found = SOURCE_LOCATION.exec(details);
      if (found) {
        file = workspacePath(found[1], workspace);
        line = lineNumber(found[2]);
      }
    }
    // Without a message attribute, the first line of the text says what happened.
    const message = c.message ?? (details ? details.trim().split("\n", 1)[0]! : null);
    cases.push({
      suite: c.suite,
      name: c.name,
      status: c.status,
      duration_ms: c.duration_ms,
      message: withoutWorkspace(clip(message, limits.maxMessageChars), workspace),
      stack: c.status === "skipped" ? null : details,
      output: c.output.empty ? null : withoutWorkspace(c.output.toString(), workspace),
      file: file && file.startsWith("/") ? null : file,
      line: file ? line : null,
    });
  }

  const tokenizer = xmlTokenizer(
    {
      open(name, a) {
        sawElement = true;
        const tag = name.toLowerCase();
        if (tag === "testsuite") {
          suites.push({ name: a.name ?? "", file: workspacePath(a.file ?? a.filepath, workspace) ?? suites.at(-1)?.file ?? null });
        } else if (tag === "testcase") {
          const suite = suites.at(-1);
          const file = workspacePath(a.file ?? a.filepath, workspace) ?? suite?.file ?? null;
          current = {
            name: clip(withoutWorkspace(a.name ?? "", workspace), limits.maxNameChars) ?? "",
            suite: clip(withoutWorkspace(a.classname ?? a.class ?? suite?.name ?? "", workspace), limits.maxNameChars) ?? "",
            file,
            line: lineNumber(a.line ?? a.lineno),
            duration_ms: seconds(a.time),
            status: "passed",
            message: null,
            details: new BoundedText(limits.maxStackChars),
            output: new BoundedText(limits.maxOutputChars),
          };
        } else if (current && (tag === "failure" || tag === "error" || tag === "skipped")) {
          // The worst result wins when a case lists several (error > failure > skipped).
          const status = tag === "failure" ? "failed" : tag === "error" ? "error" : "skipped";
          const rank = { passed: 0, skipped: 1, failed: 2, error: 3 } as const;
          if (rank[status] > rank[current.status]) {
            current.status = status;
            if (a.message !== undefined) current.message = a.message;
            else if (a.type !== undefined && status !== "skipped") current.message = a.type;
          }
          capture = "details";
        } else if (current && (tag === "system-out" || tag === "system-err")) {
          capture = "output";
        }
      },
      close(name) {
        const tag = name.toLowerCase();
        if (tag === "testsuite") suites.pop();
        else if (tag === "testcase" && current) {
          finish(current);
          current = null;
          capture = null;
        } else if (tag === "failure" || tag === "error" || tag === "skipped" || tag === "system-out" || tag === "system-err") capture = null;
      },
      text(text) {
        if (!current || !capture) return;
        if (capture === "details") current.details.add(text);
        else current.output.add(text);
      },
    },
    limits.maxTokenChars,
  );

  return {
    push: (text) => tokenizer.push(text),
    end(): ParsedReport {
      const stillOpen = tokenizer.end();
      const problems: string[] = [];
      const open = current as OpenCase | null;
      if (open) {
        // Cut inside a test case: its result is known only if a result element had begun.
        if (open.status !== "passed") finish(open);
        else cutCase = true;
      }
      if (tokenizer.error) problems.push(`The XML is malformed (${tokenizer.error}); the test cases before that point were read.`);
      else if (!sawElement) problems.push("No XML element was found: is this a JUnit XML report?");
      else if (stillOpen.length)
        problems.push(
          `The XML ends inside <${stillOpen.at(-1)}>: the file was cut short; the test cases before that point were read${cutCase ? " (the last one, unfinished, was left out)" : ""}.`,
        );
      if (dropped)
        problems.push(`${dropped} test case${dropped === 1 ? "" : "s"} beyond the first ${limits.maxCases} ${dropped === 1 ? "was" : "were"} not kept.`);
      return { format: "junit_xml", cases, coverage: [], annotations: [], problems };
    },
  };
}
