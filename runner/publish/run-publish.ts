// Running one claimed publish (docs/publishing.md "Where a publish runs"), as one step of its
// build's log (publish:<name>):
//  1. a private directory (0700) for this publish only;
//  2. the environment's secrets the publisher names, written there 0600; every value (and its
//     base64 and line forms, runner/masking.ts) masked in the log, as are tokens the store hands out;
//  3. the files it sends, downloaded from Roost and checked against their recorded SHA-256;
//  4. the store client (google-play.ts, firebase.ts, app-store-connect.ts), whose requests and the
//     store's answers go to the log;
//  5. the directory removed, secrets and all, before the outcome is reported;
//  6. finish: succeeded with the store's answer, or failed with its message.
// A heartbeat renews the lease; when the deployment is no longer running on the daemon's side, or
// the runner stops, the publish is aborted.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunnerApi } from "../client.ts";
import type { RunnerOptions } from "../agent.ts";
import { LogShipper } from "../shipper.ts";
import { maskLine, maskNeedles } from "../masking.ts";
import type { ClaimedPublish, StoreAnswer } from "../../lib/publishing/wire.ts";
import { normalizePublisher, publisherName, PublisherInput, targetOf, type Publisher } from "../../lib/publishing/publishers.ts";
import { PublishFailure, type LocalArtifact, type PublishContext, type PublishSecretFile, type StoreClient } from "./context.ts";
import { publishEndpointsFrom, testOverridesSet, type PublishEndpoints } from "./endpoints.ts";
import { downloadArtifact } from "./download.ts";
import { resolveNotes } from "./notes.ts";
import { StoreRefusal } from "./http.ts";
import { publishGooglePlay } from "./google-play.ts";
import { publishFirebase } from "./firebase.ts";
import { publishAppStoreConnect } from "./app-store-connect.ts";

const CLIENTS: Record<Publisher["type"], StoreClient | null> = {
  google_play: publishGooglePlay,
  firebase_app_distribution: publishFirebase,
  app_store_connect: publishAppStoreConnect,
  // Made by the daemon itself, with the host's credentials (lib/publishing/host-release.ts).
  host_release: null,
};

export async function runPublish(api: RunnerApi, claimed: ClaimedPublish, o: Pick<RunnerOptions, "stop" | "log" | "publishEndpoints">): Promise<void> {
  if (o.stop.aborted) {
    await api.releasePublish(claimed.deployment_id).catch(() => {});
    return;
  }
  const abort = new AbortController();
  const onStop = () => abort.abort();
  o.stop.addEventListener("abort", onStop, { once: true });
  const needles: string[] = [];
  const shipper = new LogShipper(
    api,
    claimed.deployment_id,
    (status) => status !== "running" && abort.abort(),
    (first, lines) => api.appendPublishLogs(claimed.deployment_id, first, lines),
  );
  const log = (text: string) => shipper.add({ step: claimed.step, stream: "stdout", text: maskLine(text, needles) });
  const beat = setInterval(() => {
    void api.publishHeartbeat(claimed.deployment_id).then(
      (a) => a.ok && a.body.status !== "running" && abort.abort(),
      () => {},
    );
  }, claimed.heartbeat_seconds * 1000);
  const dir = mkdtempSync(join(tmpdir(), "roost-publish-"));
  chmodSync(dir, 0o700);
  let outcome: { status: "succeeded"; answer: StoreAnswer } | { status: "failed"; reason: string };
  try {
    outcome = {
      status: "succeeded",
      answer: await publish(api, claimed, o.publishEndpoints ?? publishEndpointsFrom(process.env), dir, abort.signal, log, needles),
    };
  } catch (error) {
    const reason =
      error instanceof PublishFailure
        ? error.message
        : error instanceof StoreRefusal
          ? `the store refused: ${error.message}`
          : abort.signal.aborted
            ? "the publish was stopped (the runner is stopping, or the deployment ended)"
            : `the publish failed: ${(error as Error).message}`;
    log(`[roost] ${reason}`);
    outcome = { status: "failed", reason: maskLine(reason, needles) };
  } finally {
    // The secrets and the downloaded files go before the outcome is reported.
    rmSync(dir, { recursive: true, force: true });
  }
  log(`[roost] this publish's secrets and files were removed from the runner`);
  try {
    await finish(api, claimed, shipper, outcome);
    o.log("publish done", { deployment_id: claimed.deployment_id, build_id: claimed.build.id, status: outcome.status });
  } finally {
    clearInterval(beat);
    shipper.stop();
    o.stop.removeEventListener("abort", onStop);
  }
}

async function publish(
  api: RunnerApi,
  claimed: ClaimedPublish,
  endpoints: PublishEndpoints,
  dir: string,
  signal: AbortSignal,
  log: (text: string) => void,
  needles: string[],
): Promise<StoreAnswer> {
  const parsed = PublisherInput.safeParse(claimed.publisher);
  if (!parsed.success)
    throw new PublishFailure(
      `this runner does not understand the publisher's configuration: ${parsed.error.issues[0]?.message ?? "invalid"}; upgrade the runner`,
    );
  const publisher = normalizePublisher(parsed.data);
  const client = CLIENTS[publisher.type];
  if (!client) throw new PublishFailure(`a ${publisher.type} publish is made by Roost itself, not by a runner`);
  log(
    `[roost] publish ${publisherName(publisher)} (${publisher.type}) of build #${claimed.build.build_number} (${claimed.build.commit_sha.slice(0, 12)}) to environment ${claimed.environment}: ${targetOf(publisher)}`,
  );
  const overrides = testOverridesSet(process.env);
  if (overrides.length)
    log(`[roost] WARNING: test-only store addresses are set on this runner (${overrides.join(", ")}): this publish goes to them, not to the stores`);
  if (claimed.missing_secrets.length) {
    throw new PublishFailure(
      `environment ${claimed.environment} has no secret ${claimed.missing_secrets.join(", ")} (or does not give it to this build's ref): set it with PUT /v1/projects/{project_id}/environments/${claimed.environment}/secrets/${claimed.missing_secrets[0]}`,
    );
  }
  // 2. Secrets: masked first, then written.
  const secretFiles = new Map<string, PublishSecretFile>();
  const mask = (value: string, bytes?: Buffer) => {
    for (const needle of maskNeedles([value], bytes ? [bytes] : [])) if (!needles.includes(needle)) needles.push(needle);
    needles.sort((a, b) => b.length - a.length);
  };
  for (const s of claimed.secrets) {
    const bytes = s.file ? Buffer.from(s.value, "base64") : Buffer.from(s.value, "utf8");
    mask(s.file ? bytes.toString("utf8") : s.value, s.file ? bytes : undefined);
    const path = join(dir, `secret-${s.key}`);
    writeFileSync(path, bytes, { mode: 0o600, flag: "wx" });
    secretFiles.set(s.key, { key: s.key, text: bytes.toString("utf8"), path });
  }
  if (claimed.secrets.length)
    log(
      `[roost] secrets of environment ${claimed.environment} written for this publish (0600, removed when it ends): ${claimed.secrets.map((s) => s.key).join(", ")}`,
    );
  // 3. The files, checked.
  const artifacts: LocalArtifact[] = [];
  for (const a of claimed.artifacts) {
    const local = await downloadArtifact(api, claimed, a, dir, signal);
    log(`[roost] ${a.path} (${a.size} bytes) downloaded; SHA-256 ${a.sha256} as the build recorded`);
    artifacts.push(local);
  }
  const ctx: PublishContext = {
    claimed,
    publisher,
    artifacts,
    notes: resolveNotes(publisher, claimed.release_notes, artifacts),
    endpoints,
    dir,
    signal,
    secret(key) {
      const s = secretFiles.get(key);
      if (!s) throw new PublishFailure(`environment ${claimed.environment} has no secret ${key}`);
      return s;
    },
    log,
    mask: (value) => mask(value),
  };
  // 4. The store.
  const answer = await client(ctx);
  log(`[roost] ${answer.summary}`);
  return answer;
}

async function finish(
  api: RunnerApi,
  claimed: ClaimedPublish,
  shipper: LogShipper,
  outcome: { status: "succeeded"; answer: StoreAnswer } | { status: "failed"; reason: string },
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await shipper.drain();
    const body =
      outcome.status === "succeeded"
        ? { status: "succeeded" as const, store_answer: outcome.answer, line_count: shipper.total }
        : { status: "failed" as const, failure_reason: outcome.reason.slice(0, 1000), line_count: shipper.total };
    const answer = await api.finishPublish(claimed.deployment_id, body);
    if (answer.ok || answer.code !== "log_incomplete") return;
    shipper.rewind(Number(answer.headers.get("x-roost-log-next-line") ?? 0));
  }
}
