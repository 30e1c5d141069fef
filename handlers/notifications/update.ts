// PATCH /v1/projects/{project_id}/notifications/{notification_id} (project maintainer): changes
// the given fields. The channel is fixed; its settings object may carry only the keys to change,
// and a secret left out keeps its sealed value.
import { z } from "zod";
import { defineEndpoint } from "../../lib/route.ts";
import { fail } from "../../lib/errors.ts";
import { IdParam } from "../../lib/schemas/ci.ts";
import { NotificationResource, UpdateNotificationBody } from "../../lib/schemas/operations.ts";
import { scopedProject } from "../../lib/auth/project-access.ts";
import { toPublicNotification, updateNotification, type ChannelSecrets } from "../../lib/notifications.ts";
import { notificationOfProject } from "./get.ts";

export const endpoint = defineEndpoint({
  operationId: "update_notification",
  summary: "Update a build notification",
  tag: "notifications",
  params: z.object({ project_id: IdParam, notification_id: IdParam }),
  body: UpdateNotificationBody,
  response: z.object({ notification: NotificationResource }),
  errors: [],
  async handle({ params, body }, ctx) {
    const current = await notificationOfProject(ctx.db, scopedProject(ctx).id, params.notification_id);
    const settings = body.slack ?? body.webhook ?? body.email;
    const other = (["slack", "webhook", "email"] as const).find((c) => c !== current.channel && body[c] !== undefined);
    if (other) fail("invalid_request", `This notification's channel is ${current.channel}; send ${current.channel} settings (the channel cannot change).`, { details: [{ path: `body.${other}`, message: `not a ${current.channel} setting` }] });
    let config: Record<string, unknown> | undefined;
    let secrets: ChannelSecrets | undefined;
    if (settings) {
      const { url, secret, password, ...plain } = settings as { url?: string; secret?: string; password?: string } & Record<string, unknown>;
      secrets = { ...(url !== undefined ? { url } : {}), ...(secret !== undefined ? { secret } : {}), ...(password !== undefined ? { password } : {}) };
      config = { ...current.config, ...plain, ...(url !== undefined ? { url_host: new URL(url).host } : {}) };
    }
    const n = await updateNotification(ctx, current, { name: body.name, events: body.events, branches: body.branches, enabled: body.enabled, config, secrets }, ctx.clock.now());
    return { notification: await toPublicNotification(ctx.db, n) };
  },
});
