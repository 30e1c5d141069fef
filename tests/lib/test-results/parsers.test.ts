// Reading test reports (lib/test-results/): the Dart JSON reporter, JUnit XML, lcov and the Dart
// analyzer's machine format, from the recorded fixtures in tests/fixtures/test-results (SOURCES.md
// there says where each shape comes from). Every fixture is also fed in 7-byte chunks, so a token
// split across chunks reads the same as a whole file.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readReport, detectFormat } from "../../../lib/test-results/read.ts";
import { DEFAULT_LIMITS, type ParsedReport, type ReportLimits } from "../../../lib/test-results/report.ts";
import { machineFields } from "../../../lib/test-results/analyzer.ts";

const FIXTURES = join(import.meta.dir, "../../fixtures/test-results");
const LINUX = "/home/ci/roost/jobs/5d1c0e7a";

function streamOf(bytes: Uint8Array, chunk: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, (at += chunk)));
    },
  });
}

async function read(
  name: string,
  o: { workspace?: string; chunk?: number; maxBytes?: number; limits?: ReportLimits; bytes?: Uint8Array; path?: string } = {},
): Promise<ParsedReport> {
  const bytes = o.bytes ?? readFileSync(join(FIXTURES, name));
  const result = await readReport(streamOf(bytes, o.chunk ?? 65536), {
    path: o.path ?? name,
    workspace: o.workspace ?? LINUX,
    maxBytes: o.maxBytes ?? 1 << 24,
    limits: o.limits,
  });
  expect(result.report).not.toBeNull();
  return result.report!;
}

const summary = (r: ParsedReport) => r.cases.map((c) => `${c.status} ${c.suite} :: ${c.name}`);

describe("the Dart JSON reporter (flutter test --machine)", () => {
  test("a finished run: passed, failed, errored, skipped; hidden loading tests only when they fail", async () => {
    const r = await read("flutter-machine.jsonl");
    expect(r.format).toBe("dart_json");
    expect(r.problems).toEqual([]);
    expect(summary(r)).toEqual([
      "error test/broken_test.dart :: loading test/broken_test.dart",
      "passed test/counter_test.dart :: Counter value should start at 0",
      "passed test/counter_test.dart :: Counter value should be incremented",
      "failed test/counter_test.dart :: Counter value should be decremented",
      "skipped test/counter_test.dart :: Counter value should reset",
      "passed test/widget_test.dart :: Counter increments smoke test",
      "error test/widget_test.dart :: Counter shows the title",
      "passed test/widget_test.dart :: Counter survives a rebuild",
    ]);
  });

  test("a failure carries its message, stack, duration and the test's own file and line", async () => {
    const r = await read("flutter-machine.jsonl");
    const failed = r.cases.find((c) => c.name === "Counter value should be decremented")!;
    expect(failed).toEqual({
      suite: "test/counter_test.dart",
      name: "Counter value should be decremented",
      status: "failed",
      duration_ms: 10,
      message: "Expected: <-1>\n  Actual: <1>\n",
      stack: "package:matcher                expect\ntest/counter_test.dart 22:7     main.<fn>.<fn>\n",
      output: null,
      file: "test/counter_test.dart",
      line: 18,
    });
  });

  test("a widget test points at the app's test file (root_url), not flutter_test, and keeps what it printed", async () => {
    const r = await read("flutter-machine.jsonl");
    const widget = r.cases.find((c) => c.name === "Counter shows the title")!;
    expect(widget.file).toBe("test/widget_test.dart");
    expect(widget.line).toBe(31);
    expect(widget.message).toBe("Test failed. See exception logs above.\nThe test description was: Counter shows the title");
    expect(widget.output).toContain("Expected: exactly one matching candidate");
    // The runner's workspace is gone from paths printed inside the output too.
    expect(widget.output).toContain("(test/widget_test.dart:35:5)");
    expect(widget.output).not.toContain(LINUX);
  });

  test("a skipped test says why; a print lands in the test's output", async () => {
    const r = await read("flutter-machine.jsonl");
    expect(r.cases.find((c) => c.status === "skipped")!.message).toBe("Skip: reset() is not written yet");
    expect(r.cases.find((c) => c.name === "Counter value should be incremented")!.output).toBe("counter is now 1\n");
  });

  test("a run cut short yields what it had; the unfinished test is an error that says so", async () => {
    const r = await read("flutter-machine-cut.jsonl");
    expect(r.cases).toHaveLength(8);
    const last = r.cases.at(-1)!;
    expect(last.name).toBe("Counter survives a rebuild");
    expect(last.status).toBe("error");
    expect(last.message).toBe("The test run ended before this test finished (it started but reported no result).");
    expect(r.problems).toEqual([
      "The report ends before the test run's done event: the run was cut short. 1 test that had started is reported as errors.",
      "1 line was not a JSON event and was skipped.",
    ]);
  });

  test("an error after a test passed fails it (the protocol allows errors after testDone)", async () => {
    const lines = [
      { type: "start", protocolVersion: "0.1.1", time: 0 },
      { type: "suite", suite: { id: 0, platform: "vm", path: "test/a_test.dart" }, time: 0 },
      { type: "testStart", test: { id: 1, name: "late", suiteID: 0, groupIDs: [], line: 3, column: 1, url: "file:///w/test/a_test.dart" }, time: 1 },
      { type: "testDone", testID: 1, result: "success", hidden: false, skipped: false, time: 2 },
      { type: "error", testID: 1, error: "Bad state: Future already completed", stackTrace: "test/a_test.dart 5:3  main", isFailure: false, time: 3 },
      { type: "done", success: false, time: 4 },
    ];
    const r = await read("x.json", { bytes: new TextEncoder().encode(lines.map((l) => JSON.stringify(l)).join("\n")), workspace: "/w" });
    expect(r.cases.map((c) => [c.status, c.message])).toEqual([["error", "Bad state: Future already completed"]]);
  });

  test("names, messages, stacks and outputs are bounded; tests past the case limit are counted, not kept", async () => {
    const limits = { ...DEFAULT_LIMITS, maxCases: 4, maxMessageChars: 10, maxOutputChars: 5 };
    const r = await read("flutter-machine.jsonl", { limits });
    expect(r.cases).toHaveLength(4);
    expect(r.cases.find((c) => c.name === "Counter value should be incremented")!.output).toBe("count\n… (12 more characters not kept)");
    expect(r.cases.find((c) => c.status === "failed")!.message).toBe("Expected: \n… (19 more characters not kept)");
    expect(r.problems).toContain("4 tests beyond the first 4 were not kept.");
  });

  test("every chunk size reads the same", async () => {
    const whole = await read("flutter-machine.jsonl");
    for (const chunk of [1, 7, 100]) expect(await read("flutter-machine.jsonl", { chunk })).toEqual(whole);
  });
});

describe("JUnit XML", () => {
  test("Gradle: a failure with its message, stack and the class's file and line from the stack", async () => {
    const r = await read("gradle-TEST-com.example.counter.CounterRepositoryTest.xml", { chunk: 7 });
    expect(r.problems).toEqual([]);
    expect(summary(r)).toEqual([
      "passed com.example.counter.CounterRepositoryTest :: loadsTheSavedCount",
      "passed com.example.counter.CounterRepositoryTest :: savesTheCount",
      "failed com.example.counter.CounterRepositoryTest :: migratesVersion1Preferences",
      "skipped com.example.counter.CounterRepositoryTest :: clearsOnSignOut",
    ]);
    const failed = r.cases[2]!;
    expect(failed.message).toBe("org.opentest4j.AssertionFailedError: expected: <7> but was: <0>");
    expect(failed.stack).toContain("at app//com.example.counter.CounterRepositoryTest.migratesVersion1Preferences(CounterRepositoryTest.kt:41)");
    expect(failed.duration_ms).toBe(48);
    // A Java frame names a file but not where it is in the checkout: no link is invented.
    expect([failed.file, failed.line]).toEqual([null, null]);
  });

  test("Android instrumentation: a failure without a message attribute is told by its first line", async () => {
    const r = await read("android-instrumentation-TEST-Pixel_7_API_34.xml", { chunk: 7 });
    expect(r.cases.map((c) => [c.status, c.name, c.message])).toEqual([
      ["passed", "launchesTheFlutterView", null],
      ["failed", "keepsStateOnRotation", "java.lang.AssertionError: expected:<1> but was:<0>"],
      ["passed", "opensTheSettingsScreen", null],
    ]);
  });

  test("xcpretty: the failure's text is the Swift file and line, relative to the checkout", async () => {
    const r = await read("ios-xcpretty-junit.xml", { workspace: "/Users/ci/roost/jobs/5d1c0e7a", chunk: 7 });
    const failed = r.cases.find((c) => c.status === "failed")!;
    expect(failed).toMatchObject({
      suite: "RunnerTests.RunnerTests",
      name: "testMethodChannelAnswersPing",
      message: 'XCTAssertEqual failed: ("pong") is not equal to ("nil")',
      file: "ios/RunnerTests/RunnerTests.swift",
      line: 27,
    });
  });

  test("a file cut inside a test case keeps the cases before it and says so", async () => {
    const text = readFileSync(join(FIXTURES, "gradle-TEST-com.example.counter.CounterRepositoryTest.xml"), "utf8");
    const r = await read("cut.xml", { bytes: new TextEncoder().encode(text.slice(0, text.indexOf('<testcase name="migratesVersion1Preferences"') + 60)) });
    expect(summary(r)).toEqual([
      "passed com.example.counter.CounterRepositoryTest :: loadsTheSavedCount",
      "passed com.example.counter.CounterRepositoryTest :: savesTheCount",
    ]);
    expect(r.problems).toEqual(["The XML ends inside <testsuite>: the file was cut short; the test cases before that point were read."]);
  });

  test("entities are never expanded beyond the predefined five: a DOCTYPE's declarations are skipped", async () => {
    const xml = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;"><!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuite name="s"><testcase classname="c" name="&lol2; &xxe; &amp; &#x41;&#66;"><failure message="&lt;boom&gt;">&xxe;</failure></testcase></testsuite>`;
    const r = await read("evil.xml", { bytes: new TextEncoder().encode(xml), chunk: 5 });
    expect(r.cases.map((c) => [c.name, c.message, c.stack])).toEqual([["&lol2; &xxe; & AB", "<boom>", "&xxe;"]]);
  });

  test("a tag longer than the token limit ends the read with a clear problem", async () => {
    const xml = `<testsuite><testcase name="ok" classname="c"/><testcase name="${"x".repeat(5000)}`;
    const r = await read("long.xml", { bytes: new TextEncoder().encode(xml), limits: { ...DEFAULT_LIMITS, maxTokenChars: 1000 }, chunk: 512 });
    expect(summary(r)).toEqual(["passed c :: ok"]);
    expect(r.problems).toEqual([
      "The XML is malformed (a tag, comment or declaration longer than 1000 characters); the test cases before that point were read.",
    ]);
  });

  test("nested suites (trainer) and a failure stack far over the limit stay bounded", async () => {
    const xml = `<testsuites><testsuite name="Tests"><testsuite name="Inner"><testcase name="t" classname="Inner" time="1,500.5"><failure message="m">${"at frame\n".repeat(10000)}</failure></testcase></testsuite></testsuite></testsuites>`;
    const r = await read("big.xml", { bytes: new TextEncoder().encode(xml), chunk: 4096 });
    expect(r.cases).toHaveLength(1);
    expect(r.cases[0]!.duration_ms).toBe(1500500);
    expect(r.cases[0]!.stack!.length).toBeLessThan(DEFAULT_LIMITS.maxStackChars + 100);
    expect(r.cases[0]!.stack).toEndWith("(74000 more characters not kept)");
  });
});

describe("lcov", () => {
  test("line coverage per file from DA lines", async () => {
    const r = await read("lcov.info", { chunk: 7 });
    expect(r.coverage).toEqual([
      { path: "lib/main.dart", lines_found: 11, lines_hit: 9 },
      { path: "lib/counter.dart", lines_found: 6, lines_hit: 4 },
      { path: "lib/settings/settings_page.dart", lines_found: 4, lines_hit: 0 },
    ]);
    expect(r.problems).toEqual([]);
  });

  test("a package's coverage/lcov.info names files from the checkout's root", async () => {
    const r = await read("lcov.info", { path: "packages/core/coverage/lcov.info" });
    expect(r.coverage.map((f) => f.path)).toEqual([
      "packages/core/lib/main.dart",
      "packages/core/lib/counter.dart",
      "packages/core/lib/settings/settings_page.dart",
    ]);
  });

  test("a file cut inside a record keeps what it had", async () => {
    const text = readFileSync(join(FIXTURES, "lcov.info"), "utf8");
    const r = await read("lcov.info", { bytes: new TextEncoder().encode(text.slice(0, text.indexOf("DA:9,0"))) });
    expect(r.coverage).toEqual([
      { path: "lib/main.dart", lines_found: 11, lines_hit: 9 },
      { path: "lib/counter.dart", lines_found: 4, lines_hit: 4 },
    ]);
    expect(r.problems).toEqual(["The file ends inside a record: it was cut short; what it held was read."]);
  });
});

describe("the Dart analyzer's machine format", () => {
  test("each issue is an annotation on a checkout path, with escapes undone", async () => {
    const r = await read("dart-analyze-machine.txt", { chunk: 7 });
    expect(r.annotations).toEqual([
      {
        severity: "notice",
        file: "lib/main.dart",
        line: 12,
        column: 14,
        code: "prefer_const_constructors",
        message: "Use 'const' with the constructor to improve performance.",
      },
      {
        severity: "warning",
        file: "lib/counter.dart",
        line: 2,
        column: 8,
        code: "unused_import",
        message: "Unused import: 'package:flutter/foundation.dart'.",
      },
      {
        severity: "error",
        file: "test/broken_test.dart",
        line: 4,
        column: 3,
        code: "undefined_identifier",
        message: "Undefined name 'pumpApp'.\nTry correcting the name to one that is defined, or defining the name.",
      },
      { severity: "notice", file: "lib/a|b.dart", line: 3, column: 5, code: "avoid_print", message: "Don't invoke 'print' in production code." },
    ]);
  });

  test("machineFields splits on unescaped pipes only", () => {
    expect(machineFields("a|b\\|c|d\\\\|e")).toEqual(["a", "b|c", "d\\", "e"]);
  });
});

describe("any report", () => {
  test("its format is told by its first bytes, else by its name", () => {
    expect(detectFormat("x", "  <?xml")).toBe("junit_xml");
    expect(detectFormat("x", '\uFEFF{"type":"start"}')).toBe("dart_json");
    expect(detectFormat("x", "TN:\nSF:lib/a.dart")).toBe("lcov");
    expect(detectFormat("x", "ERROR|SYNTACTIC_ERROR|X|f|1|1|1|m")).toBe("analyzer");
    expect(detectFormat("build/analyze.txt", "")).toBe("analyzer");
    expect(detectFormat("coverage/lcov.info", "")).toBe("lcov");
    expect(detectFormat("notes.txt", "hello")).toBeNull();
    expect(detectFormat("a.png", "\x89PNG")).toBeNull();
  });

  test("an unknown format is not read", async () => {
    const result = await readReport(streamOf(new Uint8Array(4096).fill(0x89), 512), { path: "screenshot.png", workspace: null, maxBytes: 1 << 20 });
    expect(result.report).toBeNull();
  });

  test("past maxBytes the rest is not read, and what came before is kept", async () => {
    const bytes = readFileSync(join(FIXTURES, "flutter-machine.jsonl"));
    const result = await readReport(streamOf(bytes, 100), { path: "r.json", workspace: LINUX, maxBytes: 4000 });
    expect(result.cut).toBe(true);
    expect(result.bytes).toBe(4000);
    expect(result.report!.problems[0]).toBe("The report is larger than 4000 bytes: only its first 4000 bytes were read.");
    expect(result.report!.cases.length).toBeGreaterThan(0);
  });
});
