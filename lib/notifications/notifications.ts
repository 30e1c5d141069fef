// Build notifications (docs/notifications.md): per project, on a build that failed, was fixed
// (the first success after a failure on the same pipeline and branch), succeeded or was canceled,
// and on a deployment waiting for approval (to its approvers), optionally limited to branches; sent to a Slack-compatible incoming webhook, a JSON webhook
// signed like GitHub's (X-Roost-Signature-256), or e-mail over SMTP (nodemailer).
//
// Nothing is sent from the code path that changes a build. That code writes an outbox row in the
// same transaction as every change to a final status (lib/builds/what-follows.ts), and so does the
// code that creates a deployment waiting for approval (lib/publishing/plan.ts,
// deployment_notification_outbox); the
// background dispatcher turns outbox rows into one delivery row per matching notification and
// sends due deliveries, retrying with exponential backoff. Rows survive
// a restart, any daemon process can dispatch, and a slow receiver delays only its own delivery.
import { createHmac } from "node:crypto";
import type { Executor, Row } from "../db/client.ts";
import { all, bool, inTransaction, json, num, numOrNull, one, rowMapper, str, strAs, strOrNull } from "../db/client.ts";
import type { AppContext } from "../http/context.ts";
import { newId } from "../auth/secrets.ts";
import { matchRefPatterns } from "../pipelines/branch-patterns.ts";
import { raiseIncident, resolveIncident } from "../daemon/incidents.ts";
import { hostRefusal, refuseSavedHost } from "../net/address-policy.ts";
import { failedCases, summaryOf, testsPageUrl } from "../test-results/queries.ts";
import type { NotificationResource } from "./wire.ts";
import type { WireOf } from "../schemas/shared.ts";

export const NOTIFICATION_EVENTS = ["failed", "fixed", "succeeded", "canceled", "approval_requested"] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];
export const CHANNELS = ["slack", "webhook", "email"] as const;
export type Channel = (typeof CHANNELS)[number];

/** Attempts before a delivery is given up as failed (about 2 hours of backoff in all). */
export const MAX_ATTEMPTS = 10;
/** Consecutive failed attempts of one notification that raise an operator incident. */
export const ATTEMPTS_BEFORE_INCIDENT = 5;
/** How long one attempt may take; a claimed delivery is retried by anyone after this lease. */
const SEND_TIMEOUT_MS = 15_000;
const CLAIM_SECONDS = 60;
const MAX_BACKOFF_SECONDS = 3600;

export function backoffSeconds(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_BACKOFF_SECONDS, 10 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.75 + random() * 0.5));
}

/** What each channel keeps in plain configuration (returned by the API) and sealed (never returned). */
export interface EmailConfig {
  host: string;
  port: number;
  /** starttls: plain connection upgraded with STARTTLS, required (port 587); tls: TLS from the start (465); none: never encrypted. */
  security: "starttls" | "tls" | "none";
  username: string | null;
  from: string;
  to: string[];
  /** PEM certificates to trust for the server (a private CA); the system's otherwise. */
  tls_ca: string | null;
}
export interface ChannelSecrets {
  /** slack and webhook: the URL (it carries the credential for Slack-style hooks). */
  url?: string;
  /** webhook: the HMAC-SHA256 signing secret. */
  secret?: string;
  /** email: the SMTP password. */
  password?: string;
}

const SEAL_PURPOSE = "notification-channel";

/** One notification channel of a project (table notifications). */
const toNotification = rowMapper({
  id: str,
  project_id: str,
  name: str,
  channel: strAs<Channel>(),
  events: json<NotificationEvent[]>(),
  branches: json<string[]>(),
  config: json<Record<string, unknown>>(),
  secrets_sealed: str,
  enabled: bool,
  created_by: strOrNull,
  created_at: num,
  updated_at: num,
});
export type Notification = ReturnType<typeof toNotification>;

export interface NotificationFields {
  name: string;
  channel: Channel;
  events: NotificationEvent[];
  branches: string[];
  config: Record<string, unknown>;
  secrets: ChannelSecrets;
  enabled: boolean;
}

export async function insertNotification(
  deps: Pick<AppContext, "db" | "secrets">,
  f: NotificationFields & { projectId: string; createdBy: string | null },
  now: number,
): Promise<Notification> {
  const row = await one(
    deps.db,
    `INSERT INTO notifications (id, project_id, name, channel, events, branches, config, secrets_sealed, enabled, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [
      newId(),
      f.projectId,
      f.name,
      f.channel,
      JSON.stringify(f.events),
      JSON.stringify(f.branches),
      JSON.stringify(f.config),
      await deps.secrets.seal(JSON.stringify(f.secrets), SEAL_PURPOSE),
      f.enabled ? 1 : 0,
      f.createdBy,
      now,
      now,
    ],
  );
  return toNotification(row!);
}

/** Replaces the given fields; secrets given replace the stored ones key by key, the others are kept. */
export async function updateNotification(
  deps: Pick<AppContext, "db" | "secrets">,
  current: Notification,
  f: Partial<NotificationFields>,
  now: number,
): Promise<Notification> {
  const secrets = f.secrets ? { ...(await openSecrets(deps, current)), ...f.secrets } : null;
  const row = await one(
    deps.db,
    `UPDATE notifications SET name = ?, events = ?, branches = ?, config = ?, secrets_sealed = ?, enabled = ?, updated_at = ? WHERE id = ? RETURNING *`,
    [
      f.name ?? current.name,
      JSON.stringify(f.events ?? current.events),
      JSON.stringify(f.branches ?? current.branches),
      JSON.stringify(f.config ?? current.config),
      secrets ? await deps.secrets.seal(JSON.stringify(secrets), SEAL_PURPOSE) : current.secrets_sealed,
      (f.enabled ?? current.enabled) ? 1 : 0,
      now,
      current.id,
    ],
  );
  return toNotification(row!);
}

export async function openSecrets(deps: Pick<AppContext, "secrets">, n: Notification): Promise<ChannelSecrets> {
  return JSON.parse(await deps.secrets.open(n.secrets_sealed, SEAL_PURPOSE)) as ChannelSecrets;
}

export async function findNotification(db: Executor, id: string): Promise<Notification | null> {
  const row = await one(db, "SELECT * FROM notifications WHERE id = ?", [id]);
  return row ? toNotification(row) : null;
}

export async function listNotifications(db: Executor, projectId: string): Promise<Notification[]> {
  return (await all(db, "SELECT * FROM notifications WHERE project_id = +? ORDER BY created_at, id", [projectId])).map(toNotification);
}

export async function deleteNotification(db: Executor, id: string): Promise<void> {
  await db.execute({ sql: "DELETE FROM notifications WHERE id = ?", args: [id] });
}

/** One delivery of a notification (table notification_deliveries); a due time only while it is pending. */
const toDelivery = rowMapper({
  id: str,
  build_id: str,
  deployment_id: (row, column) => str(row, column) || null,
  event: strAs<NotificationEvent>(),
  status: strAs<"pending" | "delivered" | "failed">(),
  attempts: num,
  next_attempt_at: (row, column) => (str(row, "status") === "pending" ? num(row, column) : null),
  last_error: strOrNull,
  created_at: num,
  delivered_at: numOrNull,
});
export type DeliverySummary = ReturnType<typeof toDelivery>;

export async function listDeliveries(db: Executor, notificationId: string, limit: number): Promise<DeliverySummary[]> {
  return (
    await all(db, "SELECT * FROM notification_deliveries WHERE notification_id = +? ORDER BY created_at DESC, id DESC LIMIT +?", [notificationId, limit])
  ).map(toDelivery);
}

/** How a notification is doing: its latest delivery and, while the latest ones fail, since when. */
export async function healthOf(db: Executor, notificationId: string) {
  const latest = await one(db, "SELECT * FROM notification_deliveries WHERE notification_id = +? AND attempts > 0 ORDER BY updated_at DESC, id DESC LIMIT 1", [
    notificationId,
  ]);
  const ok = await one(db, "SELECT MAX(delivered_at) AS at FROM notification_deliveries WHERE notification_id = ? AND status = 'delivered'", [notificationId]);
  const failing = latest !== null && str(latest, "status") !== "delivered";
  return {
    last_delivered_at: ok ? numOrNull(ok, "at") : null,
    failing,
    last_error: failing ? strOrNull(latest!, "last_error") : null,
  };
}

/** The API shape: the secrets are never returned, only which ones are set. */
export async function toPublicNotification(db: Executor, n: Notification): Promise<WireOf<typeof NotificationResource>> {
  return {
    id: n.id,
    project_id: n.project_id,
    name: n.name,
    channel: n.channel,
    events: n.events,
    branches: n.branches,
    config: n.config,
    enabled: n.enabled,
    health: await healthOf(db, n.id),
    created_at: n.created_at,
    updated_at: n.updated_at,
  };
}

/** Which of a notification's events a finished build is: a success after a failure is a fix. */
function eventsFor(status: string, previous: string | null): NotificationEvent[] {
  if (status === "failed") return ["failed"];
  if (status === "canceled") return ["canceled"];
  if (status === "succeeded") return previous === "failed" ? ["fixed", "succeeded"] : ["succeeded"];
  return [];
}

/** The one event a notification sends for a build: a fix, when it asked for fixes, rather than a plain success. */
export function eventToSend(subscribed: readonly NotificationEvent[], status: string, previous: string | null): NotificationEvent | null {
  return eventsFor(status, previous).find((e) => subscribed.includes(e)) ?? null;
}

/** Turns up to `limit` outbox rows of builds and of deployments into deliveries, in one transaction per batch. */
export async function fanOut(ctx: Pick<AppContext, "db" | "clock">, limit = 200): Promise<number> {
  // Looked at first, outside any transaction: a pass that finds both outboxes empty (most passes,
  // every 2 s) takes no write lock, which on one database shared by several hosts every other
  // daemon's writes would wait for.
  const waiting = await one(
    ctx.db,
    "SELECT EXISTS (SELECT 1 FROM notification_outbox) AS builds, EXISTS (SELECT 1 FROM deployment_notification_outbox) AS approvals",
  );
  return (Number(waiting?.builds) === 1 ? await fanOutBuilds(ctx, limit) : 0) + (Number(waiting?.approvals) === 1 ? await fanOutApprovals(ctx, limit) : 0);
}

/** The ref a notification's branch patterns are matched against: a plain pattern names branches, tags are refs/tags/<glob>. */
function refOf(row: Row) {
  return { kind: strOrNull(row, "trigger_event") === "tag" ? "tag" : "branch", name: str(row, "branch") } as const;
}

async function fanOutApprovals(ctx: Pick<AppContext, "db" | "clock">, limit: number): Promise<number> {
  return inTransaction(ctx.db, async (tx) => {
    const rows = await all(
      tx,
      `SELECT o.id, d.id AS deployment_id, d.build_id, d.project_id, b.branch, b.trigger_event FROM deployment_notification_outbox o
       JOIN deployments d ON d.id = o.deployment_id JOIN builds b ON b.id = d.build_id ORDER BY o.id LIMIT +?`,
      [limit],
    );
    if (rows.length === 0) return 0;
    const now = ctx.clock.now();
    let created = 0;
    for (const row of rows) {
      const notifications = (await all(tx, "SELECT * FROM notifications WHERE project_id = ? AND enabled = 1", [str(row, "project_id")])).map(toNotification);
      for (const n of notifications) {
        if (!n.events.includes("approval_requested")) continue;
        if (n.branches.length > 0 && !matchRefPatterns(n.branches, refOf(row)).matched) continue;
        const inserted = await tx.execute({
          sql: `INSERT INTO notification_deliveries (id, notification_id, build_id, deployment_id, event, status, attempts, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, 'approval_requested', 'pending', 0, ?, ?, ?) ON CONFLICT (notification_id, build_id, event, deployment_id) DO NOTHING`,
          args: [newId(), n.id, str(row, "build_id"), str(row, "deployment_id"), now, now, now],
        });
        created += inserted.rowsAffected;
      }
    }
    await tx.execute({ sql: "DELETE FROM deployment_notification_outbox WHERE id <= ?", args: [num(rows[rows.length - 1]!, "id")] });
    return created;
  });
}

async function fanOutBuilds(ctx: Pick<AppContext, "db" | "clock">, limit: number): Promise<number> {
  return inTransaction(ctx.db, async (tx) => {
    const rows = await all(
      tx,
      `SELECT o.id, o.build_id, o.status, o.previous_status, b.project_id, b.branch, b.trigger_event FROM notification_outbox o JOIN builds b ON b.id = o.build_id ORDER BY o.id LIMIT +?`,
      [limit],
    );
    if (rows.length === 0) return 0;
    const now = ctx.clock.now();
    let created = 0;
    const byProject = new Map<string, Notification[]>();
    for (const row of rows) {
      const projectId = str(row, "project_id");
      let notifications = byProject.get(projectId);
      if (!notifications)
        byProject.set(
          projectId,
          (notifications = (await all(tx, "SELECT * FROM notifications WHERE project_id = ? AND enabled = 1", [projectId])).map(toNotification)),
        );
      for (const n of notifications) {
        const event = eventToSend(n.events, str(row, "status"), strOrNull(row, "previous_status"));
        if (!event) continue;
        // A plain pattern names branches, so `main` does not announce a tag someone named main;
        // tags are named as refs/tags/<glob>, as for a secret's protected_refs.
        if (n.branches.length > 0 && !matchRefPatterns(n.branches, refOf(row)).matched) continue;
        const inserted = await tx.execute({
          sql: `INSERT INTO notification_deliveries (id, notification_id, build_id, event, status, attempts, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (notification_id, build_id, event, deployment_id) DO NOTHING`,
          args: [newId(), n.id, str(row, "build_id"), event, now, now, now],
        });
        created += inserted.rowsAffected;
      }
    }
    await tx.execute({ sql: `DELETE FROM notification_outbox WHERE id <= ?`, args: [num(rows[rows.length - 1]!, "id")] });
    return created;
  });
}

export interface Message {
  event: NotificationEvent;
  delivery_id: string;
  project: { id: string; name: string; repository: string };
  pipeline: { id: string; name: string };
  build: {
    id: string;
    number: number;
    status: string;
    branch: string;
    commit_sha: string;
    trigger_type: string;
    failure_reason: string | null;
    finished_at: number | null;
    url: string;
  };
  /** approval_requested: the deployment that waits, and who may decide it. */
  deployment?: {
    id: string;
    publisher: string;
    environment: string;
    target: string;
    requested_by: string;
    approvers: string[];
    /** The build's page in the web app, where Approve and Reject are. */
    url: string;
  };
  /** What the build's test reports said (docs/test-results.md); null when it sent none. */
  tests: {
    summary: string;
    total: number;
    failed: number;
    url: string;
    failed_tests: { suite: string; name: string; message: string | null; file: string | null; line: number | null }[];
  } | null;
}

/** Failed tests a message names; the rest are counted and linked. */
const NAMED_FAILURES = 10;

/** "• test/counter_test.dart › decrements (test/counter_test.dart:18): Expected: <-1>" lines for chat and e-mail. */
function failedTestLines(m: Message, bullet: string): string[] {
  if (!m.tests || m.tests.failed === 0) return [];
  const lines = [`${m.tests.failed} of ${m.tests.total} test${m.tests.total === 1 ? "" : "s"} failed:`];
  for (const t of m.tests.failed_tests) {
    const where = t.file ? ` (${t.file}${t.line ? `:${t.line}` : ""})` : "";
    lines.push(`${bullet}${t.suite} › ${t.name}${where}${t.message ? `: ${t.message.split("\n", 1)[0]!.slice(0, 200)}` : ""}`);
  }
  if (m.tests.failed > m.tests.failed_tests.length) lines.push(`${bullet}… and ${m.tests.failed - m.tests.failed_tests.length} more`);
  lines.push(m.tests.url);
  return lines;
}

const HEADLINE: Record<NotificationEvent, string> = {
  failed: "failed",
  fixed: "is fixed",
  succeeded: "succeeded",
  canceled: "was canceled",
  approval_requested: "waits for approval",
};

export function summary(m: Message): string {
  if (m.deployment)
    return `${m.project.name} / ${m.pipeline.name} #${m.build.number}: publish ${m.deployment.publisher} to ${m.deployment.environment} (${m.deployment.target}) ${HEADLINE[m.event]}`;
  return `${m.project.name} / ${m.pipeline.name} #${m.build.number} ${HEADLINE[m.event]} on ${m.build.branch} (${m.build.commit_sha.slice(0, 7)})`;
}

/** Sends one message over a channel; throws with a short reason when the receiver refuses. */
export async function send(deps: Pick<AppContext, "config">, n: Notification, secrets: ChannelSecrets, m: Message): Promise<void> {
  const signal = AbortSignal.timeout(SEND_TIMEOUT_MS);
  if (n.channel === "slack" || n.channel === "webhook") {
    const url = secrets.url ?? "";
    await checkHost(deps, new URL(url).hostname);
    let body: string;
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "Roost-Notifications" };
    if (n.channel === "slack") {
      const reason = m.build.failure_reason && m.event !== "succeeded" && m.event !== "fixed" ? `\n${m.build.failure_reason}` : "";
      const tests = failedTestLines(m, "• ");
      body = JSON.stringify({
        text: m.deployment ? approvalLines(m).join("\n") : `${summary(m)}\n${m.build.url}${reason}${tests.length ? `\n${tests.join("\n")}` : ""}`,
      });
    } else {
      body = JSON.stringify(m);
      headers["x-roost-event"] = eventHeader(m);
      headers["x-roost-delivery"] = m.delivery_id;
      // As GitHub signs webhook deliveries: HMAC-SHA256 of the raw body, hex, prefixed "sha256="
      // (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
      headers["x-roost-signature-256"] = `sha256=${createHmac("sha256", secrets.secret ?? "")
        .update(body)
        .digest("hex")}`;
    }
    const response = await fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });
    await response.body?.cancel();
    if (response.status < 200 || response.status >= 300) throw new Error(`the receiver answered HTTP ${response.status}`);
    return;
  }
  const c = n.config as unknown as EmailConfig;
  await checkHost(deps, c.host);
  // Loaded on the first e-mail, not at start: most daemons send none (docs/benchmarks.md, start-up).
  const { default: nodemailer } = await import("nodemailer");
  const transport = nodemailer.createTransport({
    host: c.host,
    port: c.port,
    secure: c.security === "tls",
    requireTLS: c.security === "starttls",
    ignoreTLS: c.security === "none",
    auth: c.username ? { user: c.username, pass: secrets.password ?? "" } : undefined,
    tls: c.tls_ca ? { ca: c.tls_ca } : undefined,
    connectionTimeout: SEND_TIMEOUT_MS,
    greetingTimeout: SEND_TIMEOUT_MS,
    socketTimeout: SEND_TIMEOUT_MS,
  });
  try {
    if (m.deployment) {
      // The approvers are who must act: they get it beside the channel's own recipients.
      await transport.sendMail({
        from: c.from,
        to: [...new Set([...c.to, ...m.deployment.approvers])],
        subject: `[Roost] ${summary(m)}`,
        text: approvalLines(m).join("\n") + "\n",
        headers: { "X-Roost-Event": eventHeader(m), "X-Roost-Delivery": m.delivery_id },
      });
      return;
    }
    const lines = [
      summary(m),
      "",
      `Project:  ${m.project.name} (${m.project.repository})`,
      `Pipeline: ${m.pipeline.name}`,
      `Build:    #${m.build.number}, ${m.build.status}`,
      `Branch:   ${m.build.branch}`,
      `Commit:   ${m.build.commit_sha}`,
      ...(m.build.failure_reason ? [`Reason:   ${m.build.failure_reason}`] : []),
      ...(m.tests ? [`Tests:    ${m.tests.summary}`] : []),
      "",
      m.build.url,
      ...(m.tests?.failed ? ["", ...failedTestLines(m, "  - ")] : []),
    ];
    await transport.sendMail({
      from: c.from,
      to: c.to,
      subject: `[Roost] ${summary(m)}`,
      text: lines.join("\n") + "\n",
      headers: { "X-Roost-Event": eventHeader(m), "X-Roost-Delivery": m.delivery_id },
    });
  } finally {
    transport.close();
  }
}

/** X-Roost-Event: build.failed …, or deployment.approval_requested. */
function eventHeader(m: Message): string {
  return m.deployment ? `deployment.${m.event}` : `build.${m.event}`;
}

/** A waiting deployment for chat and e-mail: what, from which build, who asked, who may decide, where. */
function approvalLines(m: Message): string[] {
  const d = m.deployment!;
  return [
    summary(m),
    `Build #${m.build.number} of ${m.build.branch} (${m.build.commit_sha.slice(0, 7)}), asked for by ${d.requested_by}.`,
    `Approvers: ${d.approvers.length > 0 ? d.approvers.join(", ") : "a maintainer of the project"}.`,
    `Approve or reject it on the build's page: ${d.url}`,
  ];
}

/**
 * The address policy (lib/net/address-policy.ts) on the hosts a create or update names: a Slack or
 * webhook URL, an SMTP host. A refused one is 400 invalid_request on its field when it is saved,
 * as for an integration's api_url, rather than a delivery that fails later.
 */
export async function refuseChannelHosts(
  deps: Pick<AppContext, "config">,
  body: {
    slack?: { url?: string | undefined } | undefined;
    webhook?: { url?: string | undefined } | undefined;
    email?: { host?: string | undefined } | undefined;
  },
): Promise<void> {
  const allow = deps.config.integrations.allowLinkLocal;
  if (body.slack?.url !== undefined) await refuseSavedHost("body.slack.url", new URL(body.slack.url).hostname, allow);
  if (body.webhook?.url !== undefined) await refuseSavedHost("body.webhook.url", new URL(body.webhook.url).hostname, allow);
  if (body.email?.host !== undefined) await refuseSavedHost("body.email.host", body.email.host, allow);
}

/** The address policy again at delivery (it was checked when the URL was saved): a name can resolve elsewhere since. */
async function checkHost(deps: Pick<AppContext, "config">, hostname: string): Promise<void> {
  const refusal = await hostRefusal(hostname, deps.config.integrations.allowLinkLocal);
  if (refusal) throw new Error(`${hostname} is refused: ${refusal}`);
}

async function messageFor(
  db: Executor,
  deliveryId: string,
  event: NotificationEvent,
  buildId: string,
  deploymentId: string,
  baseUrl: string,
): Promise<Message | null> {
  const row = await one(
    db,
    `SELECT b.*, p.name AS project_name, r.full_name AS repository, pl.name AS pipeline_name FROM builds b
     JOIN projects p ON p.id = b.project_id JOIN repositories r ON r.id = p.repository_id JOIN pipelines pl ON pl.id = b.pipeline_id WHERE b.id = +?`,
    [buildId],
  );
  if (!row) return null;
  const tests = await summaryOf(db, buildId);
  let deployment: Message["deployment"];
  if (event === "approval_requested") {
    const d = await one(db, "SELECT * FROM deployments WHERE id = ?", [deploymentId]);
    if (!d) return null;
    deployment = {
      id: deploymentId,
      publisher: str(d, "publisher_name"),
      environment: str(d, "environment_name"),
      target: str(d, "target"),
      requested_by: str(d, "requested_by_email"),
      // The environments' module (and the publishers' schemas) loads with the first approval to
      // announce, not with the first pass of an idle daemon (docs/benchmarks.md, "idle RSS").
      approvers: await (await import("../publishing/environments.ts")).approverEmails(db, str(d, "project_id"), strOrNull(d, "environment_id")),
      url: `${baseUrl}/projects/${str(row, "project_id")}/builds/${buildId}`,
    };
  }
  return {
    event,
    delivery_id: deliveryId,
    project: { id: str(row, "project_id"), name: str(row, "project_name"), repository: str(row, "repository") },
    pipeline: { id: str(row, "pipeline_id"), name: str(row, "pipeline_name") },
    build: {
      id: buildId,
      number: num(row, "build_number"),
      status: str(row, "status"),
      branch: str(row, "branch"),
      commit_sha: str(row, "commit_sha"),
      trigger_type: str(row, "trigger_event") === "schedule" ? "schedule" : str(row, "trigger_type"),
      failure_reason: strOrNull(row, "failure_reason"),
      finished_at: numOrNull(row, "finished_at"),
      url: `${baseUrl}/v1/builds/${buildId}`,
    },
    tests: tests && {
      summary: tests.text,
      total: tests.total,
      failed: tests.failed + tests.errored,
      url: testsPageUrl(baseUrl, { project_id: str(row, "project_id"), id: buildId }),
      failed_tests: (await failedCases(db, buildId, NAMED_FAILURES)).map((c) => ({
        suite: c.suite,
        name: c.name,
        message: c.message,
        file: c.file,
        line: c.line,
      })),
    },
    ...(deployment ? { deployment } : {}),
  };
}

/**
 * One dispatcher pass: fan the outbox out, then send up to `limit` due deliveries concurrently.
 * A delivery is claimed with a conditional UPDATE (its next attempt moved past the send timeout),
 * so two processes never send it at once; a process that dies mid-send leaves it to be retried.
 */
export async function dispatchNotifications(
  ctx: Pick<AppContext, "db" | "clock" | "secrets" | "config" | "log">,
  baseUrl: string,
  limit = 20,
): Promise<{ delivered: number; failed: number }> {
  await fanOut(ctx);
  const now = ctx.clock.now();
  const due = await all(
    ctx.db,
    `SELECT d.*, n.name AS notification_name FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id
     WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at LIMIT +?`,
    [now, limit],
  );
  const outcome = { delivered: 0, failed: 0 };
  await Promise.all(
    due.map(async (row) => {
      const id = str(row, "id");
      const attempts = num(row, "attempts") + 1;
      const claimed = await ctx.db.execute({
        sql: "UPDATE notification_deliveries SET attempts = ?, next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'pending' AND attempts = ?",
        args: [attempts, now + CLAIM_SECONDS, now, id, attempts - 1],
      });
      if (claimed.rowsAffected !== 1) return;
      const notification = await findNotification(ctx.db, str(row, "notification_id"));
      const event = str(row, "event") as NotificationEvent;
      const message = notification ? await messageFor(ctx.db, id, event, str(row, "build_id"), str(row, "deployment_id"), baseUrl) : null;
      if (!notification || !message) return;
      try {
        await send(ctx, notification, await openSecrets(ctx, notification), message);
        const at = ctx.clock.now();
        await ctx.db.execute({
          sql: "UPDATE notification_deliveries SET status = 'delivered', delivered_at = ?, last_error = NULL, updated_at = ? WHERE id = ?",
          args: [at, at, id],
        });
        await resolveIncident(ctx.db, at, "notification", notification.id, "notification_failing");
        outcome.delivered++;
      } catch (error) {
        const reason = (error as Error).name === "TimeoutError" ? `no answer within ${SEND_TIMEOUT_MS / 1000} s` : (error as Error).message;
        const at = ctx.clock.now();
        const giveUp = attempts >= MAX_ATTEMPTS;
        await ctx.db.execute({
          sql: "UPDATE notification_deliveries SET status = ?, next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ?",
          args: [giveUp ? "failed" : "pending", at + backoffSeconds(attempts), reason, at, id],
        });
        ctx.log.warn("notification not delivered", { notification_id: notification.id, delivery_id: id, attempts, error: reason, will_retry: !giveUp });
        outcome.failed++;
        if (attempts >= ATTEMPTS_BEFORE_INCIDENT) {
          await raiseIncident(ctx.db, at, {
            severity: "warning",
            reason: "notification_failing",
            message: `Notification "${notification.name}" cannot be delivered (${attempts} attempts): ${reason}`,
            repair_action:
              "Check the channel's URL or SMTP settings and credentials (Edit it on the project's Notifications tab, or PATCH the notification), and that the receiver accepts Roost's requests.",
            resource_kind: "notification",
            resource_id: notification.id,
            resource_name: notification.name,
          });
        }
      }
    }),
  );
  return outcome;
}
