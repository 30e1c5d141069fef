// The Dart test package's JSON reporter protocol (`flutter test --machine`, `dart test --reporter
// json`, `--file-reporter json:<path>`), read as a stream of newline-separated events as its
// protocol document describes them:
// https://github.com/dart-lang/test/blob/master/pkgs/test/doc/json_reporter.md
//   suite      a test file (its path)          testStart  a test's name, suite and location
//   print      what a test printed             error      an error and its stack trace, possibly
//   testDone   success | failure | error,                 after the test's testDone
//              hidden (loading, setUpAll), skipped        done      the end of the whole run
// Events of several tests interleave, and an error may arrive after its test's testDone, so cases
// are only decided at the end. A run cut short (a crash, a killed runner, a truncated file) still
// yields every test it reported; a test that started and never finished is an error saying so.
import {
  BoundedText,
  clip,
  lineNumber,
  workspacePath,
  withoutWorkspace,
  type ParsedReport,
  type ReportLimits,
  type ReportReader,
  type TestCase,
} from "./report.ts";

interface Started {
  name: string;
  suiteId: number;
  url: string | null;
  line: number | null;
  startedAt: number | null;
  output: BoundedText;
  skipMessages: BoundedText;
  errors: BoundedText;
  stacks: BoundedText;
  errorCount: number;
  lastErrorIsFailure: boolean;
  result: string | null;
  hidden: boolean;
  skipped: boolean;
  doneAt: number | null;
}

export function dartJsonReader(limits: ReportLimits, workspace: string | null): ReportReader {
  const suites = new Map<number, string | null>();
  const tests = new Map<number, Started>();
  let pending = "";
  let overlong = false;
  let events = 0;
  let malformed = 0;
  let dropped = 0;
  let sawDone = false;
  let doneSuccess: boolean | null | undefined;

  function line(text: string): void {
    const trimmed = text.trim();
    // `flutter test --machine` may print plain lines (a startup-lock wait, a download) among events.
    if (!trimmed.startsWith("{")) return;
    let event: unknown;
    try {
      event = JSON.parse(trimmed);
    } catch {
      malformed++;
      return;
    }
    if (typeof event !== "object" || event === null || Array.isArray(event)) {
      malformed++;
      return;
    }
    events++;
    handle(event as Record<string, unknown>);
  }

  function handle(e: Record<string, unknown>): void {
    const time = typeof e.time === "number" ? e.time : null;
    switch (e.type) {
      case "suite": {
        const suite = e.suite as Record<string, unknown> | undefined;
        if (suite && typeof suite.id === "number") suites.set(suite.id, typeof suite.path === "string" ? suite.path : null);
        return;
      }
      case "testStart": {
        const t = e.test as Record<string, unknown> | undefined;
        if (!t || typeof t.id !== "number" || typeof t.name !== "string" || tests.has(t.id)) return;
        // Hidden tests (one per file loaded, setUpAll) are held too until they turn out hidden.
        if (tests.size >= limits.maxCases * 2) return void dropped++;
        // Flutter's testWidgets() calls test() inside flutter_test: url is then the framework's
        // file and root_url the app's own test file, which is where a person wants to look.
        const rootUrl = typeof t.root_url === "string" ? t.root_url : null;
        tests.set(t.id, {
          name: t.name,
          suiteId: typeof t.suiteID === "number" ? t.suiteID : -1,
          url: rootUrl ?? (typeof t.url === "string" ? t.url : null),
          line: lineNumber(rootUrl ? t.root_line : t.line),
          startedAt: time,
          output: new BoundedText(limits.maxOutputChars),
          skipMessages: new BoundedText(limits.maxMessageChars),
          errors: new BoundedText(limits.maxMessageChars),
          stacks: new BoundedText(limits.maxStackChars),
          errorCount: 0,
          lastErrorIsFailure: false,
          result: null,
          hidden: false,
          skipped: false,
          doneAt: null,
        });
        return;
      }
      case "print": {
        const t = typeof e.testID === "number" ? tests.get(e.testID) : undefined;
        if (!t || typeof e.message !== "string") return;
        if (e.messageType === "skip") t.skipMessages.add(t.skipMessages.empty ? e.message : `\n${e.message}`);
        else t.output.add(`${e.message}\n`);
        return;
      }
      case "error": {
        const t = typeof e.testID === "number" ? tests.get(e.testID) : undefined;
        if (!t) return;
        const separator = t.errorCount > 0 ? "\n\n" : "";
        t.errors.add(separator + (typeof e.error === "string" ? e.error : "(no error text)"));
        if (typeof e.stackTrace === "string" && e.stackTrace.trim()) t.stacks.add(separator + e.stackTrace);
        t.errorCount++;
        t.lastErrorIsFailure = e.isFailure === true;
        return;
      }
      case "testDone": {
        const t = typeof e.testID === "number" ? tests.get(e.testID) : undefined;
        if (!t || t.result !== null) return;
        t.result = typeof e.result === "string" ? e.result : "error";
        t.hidden = e.hidden === true;
        t.skipped = e.skipped === true;
        t.doneAt = time;
        return;
      }
      case "done":
        sawDone = true;
        doneSuccess = typeof e.success === "boolean" ? e.success : null;
        return;
    }
  }

  // A run names a few files thousands of times: each is made a checkout path once.
  const paths = new Map<string, string | null>();
  const pathOf = (raw: string | null): string | null => {
    if (raw === null) return null;
    let p = paths.get(raw);
    if (p === undefined) paths.set(raw, (p = workspacePath(raw, workspace)));
    return p;
  };

  function toCase(t: Started): TestCase | null {
    const errored = t.errorCount > 0;
    // Hidden tests (loading a file, setUpAll, tearDownAll) count only when they went wrong.
    if (t.hidden && t.result === "success" && !errored) return null;
    let status: TestCase["status"];
    let message = errored ? t.errors.toString() : null;
    if (t.result === null) {
      status = "error";
      message = `${message ? `${message}\n\n` : ""}The test run ended before this test finished (it started but reported no result).`;
    } else if (t.result === "failure") status = "failed";
    else if (t.result === "error") status = "error";
    else if (errored)
      status = t.lastErrorIsFailure ? "failed" : "error"; // an error after a success
    else if (t.skipped) {
      status = "skipped";
      message = t.skipMessages.empty ? null : t.skipMessages.toString();
    } else status = "passed";
    const suitePath = suites.get(t.suiteId) ?? null;
    const defined = t.url && !t.url.startsWith("package:") && !t.url.startsWith("dart:") ? t.url : null;
    return {
      suite: clip(withoutWorkspace(pathOf(suitePath) ?? "", workspace), limits.maxNameChars) ?? "",
      name: clip(withoutWorkspace(t.name, workspace), limits.maxNameChars) ?? "",
      status,
      duration_ms: t.startedAt !== null && t.doneAt !== null && t.doneAt >= t.startedAt ? t.doneAt - t.startedAt : null,
      message: withoutWorkspace(message, workspace),
      stack: withoutWorkspace(t.stacks.empty ? null : t.stacks.toString(), workspace),
      output: withoutWorkspace(t.output.empty ? null : t.output.toString(), workspace),
      file: pathOf(defined ?? suitePath),
      line: defined ? t.line : null,
    };
  }

  return {
    push(text: string): void {
      pending += text;
      let start = 0;
      for (let nl = pending.indexOf("\n", start); nl !== -1; nl = pending.indexOf("\n", start)) {
        if (overlong) overlong = false;
        else line(pending.slice(start, nl));
        start = nl + 1;
      }
      pending = pending.slice(start);
      if (pending.length > limits.maxTokenChars) {
        // One line longer than any event could be: skip it up to its end.
        overlong = true;
        malformed++;
        pending = "";
      }
    },
    end(): ParsedReport {
      if (!overlong && pending.trim()) line(pending);
      pending = "";
      const problems: string[] = [];
      const cases: TestCase[] = [];
      let unfinished = 0;
      for (const t of tests.values()) {
        const c = toCase(t);
        if (!c) continue;
        if (cases.length >= limits.maxCases) {
          dropped++;
          continue;
        }
        if (t.result === null) unfinished++;
        cases.push(c);
      }
      if (events === 0) problems.push("No JSON reporter event was found: is this the output of `flutter test --machine` or `--file-reporter json:<path>`?");
      else if (!sawDone)
        problems.push(
          `The report ends before the test run's done event: the run was cut short.${unfinished ? ` ${unfinished} test${unfinished === 1 ? " that had started is" : "s that had started are"} reported as errors.` : ""}`,
        );
      else if (doneSuccess === null) problems.push("The test runner was closed before all tests completed.");
      if (malformed) problems.push(`${malformed} line${malformed === 1 ? " was" : "s were"} not a JSON event and ${malformed === 1 ? "was" : "were"} skipped.`);
      if (dropped) problems.push(`${dropped} test${dropped === 1 ? "" : "s"} beyond the first ${limits.maxCases} ${dropped === 1 ? "was" : "were"} not kept.`);
      return { format: "dart_json", cases, coverage: [], annotations: [], problems };
    },
  };
}
