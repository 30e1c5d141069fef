// The frames both live streams send, to the byte (WHATWG HTML §9.2.6 "Interpreting an event
// stream": field lines `name: value`, a blank line dispatches the event). EventSource clients,
// the web app and `roost build --follow` read exactly these.
import { describe, expect, test } from "bun:test";
import { sseFrame } from "../../../lib/live/sse-frame.ts";
import { logFrame, statusFrame } from "../../../lib/live/hub.ts";

describe("sseFrame", () => {
  test.each([
    ["an event with an id", sseFrame("log", { seq: 7, text: "a" }, 7), 'id: 7\nevent: log\ndata: {"seq":7,"text":"a"}\n\n'],
    ["an event without an id", sseFrame("ready", {}), "event: ready\ndata: {}\n\n"],
    ["an id of 0 is still an id", sseFrame("log", null, 0), "id: 0\nevent: log\ndata: null\n\n"],
    ["a newline in the data stays inside the one data line, escaped by JSON", sseFrame("log", { text: "a\nb" }), 'event: log\ndata: {"text":"a\\nb"}\n\n'],
  ])("%s", (_name, frame, wire) => {
    expect(frame).toBe(wire);
  });

  test("a log line and a status are framed as docs/runners.md shows them", () => {
    expect(logFrame({ seq: 12, step: "build", stream: "stdout", ts: 1_795_400_000, text: "ok" })).toBe(
      'id: 12\nevent: log\ndata: {"seq":12,"step":"build","stream":"stdout","ts":1795400000,"text":"ok"}\n\n',
    );
    expect(statusFrame({ status: "running", exit_code: null })).toBe('event: status\ndata: {"status":"running","exit_code":null}\n\n');
  });
});
