// GET /v1/operator-incidents (admin): what needs an operator's attention, most recent first.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { Pagination } from "../../lib/schemas/shared.ts";
import { IncidentResource } from "../../lib/daemon/incident-wire.ts";
import { listIncidents } from "../../lib/daemon/incidents.ts";

export const endpoint = defineEndpoint({
  operationId: "list_operator_incidents",
  summary: "List operator incidents",
  query: z.object({ status: z.enum(["open", "resolved"]).optional(), unread: z.enum(["true", "false"]).optional(), ...Pagination }),
  response: z.object({ incidents: z.array(IncidentResource), total: z.number().int() }),
  async handle({ query }, ctx) {
    return listIncidents(ctx.db, { status: query.status, unread: query.unread === "true", limit: query.limit, offset: query.offset });
  },
});
