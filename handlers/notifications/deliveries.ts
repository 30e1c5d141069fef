// GET /v1/projects/{project_id}/notifications/{notification_id}/deliveries (project maintainer):
// the latest deliveries, newest first, with attempts and the last error.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { NotificationDeliveryResource } from "../../lib/notifications/wire.ts";
import { listDeliveries } from "../../lib/notifications/notifications.ts";
import { notificationOfProject } from "./get.ts";

export const endpoint = defineEndpoint({
  operationId: "list_notification_deliveries",
  summary: "List a notification's deliveries",
  params: z.object({ notification_id: IdParam }),
  query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
  response: z.object({ deliveries: z.array(NotificationDeliveryResource) }),
  async handle({ params, query }, ctx: ProjectContext) {
    const n = await notificationOfProject(ctx.db, ctx.project.id, params.notification_id);
    return { deliveries: await listDeliveries(ctx.db, n.id, query.limit) };
  },
});
