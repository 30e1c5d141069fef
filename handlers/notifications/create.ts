// POST /v1/projects/{project_id}/notifications (project maintainer): a notification channel for
// the project's builds (docs/notifications.md). Secrets (URLs, signing secret, SMTP password) are
// sealed with the secret box and never returned. A URL or SMTP host the address policy refuses
// (link-local, cloud metadata; lib/net/address-policy.ts) is a 400 here, not a failed delivery later.
import { created, defineEndpoint } from "../../lib/http/route.ts";
import type { ProjectContext } from "../../lib/http/context.ts";
import { CreateNotificationBody, NotificationResource } from "../../lib/notifications/wire.ts";
import { insertNotification, refuseChannelHosts, toPublicNotification, type ChannelSecrets } from "../../lib/notifications/notifications.ts";

/** Splits a channel's settings into what the API shows and what is sealed. */
export function splitSettings(body: { slack?: { url?: string }; webhook?: { url?: string; secret?: string }; email?: Record<string, unknown> }): {
  config: Record<string, unknown>;
  secrets: ChannelSecrets;
} {
  if (body.slack) return { config: { url_host: new URL(body.slack.url!).host }, secrets: { url: body.slack.url! } };
  if (body.webhook) return { config: { url_host: new URL(body.webhook.url!).host }, secrets: { url: body.webhook.url!, secret: body.webhook.secret! } };
  const { password, ...config } = body.email ?? {};
  return { config, secrets: password === undefined ? {} : { password: String(password) } };
}

export const endpoint = defineEndpoint({
  operationId: "create_notification",
  summary: "Create a build notification",
  body: CreateNotificationBody,
  ...created({ notification: NotificationResource }),
  async handle({ body }, ctx: ProjectContext) {
    await refuseChannelHosts(ctx, body);
    const { config, secrets } = splitSettings(body);
    const n = await insertNotification(
      ctx,
      {
        name: body.name,
        channel: body.channel,
        events: body.events,
        branches: body.branches,
        enabled: body.enabled,
        config,
        secrets,
        projectId: ctx.project.id,
        createdBy: ctx.principal.user.id,
      },
      ctx.clock.now(),
    );
    return { notification: await toPublicNotification(ctx.db, n) };
  },
});
