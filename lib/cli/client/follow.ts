// Following a build's log live over Server-Sent Events (GET /v1/builds/{id}/logs/stream): every
// line once and in order, across dropped connections. A stream token opens a stream within 60
// seconds of being minted, so each (re)connection mints a fresh one and resumes after the last
// line seen with Last-Event-ID, as an EventSource would (WHATWG HTML, "Server-sent events").
import { Api, CommandFailure, EXIT, refusal } from "./api.ts";
import type { Build, OneBuild } from "./resources.ts";

export interface LogLine {
  seq: number;
  step: string;
  stream: string;
  ts: number;
  text: string;
}

export interface StreamEnd {
  status: Build["status"];
  exit_code: number | null;
  last_seq: number;
}

export interface FollowSink {
  log(line: LogLine): void;
  status(status: { status: Build["status"]; exit_code: number | null }): void;
  truncated(cut: { cut_lines: number; cut_bytes: number; text: string }): void;
  /** Called before each reconnection after a dropped stream. */
  reconnecting(attempt: number, reason: string): void;
}

/** How long a follow keeps trying to get a stream back before it gives up (exit 5). */
const GIVE_UP_AFTER_MS = 120_000;
const MAX_DELAY_MS = 3_000;

/** Follows the build's stream to its end; the final status. */
export async function followBuild(api: Api, buildId: string, sink: FollowSink): Promise<StreamEnd> {
  let lastSeq = 0;
  let attempt = 0;
  let failingSince: number | null = null;
  let retryMs = MAX_DELAY_MS;
  for (;;) {
    const outcome = await openOnce(
      api,
      buildId,
      lastSeq,
      sink,
      (seq) => {
        lastSeq = seq;
        failingSince = null;
        attempt = 0;
      },
      (ms) => (retryMs = Math.min(ms, MAX_DELAY_MS)),
    );
    if (outcome.kind === "end") return outcome.end;
    if (outcome.kind === "finished") {
      const { build } = await api.json<OneBuild>("GET", `/v1/builds/${encodeURIComponent(buildId)}`);
      return { status: build.status, exit_code: build.exit_code, last_seq: lastSeq };
    }
    failingSince ??= Date.now();
    if (Date.now() - failingSince > GIVE_UP_AFTER_MS) {
      throw new CommandFailure(
        `roost: lost the log stream of build ${buildId} and could not get it back for ${GIVE_UP_AFTER_MS / 1000} s (${outcome.reason})`,
        EXIT.unreachable,
      );
    }
    attempt += 1;
    sink.reconnecting(attempt, outcome.reason);
    // The first reconnection at once (a proxy's idle timeout, a restart), then backing off to the server's retry.
    if (attempt > 1) await Bun.sleep(Math.min(250 * 2 ** (attempt - 2), retryMs));
  }
}

type Outcome = { kind: "end"; end: StreamEnd } | { kind: "finished" } | { kind: "dropped"; reason: string };

async function openOnce(
  api: Api,
  buildId: string,
  lastSeq: number,
  sink: FollowSink,
  seen: (seq: number) => void,
  retry: (ms: number) => void,
): Promise<Outcome> {
  const id = encodeURIComponent(buildId);
  let token: string;
  try {
    token = (await api.json<{ token: string }>("POST", `/v1/builds/${id}/stream-token`)).token;
  } catch (error) {
    if (error instanceof CommandFailure && error.exitCode === EXIT.unreachable) return { kind: "dropped", reason: error.message.replace(/^roost: /, "") };
    throw error;
  }
  let response: Response;
  try {
    response = await fetch(`${api.remote.url}/v1/builds/${id}/logs/stream?token=${encodeURIComponent(token)}`, {
      headers: { accept: "text/event-stream", ...(lastSeq > 0 ? { "last-event-id": String(lastSeq) } : {}) },
    });
  } catch (error) {
    return { kind: "dropped", reason: (error as { code?: string }).code ?? String(error) };
  }
  // 204: the build is over and every line was seen (the reconnection landed after its end).
  if (response.status === 204) return { kind: "finished" };
  if (response.status >= 500 || response.status === 429) return { kind: "dropped", reason: `the stream answered ${response.status}` };
  if (!response.ok || !response.body) throw await refusal(response, "GET the log stream");

  let last = lastSeq;
  try {
    for await (const event of readEvents(response.body)) {
      if (event.retry !== undefined) retry(event.retry);
      switch (event.event) {
        case "log": {
          const line = JSON.parse(event.data) as LogLine;
          if (line.seq <= last) break; // never twice, whatever a proxy replays
          last = line.seq;
          seen(line.seq);
          sink.log(line);
          break;
        }
        case "status":
          sink.status(JSON.parse(event.data));
          break;
        case "truncated":
          sink.truncated(JSON.parse(event.data));
          break;
        case "end":
          return { kind: "end", end: JSON.parse(event.data) as StreamEnd };
      }
    }
  } catch (error) {
    return { kind: "dropped", reason: (error as { code?: string }).code ?? String(error) };
  }
  return { kind: "dropped", reason: "the stream closed before the build ended" };
}

interface SseEvent {
  event: string;
  data: string;
  id?: string;
  retry?: number;
}

/** The events of a text/event-stream body, parsed as the WHATWG HTML "event stream interpretation" says. */
async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event: SseEvent = { event: "message", data: "" };
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      if (nl === buffer.length - 1 && buffer[nl] === "\r") break; // maybe the first half of \r\n
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (data.length > 0 || event.retry !== undefined) yield { ...event, data: data.join("\n") };
        event = { event: "message", data: "" };
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event.event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") event.id = value;
      else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
    }
  }
}
