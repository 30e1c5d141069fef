// A small Server-Sent Events client for tests: reads a real text/event-stream response and
// yields parsed events ({event, id, data}) and comments, as an EventSource would see them.
export interface SseEvent {
  event: string;
  id: string | null;
  data: string;
  comment?: string;
}

export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = "";
  readonly events: SseEvent[] = [];
  closed = false;

  constructor(readonly response: Response) {
    this.#reader = response.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  }

  /** Reads until `predicate` holds for the events read so far, or `timeoutMs` passes. */
  async until(predicate: (events: SseEvent[]) => boolean, timeoutMs = 10_000): Promise<SseEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.events)) {
      if (this.closed) throw new Error(`stream closed; events: ${JSON.stringify(this.events.slice(-5))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; events: ${JSON.stringify(this.events.slice(-5))}`);
      const chunk = await Promise.race([this.#reader.read(), Bun.sleep(left).then(() => null)]);
      if (chunk === null) continue;
      if (chunk.done) {
        this.closed = true;
        continue;
      }
      this.#buffer += this.#decoder.decode(chunk.value, { stream: true });
      let at: number;
      while ((at = this.#buffer.indexOf("\n\n")) >= 0) {
        const block = this.#buffer.slice(0, at);
        this.#buffer = this.#buffer.slice(at + 2);
        const event: SseEvent = { event: "message", id: null, data: "" };
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) event.comment = line.slice(1).trim();
          else if (line.startsWith("event: ")) event.event = line.slice(7);
          else if (line.startsWith("id: ")) event.id = line.slice(4);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
          else if (line.startsWith("retry: ")) event.event = event.event === "message" ? "retry" : event.event;
        }
        event.data = data.join("\n");
        this.events.push(event);
      }
    }
    return this.events;
  }

  logs(): { seq: number; text: string }[] {
    return this.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data) as { seq: number; text: string });
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}
