// Reading one uploaded report as it streams in (docs/test-results.md "Reports"): its format is
// told from its first bytes (or, for an empty file, its name), then the matching parser reads it
// chunk by chunk. Past `maxBytes` the rest is not read and what came before is kept, so a huge or
// truncated file still yields its first results and a sentence saying what happened.
import { DEFAULT_LIMITS, type ParsedReport, type ReportFormat, type ReportLimits, type ReportReader } from "./report.ts";
import { dartJsonReader } from "./dart-json.ts";
import { junitXmlReader } from "./junit-xml.ts";
import { lcovReader } from "./lcov.ts";
import { analyzerReader } from "./analyzer.ts";

/** The format a report's first characters show, else its name suggests; null when neither does. */
export function detectFormat(path: string, head: string): ReportFormat | null {
  const start = head.replace(/^\uFEFF/, "").trimStart();
  if (start.startsWith("<")) return "junit_xml";
  if (start.startsWith("{")) return "dart_json";
  if (/^(TN|SF):/.test(start)) return "lcov";
  if (/^(INFO|WARNING|ERROR)\|/.test(start)) return "analyzer";
  const name = path.toLowerCase();
  if (start === "" || /^[A-Za-z0-9]/.test(start)) {
    if (name.endsWith(".xml")) return "junit_xml";
    if (name.endsWith(".info") || name.endsWith(".lcov")) return "lcov";
    if (name.endsWith(".json") || name.endsWith(".jsonl")) return "dart_json";
    if (/analy[sz]/.test(name)) return "analyzer";
  }
  return null;
}

function readerFor(format: ReportFormat, limits: ReportLimits, workspace: string | null, path: string): ReportReader {
  switch (format) {
    case "dart_json":
      return dartJsonReader(limits, workspace);
    case "junit_xml":
      return junitXmlReader(limits, workspace);
    case "lcov":
      return lcovReader(limits, workspace, path);
    case "analyzer":
      return analyzerReader(limits, workspace);
  }
}

export interface ReadResult {
  /** Null when the format could not be told: nothing was read. */
  report: ParsedReport | null;
  bytes: number;
  /** Set when the input went past maxBytes and the rest was not read. */
  cut: boolean;
}

/** Text that is enough to tell a format from (the first non-blank characters). */
const SNIFF_CHARS = 64;

export async function readReport(
  body: ReadableStream<Uint8Array> | null,
  o: { path: string; workspace: string | null; maxBytes: number; limits?: ReportLimits },
): Promise<ReadResult> {
  const limits = o.limits ?? DEFAULT_LIMITS;
  const decoder = new TextDecoder("utf-8", { fatal: false });
  const state: { parser: ReportReader | null; head: string } = { parser: null, head: "" };
  const start = (format: ReportFormat): ReportReader => {
    const parser = readerFor(format, limits, o.workspace, o.path);
    parser.push(state.head);
    state.head = "";
    return parser;
  };
  /** False once the head shows a format nothing reads: the rest is not worth receiving. */
  const feed = (text: string): boolean => {
    if (state.parser) {
      state.parser.push(text);
      return true;
    }
    state.head += text;
    if (state.head.trimStart().length < SNIFF_CHARS) return true;
    const format = detectFormat(o.path, state.head);
    if (format) state.parser = start(format);
    return format !== null;
  };
  const reader = body?.getReader();
  let bytes = 0;
  let cut = false;
  try {
    for (let next = await reader?.read(); next && !next.done; next = await reader!.read()) {
      let chunk = next.value;
      if (bytes + chunk.byteLength > o.maxBytes) {
        chunk = chunk.subarray(0, o.maxBytes - bytes);
        cut = true;
      }
      bytes += chunk.byteLength;
      if (!feed(decoder.decode(chunk, { stream: true })) || cut) break;
    }
  } finally {
    await reader?.cancel().catch(() => {});
  }
  if (!cut) feed(decoder.decode());
  if (!state.parser) {
    const format = detectFormat(o.path, state.head);
    if (!format) return { report: null, bytes, cut };
    state.parser = start(format);
  }
  const report = state.parser.end();
  if (cut) report.problems.unshift(`The report is larger than ${o.maxBytes} bytes: only its first ${o.maxBytes} bytes were read.`);
  return { report, bytes, cut };
}
