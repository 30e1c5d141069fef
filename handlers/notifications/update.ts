// PATCH /v1/projects/{project_id}/notifications/{notification_id} (project maintainer): changes
// the given fields. The channel is fixed; its settings object may carry only the keys to change,
// and a secret left out keeps its sealed value. A new URL or SMTP host goes through the address
// policy as on create (400 when refused).
import { z } from "zod";
import { defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { fail } from "../../lib/http/errors.ts";
import { IdParam } from "../../lib/schemas/shared.ts";
import { NotificationResource, UpdateNotificationBody } from "../../lib/notifications/wire.ts";
import { refuseChannelHosts, toPublicNotification, updateNotification, type ChannelSecrets } from "../../lib/notifications/notifications.ts";
import { notificationOfProject } from "./get.ts";

export const endpoint = defineEndpoint({
  operationId: "update_notification",
  summary: "Update a build notification",
  params: z.object({ notification_id: IdParam }),
  body: UpdateNotificationBody,
  response: z.object({ notification: NotificationResource }),
  async handle({ params, body }, ctx: ProjectContext) {
    const current = await notificationOfProject(ctx.db, ctx.project.id, params.notification_id);
    const settings = body.slack ?? body.webhook ?? body.email;
    const other = (["slack", "webhook", "email"] as const).find((c) => c !== current.channel && body[c] !== undefined);
    if (other)
      fail("invalid_request", `This notification's channel is ${current.channel}; send ${current.channel} settings (the channel cannot change).`, {
        details: [{ path: `body.${other}`, message: `not a ${current.channel} setting` }],
      });
    if (current.channel === "email" && body.email) refuseServerChangeWithoutPassword(current.config, body.email);
    await refuseChannelHosts(ctx, body);
    let config: Record<string, unknown> | undefined;
    let secrets: ChannelSecrets | undefined;
    if (settings) {
      const { url, secret, password, ...plain } = settings as { url?: string; secret?: string; password?: string } & Record<string, unknown>;
      secrets = { ...(url !== undefined ? { url } : {}), ...(secret !== undefined ? { secret } : {}), ...(password !== undefined ? { password } : {}) };
      config = { ...current.config, ...plain, ...(url !== undefined ? { url_host: new URL(url).host } : {}) };
    }
    const n = await updateNotification(
      ctx,
      current,
      { name: body.name, events: body.events, branches: body.branches, enabled: body.enabled, config, secrets },
      ctx.clock.now(),
    );
    return { notification: await toPublicNotification(ctx.db, n) };
  },
});

/** Where the stored SMTP password goes: changing any of these without sending it again would hand it to another server. */
const SMTP_SERVER_FIELDS = ["host", "port", "security", "tls_ca"] as const;

/**
 * A stored password is kept only while the server stays the same. Otherwise anyone who may edit
 * the notification could point it at a server of their own (or turn encryption off) and receive
 * the password the API never returns; so a new server needs the password sent again.
 */
function refuseServerChangeWithoutPassword(current: Record<string, unknown>, patch: Record<string, unknown>): void {
  const username = patch.username !== undefined ? patch.username : current.username;
  if (patch.password !== undefined || !username) return;
  const changed = SMTP_SERVER_FIELDS.filter((k) => patch[k] !== undefined && patch[k] !== current[k]);
  if (changed.length === 0) return;
  const message = `required when changing ${changed.join(", ")}: the stored password is sent only to the server it was given for`;
  fail("invalid_request", `The body is not valid: body.email.password: ${message}`, { details: [{ path: "body.email.password", message }] });
}
