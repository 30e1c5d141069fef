// POST /v1/operator-incidents/{id}/read (docs/api.md "Operator incidents"; admin): marks one incident read. Reading does
// not resolve it: status stays open until the condition is gone, and a new occurrence makes it
// unread again.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { IncidentResource } from "../../lib/daemon/incident-wire.ts";
import { markIncidentRead } from "../../lib/daemon/incidents.ts";

export const endpoint = defineEndpoint({
  operationId: "read_operator_incident",
  summary: "Mark an operator incident read",
  params: z.object({ id: IdParam }),
  response: IncidentResource,
  errors: ["not_found"],
  async handle({ params }, ctx) {
    const incident = await markIncidentRead(ctx.db, params.id, ctx.clock.now());
    if (!incident) fail("not_found", "No incident with that id.");
    return incident;
  },
});
