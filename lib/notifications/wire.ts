// Request and response shapes of build notifications (docs/notifications.md).
import { z } from "zod";
import { CHANNELS, NOTIFICATION_EVENTS } from "./notifications.ts";
import { refPatternProblem } from "../pipelines/branch-patterns.ts";
import { problemCheck } from "../schemas/patterns.ts";
import { DisplayName, Email, Timestamp } from "../schemas/shared.ts";

const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).max(2000);
const Events = z
  .array(z.enum(NOTIFICATION_EVENTS))
  .min(1)
  .refine((e) => new Set(e).size === e.length, "must not repeat an event")
  .describe(
    "failed; fixed (the first success after a failure on the same pipeline and branch); succeeded; canceled; approval_requested (a deployment waits for its approvers, docs/notifications.md)",
  );
const Branches = z
  .array(z.string().min(1).max(255).superRefine(problemCheck(refPatternProblem)))
  .max(50)
  .describe('branch patterns (docs/api.md "Branch patterns"), tags as refs/tags/<pattern>; empty: every branch and tag');

const SlackSettings = z
  .object({ url: HttpUrl.describe("the incoming webhook URL (Slack, Mattermost, Rocket.Chat, Discord's …/slack endpoint); never returned") })
  .strict();
const WebhookSettings = z
  .object({
    url: HttpUrl.describe("never returned"),
    secret: z.string().min(16, "must be at least 16 characters").max(256).describe("HMAC-SHA256 key of X-Roost-Signature-256; never returned"),
  })
  .strict();
const Port = z.number().int().min(1).max(65535);
const Security = z.enum(["starttls", "tls", "none"]).describe("starttls: STARTTLS required (587); tls: TLS from the first byte (465); none: unencrypted");
const SmtpUser = z.string().min(1).max(256).nullable().describe("SMTP AUTH user; null: no authentication");
const TlsCa = z.string().max(65536).nullable().describe("PEM certificates to trust for the server (a private CA); null: the system's");
const EmailSettings = z
  .object({
    host: z.string().min(1).max(253),
    port: Port.default(587),
    security: Security.default("starttls"),
    username: SmtpUser.default(null),
    password: z.string().max(1024).optional().describe("SMTP AUTH password; never returned"),
    from: Email,
    to: z.array(Email).min(1).max(50),
    tls_ca: TlsCa.default(null),
  })
  .strict();
/** The same fields, each optional and without defaults: a PATCH changes only what it names. */
const EmailSettingsPatch = z
  .object({
    host: z.string().min(1).max(253).optional(),
    port: Port.optional(),
    security: Security.optional(),
    username: SmtpUser.optional(),
    password: z.string().max(1024).optional(),
    from: Email.optional(),
    to: z.array(Email).min(1).max(50).optional(),
    tls_ca: TlsCa.optional(),
  })
  .strict();

const Common = { name: DisplayName, events: Events, branches: Branches.default([]), enabled: z.boolean().default(true) };
export const CreateNotificationBody = z.discriminatedUnion("channel", [
  z.object({ ...Common, channel: z.literal("slack"), slack: SlackSettings }).strict(),
  z.object({ ...Common, channel: z.literal("webhook"), webhook: WebhookSettings }).strict(),
  z.object({ ...Common, channel: z.literal("email"), email: EmailSettings }).strict(),
]);

export const UpdateNotificationBody = z
  .object({
    name: DisplayName.optional(),
    events: Events.optional(),
    branches: Branches.optional(),
    enabled: z.boolean().optional(),
    slack: SlackSettings.optional(),
    webhook: WebhookSettings.partial().optional(),
    email: EmailSettingsPatch.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: "send at least one field to change" });

export const NotificationResource = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  channel: z.enum(CHANNELS),
  events: z.array(z.enum(NOTIFICATION_EVENTS)),
  branches: z.array(z.string()),
  config: z
    .record(z.string(), z.unknown())
    .describe("the channel's settings without its secrets: url_host for webhooks; host, port, security, username, from, to, tls_ca for e-mail"),
  enabled: z.boolean(),
  health: z.object({
    last_delivered_at: Timestamp.nullable(),
    failing: z.boolean().describe("the latest attempted delivery has not succeeded"),
    last_error: z.string().nullable(),
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const NotificationDeliveryResource = z.object({
  id: z.string(),
  build_id: z.string(),
  deployment_id: z.string().nullable().describe("approval_requested: the deployment that waits"),
  event: z.enum(NOTIFICATION_EVENTS),
  status: z.enum(["pending", "delivered", "failed"]).describe("failed: given up after the last attempt"),
  attempts: z.number().int(),
  next_attempt_at: Timestamp.nullable(),
  last_error: z.string().nullable(),
  created_at: Timestamp,
  delivered_at: Timestamp.nullable(),
});
