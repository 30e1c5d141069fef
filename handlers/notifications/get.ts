// GET /v1/projects/{project_id}/notifications/{notification_id} (project maintainer).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { NotificationResource } from "../../lib/notifications/wire.ts";
import { findNotification, toPublicNotification, type Notification } from "../../lib/notifications/notifications.ts";
import type { Executor } from "../../lib/db/client.ts";

/** The notification, when it belongs to the project the route authorized; 404 otherwise. */
export async function notificationOfProject(db: Executor, projectId: string, id: string): Promise<Notification> {
  const n = await findNotification(db, id);
  if (!n || n.project_id !== projectId) fail("not_found", "No notification with that id in this project.");
  return n;
}

export const endpoint = defineEndpoint({
  operationId: "get_notification",
  summary: "Read a build notification",
  params: z.object({ notification_id: IdParam }),
  response: z.object({ notification: NotificationResource }),
  async handle({ params }, ctx: ProjectContext) {
    const n = await notificationOfProject(ctx.db, ctx.project.id, params.notification_id);
    return { notification: await toPublicNotification(ctx.db, n) };
  },
});
