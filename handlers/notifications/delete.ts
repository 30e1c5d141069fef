// DELETE /v1/projects/{project_id}/notifications/{notification_id} (project maintainer): its
// pending deliveries go with it.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { deleteNotification } from "../../lib/notifications/notifications.ts";
import { notificationOfProject } from "./get.ts";

export const endpoint = defineEndpoint({
  operationId: "delete_notification",
  summary: "Delete a build notification",
  params: z.object({ notification_id: IdParam }),
  response: z.object({ deleted: z.boolean() }),
  async handle({ params }, ctx: ProjectContext) {
    const n = await notificationOfProject(ctx.db, ctx.project.id, params.notification_id);
    await deleteNotification(ctx.db, n.id);
    return { deleted: true };
  },
});
