// What a test report says once read (docs/test-results.md), whatever produced it: the Dart test
// package's JSON reporter, JUnit XML, lcov coverage or the Dart analyzer's machine format. Every
// parser fills one `ReportReader` through `push(text)` and `end()`, so a report is read as it
// arrives and a report cut short still yields everything it held before the cut.

export type CaseStatus = "passed" | "failed" | "error" | "skipped";
export type ReportFormat = "dart_json" | "junit_xml" | "lcov" | "analyzer";
export type AnnotationSeverity = "error" | "warning" | "notice";

export interface TestCase {
  /** The file or class the test belongs to (Dart: the suite's path; JUnit: classname). */
  suite: string;
  name: string;
  status: CaseStatus;
  duration_ms: number | null;
  message: string | null;
  stack: string | null;
  /** What the test printed. */
  output: string | null;
  /** Where the test is defined, relative to the checkout when the report says so. */
  file: string | null;
  line: number | null;
}

export interface CoverageFile {
  path: string;
  lines_found: number;
  lines_hit: number;
}

export interface Annotation {
  severity: AnnotationSeverity;
  file: string;
  line: number;
  column: number | null;
  code: string;
  message: string;
}

export interface ParsedReport {
  format: ReportFormat;
  cases: TestCase[];
  coverage: CoverageFile[];
  annotations: Annotation[];
  /** Sentences for the build: what was cut, dropped or malformed. Empty when all was read. */
  problems: string[];
}

export interface ReportReader {
  push(text: string): void;
  end(): ParsedReport;
}

/**
 * A line-oriented report read in chunks: `push` hands each complete line to `line`, `flush` the
 * last one that had no newline. A line that grows past maxTokenChars without ending is dropped
 * as it grows (`overlong` is told), so a hostile report cannot make one huge string.
 */
export function lineSplitter(maxTokenChars: number, line: (raw: string) => void, overlong: () => void = () => {}): { push(text: string): void; flush(): void } {
  let pending = "";
  return {
    push(text) {
      pending += text;
      const nl = pending.lastIndexOf("\n");
      if (nl === -1) {
        if (pending.length > maxTokenChars) {
          overlong();
          pending = "";
        }
        return;
      }
      for (const l of pending.slice(0, nl).split("\n")) line(l);
      pending = pending.slice(nl + 1);
    },
    flush() {
      if (pending) line(pending);
      pending = "";
    },
  };
}

/** Bounds on what one report may hold; past them the rest is counted and dropped, never stored. */
export interface ReportLimits {
  maxCases: number;
  maxCoverageFiles: number;
  maxAnnotations: number;
  maxNameChars: number;
  maxMessageChars: number;
  maxStackChars: number;
  maxOutputChars: number;
  /** A single XML tag or JSON line longer than this is malformed input, not a report. */
  maxTokenChars: number;
}

export const DEFAULT_LIMITS: ReportLimits = {
  maxCases: 20_000,
  maxCoverageFiles: 20_000,
  maxAnnotations: 2_000,
  maxNameChars: 1_000,
  maxMessageChars: 4_000,
  maxStackChars: 16_000,
  maxOutputChars: 8_000,
  maxTokenChars: 1 << 20,
};

/** Keeps at most `max` characters, saying how much was cut. */
export function clip(text: string | null | undefined, max: number): string | null {
  if (text === null || text === undefined) return null;
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… (${text.length - max} more characters not kept)`;
}

/** Appends to a bounded text; once full, further pieces only count toward the "not kept" note. */
export class BoundedText {
  #parts: string[] = [];
  #length = 0;
  #dropped = 0;
  constructor(readonly max: number) {}
  add(piece: string): void {
    const room = this.max - this.#length;
    if (room <= 0) {
      this.#dropped += piece.length;
      return;
    }
    const kept = piece.length <= room ? piece : piece.slice(0, room);
    this.#parts.push(kept);
    this.#length += kept.length;
    this.#dropped += piece.length - kept.length;
  }
  get empty(): boolean {
    return this.#length === 0 && this.#dropped === 0;
  }
  toString(): string {
    const text = this.#parts.join("");
    return this.#dropped > 0 ? `${text}\n… (${this.#dropped} more characters not kept)` : text;
  }
}

/**
 * A path as the checkout sees it: `file://` URLs decoded, and the runner's workspace prefix (an
 * absolute path on the runner) removed, so the web app can link it to the file on the host.
 */
export function workspacePath(raw: string | null | undefined, workspace: string | null): string | null {
  if (!raw) return null;
  let path = raw;
  if (path.startsWith("file://")) {
    try {
      path = decodeURIComponent(new URL(path).pathname);
    } catch {
      return null;
    }
  }
  if (workspace) {
    const root = workspace.endsWith("/") ? workspace : `${workspace}/`;
    if (path.startsWith(root)) path = path.slice(root.length);
  }
  return path;
}

/** Removes the runner's workspace prefix wherever it appears in a message or stack trace. */
export function withoutWorkspace(text: string | null, workspace: string | null): string | null {
  if (text === null || !workspace || !text.includes(workspace)) return text;
  const root = workspace.endsWith("/") ? workspace : `${workspace}/`;
  return text.split(`file://${root}`).join("").split(root).join("");
}

/** A positive integer line number, or null. */
export function lineNumber(value: unknown): number | null {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isInteger(n) && n > 0 && n < 10_000_000 ? n : null;
}
