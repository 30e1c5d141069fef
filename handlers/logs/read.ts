// GET /v1/builds/{build_id}/logs (docs/runners.md "Logs"; project viewer): the build's log so far, as a JSON
// array of entries {seq, job_id, line, step, stream, ts, text} or, with Accept: text/plain, as
// text. Streamed a page at a time, from the database, or from the object store where a finished
// build's log was archived (lib/logs/archive.ts), so a 100 MB log never sits in memory.
// `after_seq` and `limit` page by sequence. Where the cap cut lines out, a marker says so.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { cutNotice, statsOf } from "../../lib/logs/store.ts";
import { openLogReader } from "../../lib/logs/archive.ts";

const PAGE = 1000;
const intParam = z
  .string()
  .regex(/^\d{1,15}$/)
  .transform(Number);

export const endpoint = defineEndpoint({
  operationId: "get_build_logs",
  summary: "A build's log (JSON entries or plain text)",
  description: "Accept: text/plain for text; otherwise a JSON array of {seq, job_id, line, step, stream, ts, text}.",
  query: z.object({
    after_seq: intParam.default(0).describe("only lines after this seq"),
    limit: intParam.pipe(z.number().min(1)).optional().describe("at most this many lines; default all"),
  }),
  produces: ["application/json", "text/plain"],
  errors: ["object_store_error"],
  async handle({ query }, ctx: ProjectContext<"build_id">) {
    const log = openLogReader(ctx, ctx.build.id);
    const text = (ctx.request.headers.get("accept") ?? "").includes("text/plain");
    const stats = await statsOf(ctx.db, ctx.build.id);
    const encoder = new TextEncoder();
    let cursor = query.after_seq;
    let left = query.limit ?? Number.MAX_SAFE_INTEGER;
    let first = true;
    let markerSent = stats.head_last_seq === null || stats.cut_lines === 0 || cursor > stats.head_last_seq;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const page = left > 0 ? await log.page(cursor, Math.min(PAGE, left)) : [];
        let out = first && !text ? "[" : "";
        for (const entry of page) {
          if (!markerSent && entry.seq > stats.head_last_seq!) {
            markerSent = true;
            const marker = { seq: null, job_id: entry.job_id, line: null, step: "", stream: "system", ts: entry.ts, text: cutNotice(stats) };
            out += text ? marker.text + "\n" : `${first ? "" : ","}${JSON.stringify(marker)}`;
            first = false;
          }
          out += text ? entry.text + "\n" : `${first ? "" : ","}${JSON.stringify(entry)}`;
          first = false;
          cursor = entry.seq;
        }
        left -= page.length;
        if (page.length < PAGE || left <= 0) {
          if (!text) out += first && out === "" ? "[]" : "]";
          if (out) controller.enqueue(encoder.encode(out));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(out));
      },
    });
    return new Response(body, {
      headers: { "content-type": text ? "text/plain; charset=utf-8" : "application/json; charset=utf-8", "cache-control": "no-store" },
    });
  },
});
