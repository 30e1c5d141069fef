// GET /v1/projects/{project_id}/notifications (project maintainer): with each one's delivery health.
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { NotificationResource } from "../../lib/notifications/wire.ts";
import { listNotifications, toPublicNotification } from "../../lib/notifications/notifications.ts";

export const endpoint = defineEndpoint({
  operationId: "list_notifications",
  summary: "List a project's build notifications",
  response: z.object({ notifications: z.array(NotificationResource) }),
  async handle(_input, ctx: ProjectContext) {
    const list = await listNotifications(ctx.db, ctx.project.id);
    return { notifications: await Promise.all(list.map((n) => toPublicNotification(ctx.db, n))) };
  },
});
