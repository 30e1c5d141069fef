// What a step printed as the Dart test package's JSON reporter protocol (runner/job/machine-output.ts).
import { expect, test } from "bun:test";
import { MachineOutput } from "../../runner/job/machine-output.ts";
import { TEST_REPORT_LIMIT } from "../../lib/runners/protocol-wire.ts";

const start = '{"protocolVersion":"0.1.1","runnerVersion":"1.25.8","pid":7,"type":"start","time":0}';
const done = '{"testID":1,"result":"success","skipped":false,"hidden":false,"type":"testDone","time":12}';
const text = (out: MachineOutput) => new TextDecoder().decode(out.report()!);

test("nothing is kept from a command that never starts the protocol, even if it prints JSON", () => {
  const out = new MachineOutput();
  out.stdout("Running flutter test…");
  out.stdout('{"type":"testDone"}');
  out.stdout('{"protocolVersion":"0.1.1","type":"done"}');
  expect(out.report()).toBeNull();
});

test("from the start event on, the event lines are kept and other lines left out", () => {
  const out = new MachineOutput();
  out.stdout("Resolving dependencies...");
  out.stdout(start);
  out.stdout("Downloading Linux x64 tools... 2.1s");
  out.stdout(done);
  expect(text(out)).toBe(`${start}\n${done}\n`);
  expect(out.cut).toBe(false);
});

test("a start line that is not valid JSON does not start it", () => {
  const out = new MachineOutput();
  out.stdout('{"protocolVersion":"0.1.1","type":"start"');
  expect(out.report()).toBeNull();
});

test("more than a report holds is cut at a whole event and said", () => {
  const out = new MachineOutput();
  out.stdout(start);
  const big = `{"type":"print","message":"${"x".repeat(100_000)}"}`;
  for (let i = 0; i < Math.ceil(TEST_REPORT_LIMIT / big.length) + 2; i++) out.stdout(big);
  const kept = out.report()!;
  expect(kept.length).toBeLessThanOrEqual(TEST_REPORT_LIMIT);
  expect(out.cut).toBe(true);
  expect(
    text(out)
      .split("\n")
      .slice(1, -1)
      .every((l) => l === big),
  ).toBe(true);
});
