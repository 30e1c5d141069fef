// The one place a Server-Sent Events frame is written (WHATWG HTML, "Server-sent events",
// §9.2.6 "Interpreting an event stream"): an optional `id:` line, `event:`, one `data:` line and
// the blank line that dispatches it. The data is JSON, which has no raw newline, so one `data:`
// line always carries it whole. Imports nothing: the log hub, bundled alone as a Durable Object
// (tests/lib/live/hub.test.ts), encodes its frames with it.

/** One event: `id: <id>` when given (what EventSource sends back as Last-Event-ID), then `event:` and `data:` (JSON). */
export function sseFrame(event: string, data: unknown, id?: number): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
