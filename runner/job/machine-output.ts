// Test results a step printed instead of writing to a file: `flutter test --machine` (and
// `--reporter json`, `dart test --reporter json`) print the Dart test package's JSON reporter
// protocol on standard output, one event per line, starting with
// {"protocolVersion":"0.1.1",…,"type":"start"} (https://github.com/dart-lang/test/blob/master/pkgs/test/doc/json_reporter.md).
// A command whose output starts that protocol has its event lines kept, as the log shows them
// (masked), and sent with the build's test reports (test-reports.ts), so a pipeline that just runs
// `flutter test --machine` gets its Tests tab without a test_reports pattern.
import { TEST_REPORT_LIMIT } from "../../lib/runners/protocol-wire.ts";

/** The events one command printed: null until a reporter's start event is seen on its stdout. */
export class MachineOutput {
  #lines: string[] | null = null;
  #bytes = 0;
  /** More printed than a report may hold: what was kept is sent, and the daemon reads it in part. */
  cut = false;

  stdout(text: string): void {
    if (this.#lines === null) {
      if (isStartEvent(text)) this.#lines = [];
      else return;
    }
    // Only event lines: flutter may print other lines (a download, a warning) among them.
    if (!text.startsWith("{")) return;
    const size = Buffer.byteLength(text) + 1;
    if (this.#bytes + size > TEST_REPORT_LIMIT) {
      this.cut = true;
      return;
    }
    this.#lines.push(text);
    this.#bytes += size;
  }

  /** The report as a file's bytes, or null when the command printed no reporter output. */
  report(): Uint8Array | null {
    return this.#lines === null ? null : new TextEncoder().encode(`${this.#lines.join("\n")}\n`);
  }
}

function isStartEvent(text: string): boolean {
  if (!text.startsWith("{") || !text.includes('"protocolVersion"')) return false;
  try {
    const event = JSON.parse(text) as { type?: unknown; protocolVersion?: unknown };
    return event.type === "start" && typeof event.protocolVersion === "string";
  } catch {
    return false;
  }
}
