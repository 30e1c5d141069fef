// GET /healthz: the process is up and serving (a liveness probe; it touches nothing else).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";

export const endpoint = defineEndpoint({
  operationId: "healthz",
  summary: "Liveness: the process is up",
  response: z.object({ status: z.literal("ok") }),
  async handle() {
    return { status: "ok" as const };
  },
});
